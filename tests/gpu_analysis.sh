#!/bin/sh
# gpu_analysis.sh SIM PLUGIN FAKE NCS CHECK LINT WORKDIR MODE "ENV" SIM-ARGS...
# One analysis case of CUPTI's kernels (tests/cupti.cmake): nccl-sim under the plugin and the
# fake CUPTI writes what really ran; report --json and the SQLite export are compared with it by
# tests/gpu_analysis_check.py (MODE full, off or lost), with the Chrome JSON timeline; the
# Perfetto timeline goes through ncs-pftrace-lint (LINT).
set -u
SIM=$1 PLUGIN=$2 FAKE=$3 NCS=$4 CHECK=$5 LINT=$6 W=$7 MODE=$8 ENVS=$9
shift 9
rm -rf "$W" && mkdir -p "$W" && : >"$W/truth"
# shellcheck disable=SC2086
env NCCLSCOPE_CUPTI=on NCCLSCOPE_DIR="$W/trace" $ENVS "$SIM" --plugin "$PLUGIN" --cupti "$FAKE" \
  --gpu-truth "$W/truth" "$@" >"$W/sim.out" 2>"$W/sim.err" || { cat "$W/sim.err"; echo "FAILED: nccl-sim"; exit 1; }
"$NCS" report --json "$W/trace" >"$W/report.json" || { echo "FAILED: report --json"; exit 1; }
"$NCS" report "$W/trace" >"$W/report.txt" || { echo "FAILED: report"; exit 1; }
"$NCS" export "$W/trace" --format sqlite -o "$W/trace.db" >/dev/null 2>&1 || { echo "FAILED: export sqlite"; exit 1; }
"$NCS" export "$W/trace" --format chrome -o "$W/trace.json" >/dev/null 2>&1 || { echo "FAILED: export chrome"; exit 1; }
"$NCS" export "$W/trace" --format perfetto -o "$W/trace.pftrace" >/dev/null 2>&1 || { echo "FAILED: export perfetto"; exit 1; }
"$LINT" "$W/trace.pftrace" || { echo "FAILED: the Perfetto timeline does not lint"; exit 1; }
"$NCS" report --html "$W/report.html" "$W/trace" >/dev/null || { echo "FAILED: report --html"; exit 1; }
case $MODE in # the HTML page says the same
full) want='id="gpu-table"' ;;
off) want='id="gpu-none"' ;;
lost) want='cannot tell: CUPTI dropped' ;;
esac
grep -q "$want" "$W/report.html" || { echo "FAILED: the HTML page lacks $want"; exit 1; }
grep -A12 '^GPU times by source' "$W/report.txt"
python3 "$CHECK" "$MODE" "$W/report.json" "$W/truth" "$W/trace.db" "$W/trace.json"
