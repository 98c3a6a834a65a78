#!/bin/sh
# kch_lap_check.sh SIM PLUGIN NCCLSCOPE WORKDIR - NCCL's proxy a lap behind the GPU's KernelCh work
# counter ring (docs/nccl-sim.md "KernelCh work counters", "A proxy a lap behind"). nccl-sim's
# sendrecv on 2 ranks in one process, 64 iterations (about 130 work items on channel 0, so the
# ring of 64 slots wraps twice), no plan waiting for its children (--race 0), ABI v7's profiler
# thread held up 200 ms whenever it takes up KernelCh work (--profiler-lag-us): the host issues
# every operation while the profiler thread sleeps, so slots are overwritten by items 64 later
# before it reads them (what a loaded host does now and then). The reference is the same job in
# which every plan waits for its children (--race 100), so that the host never runs ahead.
# 1. Model time: the model's proxy reads a slot a poll after the GPU wrote it, so no KernelCh is
#    lapped and none is lost: the same KernelCh starts as the run without the lag, kch_lapped=0,
#    kch_stuck=0, and every operation of the trace has its KernelCh (no completion without
#    children in `ncclscope dump --stats`).
# 2. Live time: NCCL's proxy reads the slot late and reports the later item's times: every
#    KernelCh still starts (as many as without the lag), the lapped ones are counted
#    (kch_lapped > 0), nothing is stuck.
set -u
SIM=$1 PLUGIN=$2 NS=$3 W=$4
rm -rf "$W" && mkdir -p "$W"
fail() { echo "kch lap check: FAILED: $*"; exit 1; }
unset NCCLSCOPE_MODE NCCLSCOPE_EVENTS NCCLSCOPE_SAMPLE NCCLSCOPE_KERNEL_SAMPLE NCCLSCOPE_CAPTURE
# run NAME ARGS: records the job into $W/NAME, nccl-sim's output in $W/NAME.out
run() {
  n=$1; shift
  NCCLSCOPE_DIR="$W/$n" "$SIM" --plugin "$PLUGIN" --scenario sendrecv --ranks 2 --iters 64 "$@" >"$W/$n.out" 2>&1 || fail "nccl-sim ($n): $(tail -2 "$W/$n.out")"
}
# key NAME KEY: a number of the "nccl-sim:" summary line
key() { sed -n "s/^nccl-sim: .* $2=\\([0-9]*\\) .*/\\1/p" "$W/$1.out"; }
# kch NAME: nccl-sim's KernelCh starts
kch() { sed -n 's/^nccl-sim-types: .* KernelCh=\([0-9]*\),.*/\1/p' "$W/$1.out"; }

run model --clock model --couple on --race 100
run model_lag --clock model --couple on --race 0 --profiler-lag-us 200000
b=$(kch model) l=$(kch model_lag)
[ "$l" = "$b" ] || fail "model time: $l KernelCh starts with the profiler thread behind, $b without"
for n in model model_lag; do
  for k in kch_lapped kch_stuck kch_foreign; do
    [ "$(key $n $k)" = 0 ] || fail "$n: $k=$(key $n $k)"
  done
  "$NS" dump --stats "$W/$n" >"$W/$n.stats" 2>&1 || fail "ncclscope dump ($n)"
  grep -q "completions" "$W/$n.stats" || fail "$n: no completions in ncclscope dump --stats"
  grep "completions" "$W/$n.stats" | grep -qv "no children 0," &&
    fail "$n: operations without their KernelCh: $(grep completions "$W/$n.stats" | tr '\n' ' ')"
done

run live --race 100
run live_lag --race 0 --profiler-lag-us 200000
b=$(kch live) l=$(kch live_lag)
[ "$l" = "$b" ] || fail "live time: $l KernelCh starts with the profiler thread behind, $b without"
[ "$(key live_lag kch_lapped)" -gt 0 ] || fail "live time: kch_lapped=0 with the profiler thread 200 ms behind"
[ "$(key live_lag kch_stuck)" = 0 ] || fail "live time: kch_stuck=$(key live_lag kch_stuck)"
echo "kch lap check: ok (KernelCh $b; lapped live $(key live_lag kch_lapped))"
