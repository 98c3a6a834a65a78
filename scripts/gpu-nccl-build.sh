#!/usr/bin/env bash
# Build NCCL from a source tree on this machine, for the GPUs it has, into a prefix that
# scripts/gpu-run.sh takes as NCCL_HOME. For running ncclscope against an NCCL other than the one
# PyTorch ships (docs/gpu.md, "Each NCCL generation"). The source is not the project's: bring it
# (e.g. `git archive` of NVIDIA/nccl at the wanted tag, unpacked into ./nccl-src, which git
# ignores), never commit it.
#
# Usage: scripts/gpu-nccl-build.sh SRC PREFIX
#   SRC     an NCCL source tree (Makefile, makefiles/version.mk, src/)
#   PREFIX  where lib/ and include/ go (default ./nccl-build)
# Environment: CUDA_HOME (default /usr/local/cuda); JOBS (default: every core); GENCODE (default:
# the compute capabilities nvidia-smi reports, e.g. -gencode=arch=compute_90,code=sm_90).
# Prints the version built and the time taken. Exit status 0 when lib/libnccl.so exists after it.
set -euo pipefail
SRC=${1:?usage: scripts/gpu-nccl-build.sh SRC [PREFIX]}
PREFIX=${2:-./nccl-build}
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
JOBS=${JOBS:-$(nproc)}
[ -f "$SRC/makefiles/version.mk" ] || { echo "gpu-nccl-build: $SRC is not an NCCL source tree" >&2; exit 2; }
ver=$(awk -F':= *' '/^NCCL_(MAJOR|MINOR|PATCH)/ {v = v (v ? "." : "") $2} END {print v}' "$SRC/makefiles/version.mk")
if [ -z "${GENCODE:-}" ]; then
  GENCODE=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | tr -d . | sort -u |
            sed 's/.*/-gencode=arch=compute_&,code=sm_&/' | tr '\n' ' ')
fi
[ -n "$GENCODE" ] || { echo "gpu-nccl-build: no GPU found (nvidia-smi) and no GENCODE given" >&2; exit 1; }
mkdir -p "$PREFIX"
PREFIX=$(cd "$PREFIX" && pwd)
echo "gpu-nccl-build: NCCL $ver from $SRC, $GENCODE, $JOBS jobs -> $PREFIX"
t0=$SECONDS
make -C "$SRC" -j"$JOBS" src.build CUDA_HOME="$CUDA_HOME" NVCC_GENCODE="$GENCODE" BUILDDIR="$PREFIX" >"$PREFIX/build.log" 2>&1 ||
  { tail -20 "$PREFIX/build.log"; echo "gpu-nccl-build: FAILED after $((SECONDS - t0)) s (log: $PREFIX/build.log)" >&2; exit 1; }
[ -e "$PREFIX/lib/libnccl.so" ] || { echo "gpu-nccl-build: no $PREFIX/lib/libnccl.so" >&2; exit 1; }
echo "gpu-nccl-build: NCCL $ver built in $((SECONDS - t0)) s: NCCL_HOME=$PREFIX"
