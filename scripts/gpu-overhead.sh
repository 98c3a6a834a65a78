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

# ---- which NCCL, environment, build: scripts/gpu-common.sh (as gpu-run.sh); if the CMake build
# fails (a missing build dependency of another part), the four programs the benchmark needs are
# compiled directly
GPU_TAG=gpu-overhead
. scripts/gpu-common.sh
gpu_setup
if command -v nvidia-smi >/dev/null; then
  nvidia-smi --query-gpu=index,name,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv \
    >"$OUT/gpu.txt" 2>&1
  sed 's/^/gpu-overhead: /' "$OUT/gpu.txt"
fi
if gpu_build "$BUILD" "$OUT/build.log" && [ -x "$BUILD/ncs_perf" ]; then
  say "built with CMake"
else
  say "CMake build failed or made no ncs_perf; compiling the benchmark's parts directly"
  mkdir -p "$BUILD"
  cudadir=${CUDAToolkit_ROOT:-/usr/local/cuda}
  ninc=${NCCL_HOME:+$NCCL_HOME/include} nlib=
  for l in ${NCCL_HOME:+"$NCCL_HOME/lib" "$NCCL_HOME/lib64"} /usr/lib/x86_64-linux-gnu "$cudadir/lib64" "$cudadir/lib"; do
    { [ -e "$l/libnccl.so" ] || [ -e "$l/libnccl.so.2" ]; } && { nlib=$l; break; }
  done
  lnccl=-lnccl
  [ -n "$nlib" ] && [ ! -e "$nlib/libnccl.so" ] && lnccl=-l:libnccl.so.2
  ver=$(sed -n 's/^project(ncclscope VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt)
  cflags=(-std=c11 -O2 -g -D_GNU_SOURCE -DNCS_VERSION="\"${ver:-0}\"" -Isrc -Wall -Wextra -Wno-missing-field-initializers)
  {
    echo "== direct build (NCCL lib: ${nlib:-not found}, CUDA: $cudadir)"
    cc "${cflags[@]}" -fPIC -shared -fvisibility=hidden -o "$BUILD/libnccl-profiler-ncclscope.so" \
      src/core/*.c src/record/*.c src/plugin/*.c src/trace/format.c src/trace/encode.c -lpthread -ldl &&
      cc "${cflags[@]}" -fPIC -shared -fvisibility=hidden -o "$BUILD/libnccl-profiler-empty.so" \
        bench/empty_plugin.c src/trace/format.c -lpthread &&
      cc "${cflags[@]}" ${ninc:+-isystem "$ninc"} -isystem "$cudadir/include" -o "$BUILD/ncs_perf" bench/ncs_perf.c \
        ${nlib:+-L"$nlib" -Wl,-rpath,"$nlib"} -L"$cudadir/lib64" -L"$cudadir/lib" "$lnccl" -lcudart
  } >>"$OUT/build.log" 2>&1 || { tail -20 "$OUT/build.log"; say "build FAILED"; exit 1; }
fi
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
