#!/usr/bin/env bash
# Build ncs_perf and the plugins on a GPU machine and run the overhead benchmark
# (bench/overhead.sh) over NVLink and over the socket transport, within a time budget. See
# docs/benchmarks.md ("GPU overhead").
#
# Usage: scripts/gpu-overhead.sh [extra bench/overhead.sh options...]
#
# Environment (all optional):
#   OUT          output directory (default ./gpu-overhead-out)
#   NCCL_HOME    the NCCL to build and run with; default: Python's nvidia.nccl package if
#                importable, else the system NCCL (scripts/gpu-common.sh, as gpu-run.sh)
#   BUDGET_S     seconds for the whole script, build included (default 450); the benchmark
#                stops cleanly before a run that would end later and prints what it has
#   TRANSPORTS   default "nvlink,socket" (interleaved, one repetition of each in turn)
#   OPS          default "allreduce,sendrecv"
#   REPS         default 8 (the budget usually ends it sooner on 2 GPUs)
#   MIN MAX FACTOR ITERS   the sweep (default 8, 32M, 4, 50)
#   GRAPH PROCS  off|on|both (default off, off)
#   BUILD_DIR    the build directory (default build-gpu, as scripts/gpu-run.sh)
#   PACK=1       pack logs/ into $OUT/overhead-logs.tgz (default: 1 when OUT was given)
#
# Output ($OUT): summary.md (the tables), summary.tsv, results.tsv, runs.tsv, build.log,
# gpu.txt (nvidia-smi), logs/ or overhead-logs.tgz.
set -uo pipefail
START=$SECONDS
OUT_GIVEN=0
[ -n "${OUT:-}" ] && OUT_GIVEN=1
OUT=${OUT:-./gpu-overhead-out}
PACK=${PACK:-$OUT_GIVEN}
BUDGET_S=${BUDGET_S:-450}
BUILD=${BUILD_DIR:-build-gpu} # shared with scripts/gpu-run.sh
mkdir -p "$OUT" || { echo "gpu-overhead: cannot create $OUT" >&2; exit 1; }
OUT=$(cd "$OUT" && pwd)
cd "$(dirname "$0")/.." || exit 1
say() { echo "gpu-overhead: $*"; }

# ---- which NCCL, environment, build: scripts/gpu-common.sh (as gpu-run.sh)
GPU_TAG=gpu-overhead
. scripts/gpu-common.sh
gpu_setup
if command -v nvidia-smi >/dev/null; then
  nvidia-smi --query-gpu=index,name,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv \
    >"$OUT/gpu.txt" 2>&1
  sed 's/^/gpu-overhead: /' "$OUT/gpu.txt"
fi
gpu_build "$BUILD" "$OUT/build.log" || exit 1
[ -x "$BUILD/ncs_perf" ] || { say "the build made no $BUILD/ncs_perf (are CUDA and NCCL found? see build.log)"; exit 1; }
say "build done after $((SECONDS - START))s"

# ---- the benchmark
left=$((BUDGET_S - (SECONDS - START) - 15)) # 15 s for the tables and packing
[ "$left" -gt 30 ] || { say "no time left for the benchmark (BUDGET_S=$BUDGET_S)"; exit 1; }
args=(-b "$BUILD" -o "$OUT" --transport "${TRANSPORTS:-nvlink,socket}" --ops "${OPS:-allreduce,sendrecv}"
      -r "${REPS:-8}" --min "${MIN:-8}" --max "${MAX:-32M}" --factor "${FACTOR:-4}" --iters "${ITERS:-50}"
      --graph "${GRAPH:-off}" --procs "${PROCS:-off}" --budget "$left" --run-timeout 120)
say "bench/overhead.sh ${args[*]} $*"
bench/overhead.sh "${args[@]}" "$@"
rc=$?
if [ "$PACK" = 1 ] && [ -d "$OUT/logs" ]; then
  (cd "$OUT" && tar czf overhead-logs.tgz logs && rm -rf logs traces) && say "logs packed into $OUT/overhead-logs.tgz"
fi
say "done in $((SECONDS - START))s, exit $rc"
exit "$rc"
