#!/usr/bin/env bash
# findings_rate.sh - how often `ncclscope report` has a headline finding, and whether it names the
# right rank, on nccl-sim jobs whose truth is known (docs/report.md, "Findings";
# docs/benchmarks.md, "Findings on healthy, stalled and slowed jobs"), per scenario and size:
#   healthy jobs:   every headline is false (a finding on a job where nothing was injected);
#   stalled jobs:   one rank pauses STALL_MS once, halfway through (--pause R:ITERS/2:STALL_MS; R
#                   takes every position in turn): a headline stall (or repeated stalls) should
#                   name R, and no headline another rank;
#   straggler jobs: rank 1 sleeps U us before every collective (--slow-rank 1 --slow-us U): a
#                   headline straggler should name rank 1, and no headline another rank.
# "wrong culprit" counts the jobs where a headline names a rank other than the injected one.
#
# Usage: bench/findings_rate.sh [BUILD_DIR]                 (default build/)
#   SCENARIOS="allreduce mixed"  nccl-sim --scenario of the jobs
#   SIZES="4x4 8x2 8x8"          RANKSxPROCS of the jobs
#   SEEDS=10                     healthy jobs per scenario and size (nccl-sim --seed 1..SEEDS)
#   STALL_MS=20 STALL_SEEDS=4    the pause, and stalled jobs per scenario and size
#   SLOW_US="500 2000" SLOW_SEEDS=4  --slow-us of the straggler jobs, and jobs per U
#   ITERS=50                     nccl-sim --iters; jobs run --couple on (ranks wait for each other
#                                in a collective, as on GPUs)
#   PARTS="healthy stall straggler"  the tables to measure
#   CLOCK=model                  nccl-sim --clock: model (times from nccl-sim's model: the same
#                                verdicts on an idle and a loaded machine) or live
#   REPORTS="new=BUILD_DIR/ncclscope"  the report binaries to compare, LABEL=PATH each: every job
#                                is recorded once (with BUILD_DIR's nccl-sim and plugin) and
#                                analysed by each of them
# The report's JSON is read; a report from before "findings" (headline and minor) counts every
# straggler and slow-rank finding as a headline. The slowed rank is global rank 1, which is rank 1
# of every communicator nccl-sim makes (and a paused rank R is rank R of each).
set -euo pipefail
B=${1:-build}
SCENARIOS=${SCENARIOS:-"allreduce mixed"} SIZES=${SIZES:-"4x4 8x2 8x8"} SEEDS=${SEEDS:-10}
STALL_MS=${STALL_MS:-20} STALL_SEEDS=${STALL_SEEDS:-4}
SLOW_US=${SLOW_US:-"500 2000"} SLOW_SEEDS=${SLOW_SEEDS:-4} ITERS=${ITERS:-50} CLOCK=${CLOCK:-model}
REPORTS=${REPORTS:-"new=$B/ncclscope"} PARTS=${PARTS:-"healthy stall straggler"}
SIM=$B/nccl-sim PLUGIN=$(realpath "$B/libnccl-profiler-ncclscope.so")
[ -x "$SIM" ] || { echo "findings_rate: no $SIM (build first)" >&2; exit 2; }
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
labels=() clis=()
for r in $REPORTS; do labels+=("${r%%=*}"); clis+=("${r#*=}"); done

# record SCENARIO RANKS PROCS SEED [sim options]: the job into $W/t
record() {
  local sc=$1 r=$2 p=$3 seed=$4
  shift 4
  rm -rf "$W/t"
  NCCLSCOPE_DIR=$W/t "$SIM" --plugin "$PLUGIN" --clock "$CLOCK" --scenario "$sc" --ranks "$r" --procs "$p" \
    --iters "$ITERS" --couple on --seed "$seed" "$@" >/dev/null 2>&1 ||
    { echo "findings_rate: nccl-sim failed ($sc, ranks $r procs $p seed $seed $*)" >&2; exit 1; }
}
# verdict CLI KIND RANK: "<any headline> <KIND's headline names RANK> <a headline names another>"
# KIND: stall (stall or repeated stalls), straggler, or - (healthy)
verdict() {
  "$1" report --json "$W/t" >"$W/r.json" 2>/dev/null || true
  python3 - "$W/r.json" "$2" "$3" <<'PY'
import json, sys
try:
    r = json.load(open(sys.argv[1]))
except ValueError:
    print("0 0 0"); sys.exit()
kind, rank = sys.argv[2], int(sys.argv[3])
if "findings" in r:
    heads = [(x["kind"], x["rank"]) for x in r["findings"] if x["headline"]]
else:  # before headline and minor: every straggler and slow-rank finding
    heads = [("straggler", x["rank"]) for x in r["stragglers"]] + [("slow_rank", x["rank"]) for x in r["slow_ranks"]]
kinds = {"stall": ("stall", "repeated_stalls"), "straggler": ("straggler",)}.get(kind, ())
named = any(k in kinds and x == rank for k, x in heads)
other = any(x >= 0 and x != rank for k, x in heads)
print(int(bool(heads)), int(named), int(other))
PY
}
pct() { echo "100 * $1 / $2" | bc -l; }

echo "findings: $(nproc) cores; nccl-sim --iters $ITERS --couple on --clock $CLOCK; $(date -u +%Y-%m-%d)"
part() { case " $PARTS " in *" $1 "*) return 0 ;; esac; return 1; }
part healthy && echo "healthy jobs (every headline is false):" &&
printf '| %-8s | %-9s | %-6s | %4s | %18s |\n' report scenario size jobs "with a headline"
part healthy && printf '|%s|\n' "----------|-----------|--------|------|--------------------"
for sc in $SCENARIOS; do
  part healthy || break
  for sz in $SIZES; do
    r=${sz%x*} p=${sz#*x}
    declare -A h=()
    for seed in $(seq 1 "$SEEDS"); do
      record "$sc" "$r" "$p" "$seed"
      for i in "${!clis[@]}"; do
        read -r any _ _ < <(verdict "${clis[$i]}" - -1)
        [ "$any" -gt 0 ] && h[$i]=$((${h[$i]:-0} + 1))
      done
    done
    for i in "${!clis[@]}"; do
      printf '| %-8s | %-9s | %-6s | %4s | %9s (%5.1f%%) |\n' "${labels[$i]}" "$sc" "$sz" "$SEEDS" \
        "${h[$i]:-0}" "$(pct "${h[$i]:-0}" "$SEEDS")"
    done
    unset h
  done
done

# table KIND TITLE JOBS: jobs with one injected fault, per scenario, size, PARAMS value and
# report; inject SEED RANKS PARAM sets the injected $rank and the sim options $opts
table() {
  local kind=$1 title=$2 n=$3
  printf '| %-8s | %-9s | %-6s | %10s | %4s | %14s | %14s |\n' report scenario size "$title" jobs found "wrong culprit"
  printf '|%s|\n' "----------|-----------|--------|------------|------|----------------|----------------"
  for sc in $SCENARIOS; do
    for sz in $SIZES; do
      local r=${sz%x*} p=${sz#*x}
      for param in $PARAMS; do
        declare -A k=() o=()
        for seed in $(seq 1 "$n"); do
          inject "$seed" "$r" "$param"
          record "$sc" "$r" "$p" "$seed" "${opts[@]}"
          for i in "${!clis[@]}"; do
            read -r _ named other < <(verdict "${clis[$i]}" "$kind" "$rank")
            [ "$named" -gt 0 ] && k[$i]=$((${k[$i]:-0} + 1))
            [ "$other" -gt 0 ] && o[$i]=$((${o[$i]:-0} + 1))
          done
        done
        for i in "${!clis[@]}"; do
          printf '| %-8s | %-9s | %-6s | %10s | %4s | %6s (%3.0f%%) | %6s (%3.0f%%) |\n' "${labels[$i]}" "$sc" "$sz" \
            "$param" "$n" "${k[$i]:-0}" "$(pct "${k[$i]:-0}" "$n")" "${o[$i]:-0}" "$(pct "${o[$i]:-0}" "$n")"
        done
        unset k o
      done
    done
  done
}

if part stall; then
echo "stalled jobs (rank R pauses once, halfway: --pause R:$((ITERS / 2)):MS, R = seed - 1 mod ranks):"
echo "found: a headline stall names R; wrong culprit: a headline names another rank"
inject() { rank=$((($1 - 1) % $2)); opts=(--pause "$rank:$((ITERS / 2)):$3"); }
PARAMS=$STALL_MS table stall "pause (ms)" "$STALL_SEEDS"
fi
part straggler || exit 0
echo "straggler jobs (--slow-rank 1 --slow-us U): found: a headline straggler names rank 1;"
echo "wrong culprit: a headline names another rank"
inject() { rank=1; opts=(--slow-rank 1 --slow-us "$3"); }
PARAMS=$SLOW_US table straggler "U (us)" "$SLOW_SEEDS"
