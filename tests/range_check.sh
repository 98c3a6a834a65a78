#!/bin/sh
# range_check.sh SIM PLUGIN FAKEDIR CHECK NCS WORKDIR "ENV" "CHECK-ARGS" SIM-ARGS...
#
# One user-range case (tests/ranges.cmake): nccl-sim runs its iterations inside ranges (--ranges,
# the plugin's range API) and writes what happened inside each (--range-truth); ncs-range-check
# compares the trace with it. SIM-ARGS may hold --fake: nccl-sim then plays the CUDA driver under
# the fake CUPTI and the fake libcuda of FAKEDIR (kernels, the range profiler); --fake-no-driver:
# the fake CUPTI without a CUDA driver. ENV: "VAR=value
# ..." for the run (NCCLSCOPE_RANGE_METRICS=..., FAKECUPTI=...). In CHECK-ARGS, @LOG@ is nccl-sim's
# stderr (with --verbose, the plugin's log). --record=OPTION in SIM-ARGS (any number) runs nccl-sim
# (and --record alone) under `ncclscope record -o WORKDIR/trace OPTION...` instead of setting
# NCCLSCOPE_DIR itself.
set -u
SIM=$1 PLUGIN=$2 FAKE=$3 CHECK=$4 NCS=$5 W=$6 ENVS=$7 CARGS=$8
shift 8
fail() { echo "range case: FAILED: $*"; exit 1; }
rm -rf "$W" && mkdir -p "$W"
args="" rec="" ropts=""
for a in "$@"; do
  case $a in
  --record) rec=1 ;;
  --record=*) rec=1 ropts="$ropts ${a#--record=}" ;;
  --fake) args="$args --cupti $FAKE/libcupti.so.13 --cuda $FAKE/libcuda.so.1" ;;
  --fake-no-driver) args="$args --cupti $FAKE/libcupti.so.13" ;;
  *) args="$args $a" ;;
  esac
done
: >"$W/truth"
if [ -n "$rec" ]; then
  # shellcheck disable=SC2086
  env $ENVS "$NCS" record -o "$W/trace" $ropts -- "$SIM" --plugin "$PLUGIN" --ranges \
    --range-truth "$W/truth" $args >"$W/sim.out" 2>"$W/sim.err" ||
    { cat "$W/sim.err"; fail "ncclscope record of nccl-sim exited with $?"; }
  grep -q "trace written to" "$W/sim.err" || { cat "$W/sim.err"; fail "record wrote no trace"; }
else
  # shellcheck disable=SC2086
  env NCCLSCOPE_DIR="$W/trace" $ENVS "$SIM" --plugin "$PLUGIN" --ranges --range-truth "$W/truth" $args \
    >"$W/sim.out" 2>"$W/sim.err" || { cat "$W/sim.err"; fail "nccl-sim exited with $?"; }
fi
"$NCS" dump "$W/trace" >"$W/dump.txt" || fail "ncclscope dump of the trace"
"$NCS" dump --stats "$W/trace" >"$W/stats.txt" || fail "ncclscope dump --stats of the trace"
CARGS=$(echo "$CARGS" | sed "s|@LOG@|$W/sim.err|g")
# shellcheck disable=SC2086
"$CHECK" "$W/trace" "$W/truth" $CARGS
