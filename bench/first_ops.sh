#!/usr/bin/env bash
# The first operations after the plugin starts recording: what a round of plugin calls costs in
# the first 1000 operations of a process, against the steady state, driven by nccl-sim's flood
# (--cold: each round is one AllReduce as NCCL 2.28 reports it with the default events, 13 calls).
# The first rounds pay what the steady state does not: page faults on buffer memory never used
# before, the writer's own start. docs/benchmarks.md ("The first operations") reads the table.
#
# Usage: bench/first_ops.sh [BUILD_DIR]        (default build/)
#   REPS=9            runs per level, in shuffled order; the table shows median [min, max]
#   FIRST=1000        rounds in a "first" run (a fresh process each time)
#   STEADY=100000     rounds in a "steady" run
#   BASE=SO           add a level: another build's libnccl-profiler-ncclscope.so (before/after)
#
# Columns: us per round (13 plugin calls), over the whole run: "first" runs FIRST rounds in a new
# process, "steady" STEADY rounds (its first rounds are a small share of it); faults: the
# process's minor page faults in a first run (median), setup included.
set -euo pipefail
B=${1:-build}
SIM=$B/nccl-sim; [ -x "$SIM" ] || SIM=$B/sim/nccl-sim
NCS=$(realpath "$B/libnccl-profiler-ncclscope.so")
EMPTY=$(realpath "$(ls "$B"/libnccl-profiler-empty.so "$B"/bench/libnccl-profiler-empty.so 2>/dev/null | head -1)")
REPS=${REPS:-9} FIRST=${FIRST:-1000} STEADY=${STEADY:-100000} BASE=${BASE:-}
[ -x "$SIM" ] || { echo "first_ops.sh: build first: scripts/build.sh" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "first_ops.sh: needs /usr/bin/time (apt-get install time)" >&2; exit 2; }
command -v shuf >/dev/null || { echo "first_ops.sh: needs shuf (coreutils)" >&2; exit 2; }
for v in "$REPS" "$FIRST" "$STEADY"; do
  case $v in '' | *[!0-9]* | 0) echo "first_ops.sh: REPS, FIRST and STEADY are positive integers" >&2; exit 2 ;; esac
done
[ -z "$BASE" ] || [ -f "$BASE" ] || { echo "first_ops.sh: BASE=$BASE: no such file" >&2; exit 2; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

levels=("empty $EMPTY" "ncclscope $NCS")
[ -n "$BASE" ] && levels+=("base $(realpath "$BASE")")

one() { # name plugin rounds -> "us_per_round faults"
  local so=$2 n=$3 line faults
  rm -rf "$tmp/trace"
  line=$(NCCLSCOPE_DIR="$tmp/trace" /usr/bin/time -f "faults=%R" "$SIM" --plugin "$so" --scenario flood \
    --cold 1 --ranks 1 --threads 1 --events $((n * 13)) 2>&1 | grep -E '^flood:|^faults=' | tr '\n' ' ')
  faults=$(sed -n 's/.*faults=\([0-9]*\).*/\1/p' <<<"$line")
  awk -v l="$line" -v f="$faults" 'BEGIN {
    match(l, /seconds=[0-9.e+-]+/); s = substr(l, RSTART + 8, RLENGTH - 8)
    match(l, /events=[0-9]+/); e = substr(l, RSTART + 7, RLENGTH - 7)
    if (e == "" || s == "") exit 1
    printf "%.3f %s\n", s * 1e6 / (e / 13), f }'
}

# every (level, kind) REPS times, in one shuffled order
plan=()
for ((r = 0; r < REPS; r++)); do
  for l in "${levels[@]}"; do plan+=("$l first" "$l steady"); done
done
mapfile -t plan < <(printf '%s\n' "${plan[@]}" | shuf)
total=${#plan[@]} i=0
for p in "${plan[@]}"; do
  read -r name so kind <<<"$p"
  i=$((i + 1))
  printf '\rfirst_ops: run %d of %d' "$i" "$total" >&2
  n=$FIRST; [ "$kind" = steady ] && n=$STEADY
  one "$name" "$so" "$n" >>"$tmp/$name.$kind" || { echo "first_ops.sh: nccl-sim failed ($name, $kind)" >&2; exit 1; }
done
echo >&2

stat() { sort -g | awk '{a[NR] = $1} END {printf "%.2f [%.2f, %.2f]", a[int((NR + 1) / 2)], a[1], a[NR]}'; }
echo "first operations: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), load $(cut -d' ' -f1 /proc/loadavg) at the end, $REPS runs per cell, $(date -u +%Y-%m-%d)"
printf '| %-9s | %-26s | %-26s | %-8s |\n' level "us/round, first $FIRST" "us/round, steady $STEADY" faults
printf '|:--|--:|--:|--:|\n'
for l in "${levels[@]}"; do
  read -r name _ <<<"$l"
  printf '| %-9s | %26s | %26s | %8s |\n' "$name" "$(cut -d' ' -f1 "$tmp/$name.first" | stat)" \
    "$(cut -d' ' -f1 "$tmp/$name.steady" | stat)" "$(cut -d' ' -f2 "$tmp/$name.first" | sort -n | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}')"
done
