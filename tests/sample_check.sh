#!/bin/sh
# sample_check.sh SIM PLUGIN NCCLSCOPE WORKDIR - KernelCh sampling (NCCLSCOPE_KERNEL_SAMPLE,
# docs/config.md): with N=8 and 64 AllReduces per rank, every rank records KernelCh for the same 8
# groups; the other Coll complete at once (no children, none forced or expired), and the report
# counts them as unsampled and takes latency and bandwidth from the 8 sampled instances.
set -u
SIM=$1 PLUGIN=$2 NS=$3 W=$4
rm -rf "$W" && mkdir -p "$W"
fail() { echo "sample check: FAILED: $*"; exit 1; }
unset NCCLSCOPE_MODE NCCLSCOPE_EVENTS NCCLSCOPE_CAPTURE
NCCLSCOPE_KERNEL_SAMPLE=8 NCCLSCOPE_DIR="$W/t" "$SIM" --plugin "$PLUGIN" --scenario allreduce \
  --ranks 2 --procs 2 --iters 64 >"$W/sim.txt" 2>&1 || fail "nccl-sim: $(tail -2 "$W/sim.txt")"
"$NS" dump --stats "$W/t" >"$W/stats.txt" 2>&1 || fail "dump --stats"
grep -q "completions 128 (kernel 16, proxy 0, revised 0, forced 0, no children 112" "$W/stats.txt" ||
  fail "completions: $(grep completions "$W/stats.txt" | tail -1)"
exp=$(awk '/^== job/ {j = 1} j && $1 == "KernelCh" {print $6; exit}' "$W/stats.txt")
[ "${exp:-x}" = 0 ] || fail "KernelCh expired: $exp"
# the sampled groups are the same on both ranks: 8 complete instances with GPU times
"$NS" report --json "$W/t" >"$W/r.json" 2>&1 || fail "report"
grep -q '"unsampled":56' "$W/r.json" || fail "unsampled: $(grep -o '"unsampled":[0-9]*' "$W/r.json")"
n=$(grep -o '"count":[0-9]*,"bytes":[0-9]*,"timing":{"kernel_gpu":[0-9]*' "$W/r.json" |
    awk -F'[:,]' '{c += $2; k += $NF} END {print c "/" k}')
[ "$n" = "8/8" ] || fail "bucket instances/kernel-timed: $n"
"$NS" report "$W/t" >"$W/r.txt" 2>&1 || fail "report text"
grep -q "56 instances have no GPU times" "$W/r.txt" || fail "no unsampled line: $(head -4 "$W/r.txt")"
echo "sample check: ok"
