#!/usr/bin/env bash
# gpu-hotpath.sh - the plugin's per-call cost on a GPU host's CPU, and where it goes (issue of
# "Every operation, always"; docs/benchmarks.md, "Event cost on the GPU host"). It needs the CPU
# only: any lent machine will do.
#
# Runs, for this tree's build and optionally for another source tree (OLD_SRC, e.g. an earlier
# commit exported with `git archive`), side by side:
#   host facts; bench/host_cost (TSC, clock_gettime, atomics, a cache line between cores);
#   bench/hotpath_parts (the STATE fast path built up part by part, unpinned and pinned);
#   bench/event_cost.sh (none / empty / ncclscope, 1 and 2 threads, paced at 5 M calls/s);
#   nccl-sim flood --cold 1024 (one AllReduce's 13 calls per round, caches swept between rounds,
#   as NCCL's own work between operations does), and flood with only Coll and KernelCh recorded
#   (the rest of the calls are starts ncclscope answers without recording).
#
# Usage: OUT=dir [OLD_SRC=dir] [REPS=5] scripts/gpu-hotpath.sh
set -uo pipefail
OUT=${OUT:-./hotpath-out}; mkdir -p "$OUT" || exit 1; OUT=$(cd "$OUT" && pwd)
REPS=${REPS:-5}
export NCCLSCOPE_SAMPLE=1 # every operation recorded, in the older tree too
cd "$(dirname "$0")/.." || exit 1
build() { # SRC DIR
  cmake -S "$1" -B "$2" -DCMAKE_BUILD_TYPE=RelWithDebInfo >"$OUT/build-$(basename "$2").log" 2>&1 &&
    cmake --build "$2" -j"$(nproc)" >>"$OUT/build-$(basename "$2").log" 2>&1
}
build . build-hot || { tail -20 "$OUT/build-build-hot.log"; exit 1; }
builds=(build-hot)
if [ -n "${OLD_SRC:-}" ]; then
  build "$OLD_SRC" build-old && builds+=(build-old) || echo "gpu-hotpath: OLD_SRC did not build (see $OUT/build-build-old.log)"
fi
{
  uname -a; nproc; lscpu | grep -E 'Model name|MHz|NUMA|Thread|Socket|Hypervisor|L1d|L2|L3'
  echo "clocksource: $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource 2>/dev/null)"
  grep -m1 '^flags' /proc/cpuinfo | tr ' ' '\n' | grep -E 'tsc|hypervisor' | tr '\n' ' '; echo
} >"$OUT/host.txt" 2>&1
B=build-hot
A=0; [ "$(nproc)" -gt 3 ] && A=2
C=$((A + 1))
{
  echo "== host_cost unpinned"; "$B/host_cost"
  echo "== host_cost cpus $A,$C"; "$B/host_cost" "$A" "$C"
  echo "== hotpath_parts unpinned"; "$B/hotpath_parts" 20000000 "$REPS"
  echo "== hotpath_parts producer $A writer $C"; "$B/hotpath_parts" 20000000 "$REPS" 1000 "$A" "$C"
  echo "== hotpath_parts producer and writer on $A"; "$B/hotpath_parts" 20000000 "$REPS" 1000 "$A" "$A"
} >"$OUT/parts.txt" 2>&1
for b in "${builds[@]}"; do
  echo "== $b" >>"$OUT/event_cost.txt"
  REPS=$REPS PACED_S=2 SUSTAIN_S=5 bench/event_cost.sh "$b" >>"$OUT/event_cost.txt" 2>&1
done
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
flood() { # BUILD PLUGIN EVENTS ARGS... -> ns_per_event
  local b=$1 p=$2 ev=$3; shift 3
  rm -rf "$tmp/tr"
  NCCLSCOPE_DIR="$tmp/tr" NCCLSCOPE_EVENTS=$ev NCS_EMPTY_EVENTS=$ev "$b/nccl-sim" --plugin "$p" --scenario flood \
    --threads 1 "$@" 2>/dev/null | sed -n 's/.*ns_per_event=\([0-9.]*\).*/\1/p'
}
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
{
  for b in "${builds[@]}"; do
    for p in none "$(realpath "$b/libnccl-profiler-empty.so")" "$(realpath "$b/libnccl-profiler-ncclscope.so")"; do
      n=$(basename "$p")
      cold=$(for r in $(seq "$REPS"); do flood "$b" "$p" default --cold 1024 --events 1300000; done | median)
      unrec=$(for r in $(seq "$REPS"); do flood "$b" "$p" coll,kernel --rate 5000000 --duration 2; done | median)
      echo "$b $n cold1024_default_ns_per_call=$cold only_coll_kernel_recorded_ns_per_call=$unrec"
    done
  done
} >"$OUT/flood.txt" 2>&1
cat "$OUT/parts.txt" "$OUT/event_cost.txt" "$OUT/flood.txt"
