#!/bin/sh
# gpu-ranges.sh - the GPU proof of per-range hardware metrics (issue 17; docs/testing.md "User
# ranges"): builds examples/range_dram.cu with nvcc against a built tree, runs it under the plugin
# with CUPTI's range profiler, and prints the DRAM bytes measured per range against the known ones,
# then the cost of a range with metrics off (ncs-range-cost) on this host.
#
#   scripts/gpu-ranges.sh [BUILD-DIR] [OUT-DIR]        (default build, /tmp/ncclscope-ranges)
#
# Needs nvcc and a CUPTI 12.6+ (CUDA 13's works); NCCLSCOPE_CUPTI_LIB may name the libcupti. The
# counters need the right to profile (NVreg_RestrictProfilingToAdminUsers=0, or root).
set -eu
B=${1:-build}
O=${2:-/tmp/ncclscope-ranges}
rm -rf "$O" && mkdir -p "$O"
command -v nvcc >/dev/null || { echo "gpu-ranges: nvcc not found"; exit 1; }
nvcc -O2 -std=c++17 -I src -o "$O/range_dram" examples/range_dram.cu "$B/libncs_trace.a" "$B/libncs_format.a" -ldl
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader || true
"$O/range_dram" "$PWD/$B/libnccl-profiler-ncclscope.so" "$O/trace"
"$B/ncclscope" dump "$O/trace" | grep -E "RANGE_STATE .*final|METRICS" | head -20
echo "--- cost per push/pop, metrics off"
"$B/ncs-range-cost" none "$O/cost-none" 200000 15
"$B/ncs-range-cost" "$PWD/$B/libnccl-profiler-ncclscope.so" "$O/cost" 200000 15
