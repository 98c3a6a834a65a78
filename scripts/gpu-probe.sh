#!/usr/bin/env bash
# gpu-probe.sh - what a plugin call costs on this (GPU) host, and why it may cost more than on
# the development VM: host facts, the cost of the event path's primitives (bench/host_cost.c:
# TSC read, clock_gettime, atomic add, a cache line bounced between two CPUs) and nccl-sim's
# flood with no plugin, the empty plugin and ncclscope, unpinned and pinned. See
# docs/benchmarks.md ("Event cost on the GPU host").
#
# Usage: scripts/gpu-probe.sh            Environment: OUT (default ./probe-out), REPS (3),
#                                        EVENTS (5000000 calls per flood run)
# Output ($OUT): host.txt, host_cost.txt, flood.txt (one line per run), build.log
set -uo pipefail
OUT=${OUT:-./probe-out}; mkdir -p "$OUT" || exit 1; OUT=$(cd "$OUT" && pwd)
REPS=${REPS:-3} EVENTS=${EVENTS:-5000000}
cd "$(dirname "$0")/.." || exit 1
GPU_TAG=probe
. scripts/gpu-common.sh
gpu_prepare build-gpu "$OUT/build.log" || exit 1
B=build-gpu
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
{
  uname -a; nproc; lscpu; echo
  echo "clocksource: $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource 2>/dev/null)" \
       "of $(cat /sys/devices/system/clocksource/clocksource0/available_clocksource 2>/dev/null)"
  grep -m1 '^flags' /proc/cpuinfo | tr ' ' '\n' | grep -E 'tsc|hypervisor' | tr '\n' ' '; echo
  echo "perf: $(command -v perf || echo none)"
} >"$OUT/host.txt" 2>&1
HC=$B/host_cost; [ -x "$HC" ] || HC=$B/bench/host_cost
# two CPUs of one node (past CPUs 0 and 1 where there are more than 3) and a CPU of another NUMA
# node, when there is one
A=0; [ "$(nproc)" -gt 3 ] && A=2
C=$((A + 1))
N1=$(lscpu -p=CPU,NODE 2>/dev/null | grep -v '^#' | awk -F, '$2 == 1 {print $1; exit}')
{
  echo "== unpinned"; "$HC"
  echo "== cpus $A,$C"; "$HC" "$A" "$C"
  [ -n "$N1" ] && { echo "== cpus $A,$N1 (other NUMA node)"; "$HC" "$A" "$N1"; }
} >"$OUT/host_cost.txt" 2>&1
SIM=$B/nccl-sim; [ -x "$SIM" ] || SIM=$B/sim/nccl-sim
EMPTY=$(realpath "$(ls $B/libnccl-profiler-empty.so $B/bench/libnccl-profiler-empty.so 2>/dev/null | head -1)")
flood() { # CPUS PLUGIN [nccl-sim args]: one flood run, its "flood:" line
  local cpus=$1 p=$2 pin=(); shift 2
  [ "$cpus" = - ] || pin=(taskset -c "$cpus")
  rm -rf "$tmp/tr"
  NCCLSCOPE_DIR=$tmp/tr NCCLSCOPE_EVENTS=all "${pin[@]}" "$SIM" --plugin "$p" --scenario flood \
    --threads 1 --events "$EVENTS" "$@" 2>&1 | grep '^flood:'
}
for r in $(seq "$REPS"); do
  for c in - "$A,$C" ${N1:+"$A,$N1"} "$A"; do
    for p in none "$EMPTY" "$PLUGIN"; do echo "rep=$r cpus=$c plugin=$(basename "$p") $(flood "$c" "$p")"; done
    echo "rep=$r cpus=$c plugin=ncclscope-paced $(flood "$c" "$PLUGIN" --rate 5000000 --duration 2)"
  done
done >"$OUT/flood.txt"
cat "$OUT/host_cost.txt"
awk '{for (i = 1; i <= NF; i++) if ($i ~ /^ns_per_event=/) {split($i, a, "="); k = $2 " " $3; s[k] = s[k] " " a[2]}}
     END {for (k in s) print k ":" s[k]}' "$OUT/flood.txt" | sort
