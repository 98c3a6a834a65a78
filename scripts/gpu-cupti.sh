#!/usr/bin/env bash
# gpu-cupti.sh - GPU truth on real GPUs (docs/gpu-truth.md, "Proof on a GPU"). One GPU is
# enough; with two or more, NCCL's own kernels are joined to their AllReduces too. A few minutes.
#
#   1. examples/ex_cupti under the plugin with NCCLSCOPE_CUPTI=on: kernels on several streams and
#      a replayed graph; ncs-cupti-check --counts: every kernel and every replay is in the trace
#      with its name, its duration at least what it spins, the NCCL ones joined, nothing lost;
#   2. the cost of a kernel launch (and of a small AllReduce with two or more GPUs) with no plugin,
#      the plugin with CUPTI off, and with CUPTI on (ex_cupti --bench, the median of REPS);
#   3. PyTorch, when importable: torch.profiler and ncclscope in one process, in both orders, and
#      what each got (scripts/gpu-cupti-torch.py).
# Everything is written to OUT (logs, traces, dump --stats, the check, the tables); the last
# lines of each part are printed.
#
# Usage: OUT=dir [ITERS=50] [REPLAYS=20] [BENCH=20000] [REPS=5] scripts/gpu-cupti.sh
set -uo pipefail
OUT=${OUT:-./gpu-cupti-out}; mkdir -p "$OUT" || exit 1; OUT=$(cd "$OUT" && pwd)
ITERS=${ITERS:-50} REPLAYS=${REPLAYS:-20} BENCH=${BENCH:-20000} REPS=${REPS:-5}
cd "$(dirname "$0")/.." || exit 1
GPU_TAG=gpu-cupti
# shellcheck source=gpu-common.sh
. scripts/gpu-common.sh
gpu_prepare build-gpu "$OUT/build.log" || exit 1
EX=build-gpu/examples/ex_cupti CHECK=build-gpu/ncs-cupti-check
[ -x "$EX" ] || { gpu_say "ex_cupti was not built (see $OUT/build.log)"; exit 1; }
rc=0

# 1. every kernel and every replay
T=$OUT/trace
rm -rf "$T"
gpu_say "1. ex_cupti --iters $ITERS --replays $REPLAYS under the plugin with CUPTI on"
NCCL_PROFILER_PLUGIN=$PLUGIN NCCLSCOPE_DIR=$T NCCLSCOPE_CUPTI=on NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,ENV \
  "$EX" --iters "$ITERS" --replays "$REPLAYS" --expect "$OUT/expect.txt" >"$OUT/ex_cupti.log" 2>&1 || {
  rc=1; tail -5 "$OUT/ex_cupti.log"; }
grep -i 'ncclscope.*cupti' "$OUT/ex_cupti.log" | head -3
"$NCS" dump --stats "$T" >"$OUT/stats.txt" 2>&1
"$NCS" dump "$T" >"$OUT/dump.txt" 2>&1
grep -E 'CUPTI|kernels \(CUPTI\)|GPU times' "$OUT/stats.txt" | head -6
"$CHECK" --counts "$T" "$OUT/expect.txt" >"$OUT/check.txt" 2>&1 || rc=1
cat "$OUT/check.txt" | tail -12

# 2. the cost of a launch, CUPTI off and on
gpu_say "2. launch cost: $BENCH launches, median of $REPS"
: >"$OUT/bench.txt"
for rep in $(seq "$REPS"); do
  for mode in none off on; do
    if [ $mode = none ]; then
      env -u NCCL_PROFILER_PLUGIN "$EX" --bench "$BENCH" 2>>"$OUT/bench.err"
    else
      NCCL_PROFILER_PLUGIN=$PLUGIN NCCLSCOPE_DIR=$OUT/bench-trace-$mode NCCLSCOPE_CUPTI=$mode \
        "$EX" --bench "$BENCH" 2>>"$OUT/bench.err"
    fi | sed -n "s/^bench /bench mode=$mode /p" >>"$OUT/bench.txt"
  done
done
awk '{for (i = 2; i <= NF; i++) {split($i, kv, "="); v[kv[1]] = kv[2]}
      k[v["mode"]] = k[v["mode"]] " " v["ns_per_kernel_launch"]; a[v["mode"]] = a[v["mode"]] " " v["ns_per_allreduce"]}
     function med(s,   n, x, i, j, t) { n = split(s, x, " "); for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++)
       if (x[j] + 0 < x[i] + 0) { t = x[i]; x[i] = x[j]; x[j] = t }; return n ? x[int((n + 1) / 2)] : "-" }
     END {printf "%-28s %12s %14s\n", "", "kernel launch", "AllReduce (1 float)";
          split("none off on", m, " ");
          for (i = 1; i <= 3; i++) printf "%-28s %10s ns %12s ns\n",
            (m[i] == "none" ? "no plugin" : "ncclscope, CUPTI " m[i]), med(k[m[i]]), med(a[m[i]])}' \
  "$OUT/bench.txt" | tee "$OUT/bench-table.txt"

# 3. PyTorch's profiler and ncclscope in one process
gpu_say "3. torch.profiler and ncclscope"
if python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
  python3 scripts/gpu-cupti-torch.py --plugin "$PLUGIN" --ncclscope "$NCS" --out "$OUT/torch" \
    >"$OUT/torch.txt" 2>&1 || rc=1
  tail -8 "$OUT/torch.txt"
else
  echo "PyTorch with CUDA is not importable here: part 3 skipped" | tee "$OUT/torch.txt"
fi
gpu_say "done: $([ $rc = 0 ] && echo ok || echo FAILED); everything is in $OUT"
exit $rc
