#!/usr/bin/env bash
# findings_rate.sh - how often `ncclscope report` names a straggler or a slow rank, on healthy
# nccl-sim jobs (every such finding is false) and on jobs with one slowed rank (the finding should
# name that rank, and no other). docs/report.md, "Findings", states the test behind a finding;
# this measures its false-finding rate and its power (docs/benchmarks.md, "Findings on healthy and
# slowed jobs").
#
# Usage: bench/findings_rate.sh [BUILD_DIR]                 (default build/)
#   SIZES="4x4 8x2 8x8 16x4"   RANKSxPROCS of the jobs
#   SEEDS=20                   healthy jobs per size (nccl-sim --seed 1..SEEDS)
#   SLOW_US="500 2000 10000"   --slow-us of the slowed jobs; SLOW_SEEDS=5 jobs per size and U
#   ITERS=50 SCENARIO=mixed    nccl-sim --iters and --scenario; jobs run --couple on (ranks wait
#                              for each other in a collective, as on GPUs)
#   REPORTS="new=BUILD_DIR/ncclscope"  the report binaries to compare, LABEL=PATH each: every
#                              job is recorded once (with BUILD_DIR's nccl-sim and plugin) and
#                              analysed by each of them
# The report's text is parsed ("arrived last", "took longest"), so any version of it can be
# measured. The slowed rank is global rank 1, which is rank 1 of every communicator nccl-sim makes.
set -euo pipefail
B=${1:-build}
SIZES=${SIZES:-"4x4 8x2 8x8 16x4"} SEEDS=${SEEDS:-20} SLOW_US=${SLOW_US:-"500 2000 10000"}
SLOW_SEEDS=${SLOW_SEEDS:-5} ITERS=${ITERS:-50} SCENARIO=${SCENARIO:-mixed}
REPORTS=${REPORTS:-"new=$B/ncclscope"}
SIM=$B/nccl-sim PLUGIN=$(realpath "$B/libnccl-profiler-ncclscope.so")
[ -x "$SIM" ] || { echo "findings_rate: no $SIM (build first)" >&2; exit 2; }
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
labels=() clis=()
for r in $REPORTS; do labels+=("${r%%=*}"); clis+=("${r#*=}"); done

# record RANKS PROCS SEED [SLOW_US]: the job into $W/t
record() {
  local slow=()
  rm -rf "$W/t"
  [ -n "${4:-}" ] && slow=(--slow-rank 1 --slow-us "$4")
  NCCLSCOPE_DIR=$W/t "$SIM" --plugin "$PLUGIN" --scenario "$SCENARIO" --ranks "$1" --procs "$2" \
    --iters "$ITERS" --couple on --seed "$3" "${slow[@]}" >/dev/null 2>&1 ||
    { echo "findings_rate: nccl-sim failed (ranks $1 procs $2 seed $3)" >&2; exit 1; }
}
# findings CLI: "<stragglers> <slow ranks> <rank 1 named> <another rank named>"
findings() {
  "$1" report "$W/t" >"$W/r.txt" 2>/dev/null || true
  local s n named
  s=$(grep -c '^  - rank [0-9]* .*arrived last' "$W/r.txt" || true)
  n=$(grep -c '^  - rank [0-9]* .*took longest' "$W/r.txt" || true)
  named=$(grep -c '^  - rank 1 .*arrived last' "$W/r.txt" || true)
  echo "$s $n $named $((s - named))"
}
pct() { echo "100 * $1 / $2" | bc -l; }

echo "findings: $(nproc) cores; nccl-sim --scenario $SCENARIO --iters $ITERS --couple on"
echo "healthy jobs (every finding is false):"
printf '| %-8s | %-6s | %4s | %18s | %18s |\n' report size jobs "with a straggler" "with a slow rank"
printf '|%s|\n' "----------|--------|------|--------------------|--------------------"
for sz in $SIZES; do
  r=${sz%x*} p=${sz#*x}
  declare -A js=() ns=()
  for seed in $(seq 1 "$SEEDS"); do
    record "$r" "$p" "$seed"
    for i in "${!clis[@]}"; do
      read -r s n _ _ < <(findings "${clis[$i]}")
      [ "$s" -gt 0 ] && js[$i]=$((${js[$i]:-0} + 1))
      [ "$n" -gt 0 ] && ns[$i]=$((${ns[$i]:-0} + 1))
    done
  done
  for i in "${!clis[@]}"; do
    printf '| %-8s | %-6s | %4s | %9s (%5.1f%%) | %9s (%5.1f%%) |\n' "${labels[$i]}" "$sz" "$SEEDS" \
      "${js[$i]:-0}" "$(pct "${js[$i]:-0}" "$SEEDS")" "${ns[$i]:-0}" "$(pct "${ns[$i]:-0}" "$SEEDS")"
  done
  unset js ns
done
echo "jobs with rank 1 slowed (--slow-rank 1 --slow-us U): a straggler finding names rank 1 (power),"
echo "one names another rank (false)"
printf '| %-8s | %-6s | %8s | %4s | %14s | %14s |\n' report size "U (us)" jobs "rank 1 named" "another named"
printf '|%s|\n' "----------|--------|----------|------|----------------|----------------"
for sz in $SIZES; do
  r=${sz%x*} p=${sz#*x}
  for u in $SLOW_US; do
    declare -A k=() o=()
    for seed in $(seq 1 "$SLOW_SEEDS"); do
      record "$r" "$p" "$seed" "$u"
      for i in "${!clis[@]}"; do
        read -r _ _ named other < <(findings "${clis[$i]}")
        [ "$named" -gt 0 ] && k[$i]=$((${k[$i]:-0} + 1))
        [ "$other" -gt 0 ] && o[$i]=$((${o[$i]:-0} + 1))
      done
    done
    for i in "${!clis[@]}"; do
      printf '| %-8s | %-6s | %8s | %4s | %6s (%3.0f%%) | %6s (%3.0f%%) |\n' "${labels[$i]}" "$sz" \
        "$u" "$SLOW_SEEDS" "${k[$i]:-0}" "$(pct "${k[$i]:-0}" "$SLOW_SEEDS")" "${o[$i]:-0}" \
        "$(pct "${o[$i]:-0}" "$SLOW_SEEDS")"
    done
    unset k o
  done
done
