#!/usr/bin/env bash
# Build everything (plugin, CLI, nccl-sim, benchmarks, tests) into build/.
# Usage: scripts/build.sh [extra cmake args]
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh build
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
cmake --build build -j"$(nproc)"
echo "built: build/ncclscope build/libnccl-profiler-ncclscope.so build/nccl-sim"
# the docs and the demo's next commands say `ncclscope`: how to make that name run this build
if [ "$(command -v ncclscope 2>/dev/null)" != "$PWD/build/ncclscope" ]; then
  echo "to run it as 'ncclscope': export PATH=\"$PWD/build:\$PATH\"  (or cmake --install: docs/install.md)"
fi
