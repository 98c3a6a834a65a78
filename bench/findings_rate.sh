#!/usr/bin/env bash
# findings_rate.sh - how often `ncclscope report` names a straggler or a slow rank, on healthy
# nccl-sim jobs (every such finding is false) and on jobs with one slowed rank (the finding should
# name that rank). docs/report.md, "Findings", states the test behind a finding; this measures its
# false-finding rate and its power (docs/benchmarks.md, "Findings on healthy and slowed jobs").
#
# Usage: bench/findings_rate.sh [BUILD_DIR]                 (default build/)
#   SIZES="4x4 8x2 8x8 16x4"   RANKSxPROCS of the jobs
#   SEEDS=20                   healthy jobs per size (nccl-sim --seed 1..SEEDS)
#   SLOW_US="500 2000 10000"   --slow-us of the slowed jobs; SLOW_SEEDS=5 jobs per size and U
#   ITERS=50 SCENARIO=mixed    nccl-sim --iters and --scenario; jobs run --couple on (ranks wait
#                              for each other in a collective, as on GPUs)
# The report's text is parsed ("arrived last", "took longest"), so any version of it can be
# measured. A slowed job counts as found when a straggler finding names the slowed rank (global
# rank 1, which is rank 1 of every communicator nccl-sim creates).
set -euo pipefail
B=${1:-build}
SIZES=${SIZES:-"4x4 8x2 8x8 16x4"} SEEDS=${SEEDS:-20} SLOW_US=${SLOW_US:-"500 2000 10000"}
SLOW_SEEDS=${SLOW_SEEDS:-5} ITERS=${ITERS:-50} SCENARIO=${SCENARIO:-mixed}
SIM=$B/nccl-sim CLI=$B/ncclscope PLUGIN=$(realpath "$B/libnccl-profiler-ncclscope.so")
for f in "$SIM" "$CLI"; do [ -x "$f" ] || { echo "findings_rate: no $f (build first)" >&2; exit 2; }; done
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT

# job RANKS PROCS SEED [SLOW_US]: records a job, prints "<stragglers> <slow ranks> <named>"
job() {
  local d=$W/t slow=()
  rm -rf "$d"
  [ -n "${4:-}" ] && slow=(--slow-rank 1 --slow-us "$4")
  NCCLSCOPE_SAMPLE=1 NCCLSCOPE_DIR=$d "$SIM" --plugin "$PLUGIN" --scenario "$SCENARIO" \
    --ranks "$1" --procs "$2" --iters "$ITERS" --couple on --seed "$3" "${slow[@]}" >/dev/null 2>&1 ||
    { echo "findings_rate: nccl-sim failed (ranks $1 procs $2 seed $3)" >&2; exit 1; }
  "$CLI" report "$d" >"$W/r.txt" 2>/dev/null || true
  local s n named
  s=$(grep -c '^  - rank [0-9]* .*arrived last' "$W/r.txt" || true)
  n=$(grep -c '^  - rank [0-9]* .*took longest' "$W/r.txt" || true)
  named=$(grep -c '^  - rank 1 .*arrived last' "$W/r.txt" || true)
  echo "$s $n $named"
}

echo "findings: $(nproc) cores; nccl-sim --scenario $SCENARIO --iters $ITERS --couple on"
echo "healthy jobs (every finding is false):"
printf '| %-6s | %4s | %22s | %22s |\n' size jobs "with a straggler" "with a slow rank"
printf '|%s|\n' "--------|------|------------------------|------------------------"
for sz in $SIZES; do
  r=${sz%x*} p=${sz#*x} js=0 ns=0
  for seed in $(seq 1 "$SEEDS"); do
    read -r s n _ < <(job "$r" "$p" "$seed")
    [ "$s" -gt 0 ] && js=$((js + 1))
    [ "$n" -gt 0 ] && ns=$((ns + 1))
  done
  printf '| %-6s | %4s | %10s (%5.1f%%) | %10s (%5.1f%%) |\n' "$sz" "$SEEDS" "$js" \
    "$(echo "100 * $js / $SEEDS" | bc -l)" "$ns" "$(echo "100 * $ns / $SEEDS" | bc -l)"
done
echo "jobs with rank 1 slowed (--slow-rank 1 --slow-us U): the straggler finding names rank 1"
printf '| %-6s | %8s | %4s | %14s |\n' size "U (us)" jobs "rank 1 named"
printf '|%s|\n' "--------|----------|------|----------------"
for sz in $SIZES; do
  r=${sz%x*} p=${sz#*x}
  for u in $SLOW_US; do
    k=0
    for seed in $(seq 1 "$SLOW_SEEDS"); do
      read -r _ _ named < <(job "$r" "$p" "$seed" "$u")
      [ "$named" -gt 0 ] && k=$((k + 1))
    done
    printf '| %-6s | %8s | %4s | %6s (%3.0f%%) |\n' "$sz" "$u" "$SLOW_SEEDS" "$k" \
      "$(echo "100 * $k / $SLOW_SEEDS" | bc -l)"
  done
done
