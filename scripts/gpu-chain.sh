#!/usr/bin/env bash
# gpu-chain.sh NCCL_SRC [OUT] - ncclscope chained to NVIDIA's Inspector on a GPU host (docs/chain.md).
#
# NCCL_SRC is an NCCL source tree (a checkout of NVIDIA/nccl, 2.28.3 or later) whose
# plugins/profiler/inspector is built here, in OUT (never committed). Then a 2-GPU NCCL program of
# this project (examples/ex_collectives) runs REPS times in each of three setups, interleaved:
#   none      no profiler plugin
#   ncclscope ncclscope alone
#   chained   ncclscope with NCCLSCOPE_CHAIN=libnccl-profiler-inspector.so
# and the script checks that the chained runs wrote both outputs: ncclscope's trace (read back with
# `ncclscope dump --stats`, every communicator's collectives) and Inspector's JSON lines (one per
# completed operation). It prints the median wall time per setup and the chain's overhead.
# Environment: NCCL_HOME (the NCCL to run; scripts/gpu-common.sh), REPS (5), ITERS (50).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu-common.sh
SRC=${1:?usage: gpu-chain.sh NCCL_SRC [OUT]}
OUT=${2:-gpu-chain-out}
REPS=${REPS:-5} ITERS=${ITERS:-50}
GPU_TAG=chain
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
gpu_prepare build-gpu "$OUT/build.log" || exit 1
[ -x build-gpu/examples/ex_collectives ] || { gpu_say "examples were not built (CUDA or NCCL missing)"; exit 1; }

# Inspector: built from the given tree, into OUT
INS=$SRC/plugins/profiler/inspector
[ -d "$INS" ] || { gpu_say "$INS not found: NCCL_SRC must be an NCCL source tree (2.28.3+)"; exit 1; }
rm -rf "$OUT/inspector-src" && cp -r "$INS" "$OUT/inspector-src"
gpu_say "building Inspector from $INS"
if ! make -C "$OUT/inspector-src" ${NCCL_HOME:+NCCL_HOME="$NCCL_HOME"} >"$OUT/inspector-build.log" 2>&1; then
  tail -20 "$OUT/inspector-build.log"; gpu_say "Inspector build FAILED"; exit 1
fi
INSLIB=$(find "$OUT/inspector-src" -name 'libnccl-profiler-inspector.so' | head -1)
[ -n "$INSLIB" ] || { gpu_say "no libnccl-profiler-inspector.so after the build"; exit 1; }
gpu_say "Inspector: $INSLIB"

run() { # SETUP REP
  local s=$1 r=$2 d=$OUT/$1-$2 t0 t1
  rm -rf "$d" && mkdir -p "$d"
  local env=(NCCL_DEBUG=WARN)
  case $s in
  ncclscope) env+=(NCCL_PROFILER_PLUGIN="$PLUGIN" NCCLSCOPE_DIR="$d/trace") ;;
  chained) env+=(NCCL_PROFILER_PLUGIN="$PLUGIN" NCCLSCOPE_DIR="$d/trace" NCCLSCOPE_CHAIN="$INSLIB"
                 NCCL_INSPECTOR_ENABLE=1 NCCL_INSPECTOR_DUMP_DIR="$d/inspector"
                 NCCL_INSPECTOR_DUMP_THREAD_INTERVAL_MICROSECONDS=100000) ;;
  esac
  t0=$(date +%s.%N)
  env "${env[@]}" timeout 600 build-gpu/examples/ex_collectives --ranks 2 --iters "$ITERS" >"$d/out.log" 2>&1 ||
    { tail -20 "$d/out.log"; gpu_say "$s run $r FAILED"; exit 1; }
  t1=$(date +%s.%N)
  echo "$s $(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.3f", b - a}')" >>"$OUT/times.txt"
}
rm -f "$OUT/times.txt"
for r in $(seq 1 "$REPS"); do for s in none ncclscope chained; do run "$s" "$r"; done; done

# both outputs of every chained run
for r in $(seq 1 "$REPS"); do
  d=$OUT/chained-$r
  "$NCS" dump "$d/trace" --stats >"$d/stats.txt" 2>&1 || { cat "$d/stats.txt"; gpu_say "chained run $r: no readable ncclscope trace"; exit 1; }
  grep -qE '^  Coll +[1-9]' "$d/stats.txt" || { cat "$d/stats.txt"; gpu_say "chained run $r: no Coll in ncclscope's trace"; exit 1; }
  n=$(cat "$d"/inspector/*.log 2>/dev/null | grep -c coll_perf || true)
  [ "${n:-0}" -gt 0 ] || { ls -R "$d"; gpu_say "chained run $r: Inspector wrote no coll_perf line"; exit 1; }
  grep -q 'NCCLSCOPE_CHAIN' "$d/out.log" && grep 'NCCLSCOPE_CHAIN' "$d/out.log" | sed "s/^/chain: run $r: /"
  gpu_say "chained run $r: ncclscope $(grep -E '^  Coll ' "$d/stats.txt" | awk '{print $2}') Coll starts, Inspector $n coll_perf lines"
done
# median wall time per setup, and the overhead against no plugin and against ncclscope alone
awk '{t[$1] = t[$1] " " $2} END {for (s in t) print s, t[s]}' "$OUT/times.txt" | while read -r s v; do
  echo "$s $(echo "$v" | tr ' ' '\n' | sort -n | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}')"
done | sort >"$OUT/medians.txt"
cat "$OUT/medians.txt" | sed 's/^/chain: median seconds: /'
awk '{m[$1] = $2} END {printf "chain: overhead vs none: ncclscope %+.1f%%, chained %+.1f%%; chained vs ncclscope %+.1f%%\n",
  100 * (m["ncclscope"] / m["none"] - 1), 100 * (m["chained"] / m["none"] - 1), 100 * (m["chained"] / m["ncclscope"] - 1)}' "$OUT/medians.txt"
gpu_say "ok: both outputs in every chained run ($OUT)"
