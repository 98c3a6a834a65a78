#!/bin/sh
# cupti_check.sh SIM PLUGIN FAKE CHECK NCS WORKDIR "ENV" "CHECK-ARGS" SIM-ARGS...
#
# One GPU-truth case (tests/cupti.cmake): nccl-sim drives the plugin with NCCLSCOPE_CUPTI=on
# under the fake CUPTI (FAKE) and writes what really ran; ncs-cupti-check compares the trace with
# it. ENV: "VAR=value ..." for the run (FAKECUPTI=... injects CUPTI's failures). SIM-ARGS may
# hold --no-cupti: nccl-sim does not load the fake (the plugin must then find no libcupti).
set -u
SIM=$1 PLUGIN=$2 FAKE=$3 CHECK=$4 NCS=$5 W=$6 ENVS=$7 CARGS=$8
shift 8
fail() { echo "cupti case: FAILED: $*"; exit 1; }
rm -rf "$W" && mkdir -p "$W"
use_fake=1 fault=0 other=0
for a in "$@"; do
  case $a in
  --no-cupti) use_fake=0 ;;
  --fault) fault=1 ;;
  --cupti-other) other=1 ;;
  esac
done
args=""
for a in "$@"; do [ "$a" = --no-cupti ] || args="$args $a"; done
[ $use_fake = 1 ] && args="$args --cupti $FAKE"
: >"$W/truth"
# shellcheck disable=SC2086
env NCCLSCOPE_CUPTI=on NCCLSCOPE_DIR="$W/trace" $ENVS "$SIM" --plugin "$PLUGIN" --gpu-truth "$W/truth" \
  $args >"$W/sim.out" 2>"$W/sim.err"
rc=$?
if [ $rc != 0 ] && ! { [ $fault = 1 ] && [ $rc = 3 ]; }; then
  cat "$W/sim.err"; fail "nccl-sim exited with $rc"
fi
grep '^nccl-sim-gpu:' "$W/sim.out"
if [ $other = 1 ]; then
  grep -q 'other=39 holder=CUPTI_for_ncclscope' "$W/sim.out" ||
    fail "a second CUPTI client was not refused in ncclscope's name"
fi
"$NCS" dump "$W/trace" >"$W/dump.txt" || fail "ncclscope dump of the trace"
"$NCS" dump --stats "$W/trace" >"$W/stats.txt" || fail "ncclscope dump --stats of the trace"
# shellcheck disable=SC2086
"$CHECK" "$W/trace" "$W/truth" $CARGS
