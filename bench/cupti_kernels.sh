#!/bin/sh
# cupti_kernels.sh [BUILD_DIR] - what recording every kernel costs the trace and the writer
# (docs/benchmarks.md, "CUPTI: every kernel or a summary"). nccl-sim under the fake CUPTI runs
# AllReduces with COMPUTE compute kernels after each (default 50), with NCCLSCOPE_CUPTI_KERNELS=all
# and =nccl; it prints the bytes of GPU chunks per kernel and the writer thread's instructions per
# kernel (callgrind, the writer thread only).
set -eu
B=${1:-build}
COMPUTE=${COMPUTE:-50} ITERS=${ITERS:-400}
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
gpu_bytes() { # the GPU (12) chunks' payload bytes of every file in $1
  python3 - "$1" <<'PY'
import os, struct, sys
tot = 0
for f in os.listdir(sys.argv[1]):
    b = open(os.path.join(sys.argv[1], f), 'rb').read()
    off = 16
    while off + 16 <= len(b):
        magic, typ, flags, ln, crc = struct.unpack_from('<IHHII', b, off)
        if magic != 0x4B4E4843: break
        if typ == 12: tot += 16 + ln
        off += 16 + ln
print(tot)
PY
}
# the writer thread's instructions (callgrind, every object) for one run; the sweep of the writer's
# tracking table runs on a timer, so it is kept small (NCCLSCOPE_TRACK_MAX) to keep the counts
# from depending on how long valgrind takes
writer_ir() { # mode out-prefix
  NCCLSCOPE_CUPTI=$1 NCCLSCOPE_CUPTI_KERNELS=${2:-all} NCCLSCOPE_TRACK_MAX=64 NCCLSCOPE_DIR="$W/t-$1-${2:-all}" \
    valgrind --tool=callgrind --separate-threads=yes --callgrind-out-file="$W/cg-$1-${2:-all}" \
    "$B/nccl-sim" --plugin "$B/libnccl-profiler-ncclscope.so" --cupti "$B/fakecupti/libcupti.so.13" \
    --scenario allreduce --ranks 1 --iters "$ITERS" --compute "$COMPUTE" >"$W/out-$1-${2:-all}" 2>&1
  for f in "$W"/cg-"$1"-"${2:-all}"-*; do
    callgrind_annotate --threshold=100 "$f" >"$f.txt" 2>/dev/null || continue
    grep -q 'writer_main' "$f.txt" || continue
    sed -n 's/^ *\([0-9,]*\) .*PROGRAM TOTALS.*/\1/p' "$f.txt" | tr -d ,
    return
  done
}
base=$(writer_ir off)
for mode in all nccl; do
  ir=$(writer_ir on $mode)
  kernels=$(sed -n 's/^nccl-sim-gpu: nccl=\([0-9]*\) replays=[0-9]* compute=\([0-9]*\).*/\1 \2/p' "$W/out-on-$mode" | awk '{print $1 + $2}')
  bytes=$(gpu_bytes "$W/t-on-$mode")
  awk -v m="$mode" -v k="$kernels" -v b="$bytes" -v i="$ir" -v z="$base" 'BEGIN {
    printf "NCCLSCOPE_CUPTI_KERNELS=%s: %d kernels, GPU chunks %d bytes = %.1f bytes per kernel; writer %.0f instructions per kernel over CUPTI off\n",
           m, k, b, b / k, (i - z) / k }'
done
