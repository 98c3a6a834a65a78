#!/usr/bin/env bash
# diagnose_rate.sh - how often `ncclscope diagnose` names the right rank for a stall inside NCCL,
# says CANNOT TELL, names a wrong rank, or finds nothing: nccl-sim jobs with `--fault stall:R:SEQ`
# (rank R stops sending inside the collective; docs/nccl-sim.md, "Faults") on every rank position
# R, in trace and flight mode, with the default events and with `--events all`. The truth is the
# injected rank. docs/diagnose.md, "Which rank: what the evidence can single out", says what each
# verdict rests on; docs/benchmarks.md ("Diagnose against injected stalls") has the figures.
#
# Usage: bench/diagnose_rate.sh [BUILD_DIR]                 (default build/)
#   SCENARIOS="allreduce allgather reducescatter broadcast reduce"   nccl-sim --scenario
#   RANKS=8 PROCS=8            ranks, processes (one rank per process: the issue's job)
#   POSITIONS="0 1 ... RANKS-1"  the stalled ranks
#   MODES="trace flight"       record modes; flight: NCCLSCOPE_WATCHDOG_S=1, dumps or live files
#   EVENTS="default all"       NCCLSCOPE_EVENTS
#   ITERS=20 SEQ=10 HANG_S=1   nccl-sim --iters, the stalled collective, --hang-s
#   VERBOSE=1                  one line per job: its outcome and the first verdict's summary
#   DIAGNOSES="new=BUILD_DIR/ncclscope"  the diagnose binaries to compare, LABEL=PATH each: every
#                              job is recorded once (with BUILD_DIR's nccl-sim and plugin) and
#                              diagnosed by each of them
# Every job runs with `--clock model` (the trace's times are nccl-sim's model, whatever the
# machine's load; --couple is on with any fault), so a job gives the same verdict on any machine.
# Outcomes, from `diagnose --json`: correct (the first verdict names rank R: stuck inside, never
# entered or dead), cannot_tell (a CANNOT TELL with ranks waiting, and no verdict names another
# rank), wrong (a verdict names a rank other than R: a false culprit), missed (no problem found:
# a false negative). The last line of each (scenario, mode, events) is machine-readable:
#   diagnose_rate: SCENARIO MODE EVENTS runs=N correct=C cannot_tell=T wrong=W missed=M
set -euo pipefail
B=${1:-build}
SCENARIOS=${SCENARIOS:-"allreduce allgather reducescatter broadcast reduce"}
RANKS=${RANKS:-8} PROCS=${PROCS:-8}
POSITIONS=${POSITIONS:-$(seq -s ' ' 0 $((RANKS - 1)))}
MODES=${MODES:-"trace flight"} EVENTS=${EVENTS:-"default all"}
ITERS=${ITERS:-20} SEQ=${SEQ:-10} HANG_S=${HANG_S:-1} VERBOSE=${VERBOSE:-0}
SIM=$B/nccl-sim PLUGIN=$(realpath "$B/libnccl-profiler-ncclscope.so")
DIAGNOSES=${DIAGNOSES:-"new=$B/ncclscope"}
[ -x "$SIM" ] || { echo "diagnose_rate: no $SIM (build first)" >&2; exit 2; }
labels=() clis=()
for d in $DIAGNOSES; do labels+=("${d%%=*}"); clis+=("${d#*=}"); done
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT

# outcome RANK: the outcome of $W/d.json, and the first verdict's summary
outcome() {
  python3 - "$W/d.json" "$1" <<'PYEOF'
import json, sys
r = json.load(open(sys.argv[1])); R = int(sys.argv[2])
vs = r["verdicts"]; v = vs[0] if vs else {"kind": "none", "rank": -1, "summary": ""}
named = [x["rank"] for x in vs if x["kind"] in ("stuck_inside", "not_entered", "dead") and x["rank"] >= 0]
if any(n != R for n in named): o = "wrong"
elif v["kind"] in ("stuck_inside", "not_entered", "dead") and v["rank"] == R: o = "correct"
elif v["kind"] == "cannot_tell" and r["problem"]: o = "cannot_tell"
else: o = "missed"
print(o, v["summary"])
PYEOF
}

echo "diagnose_rate: $(nproc) cores; nccl-sim --ranks $RANKS --procs $PROCS --iters $ITERS --fault stall:R:$SEQ --hang-s $HANG_S --clock model; R in $POSITIONS"
printf '| %-8s | %-13s | %-6s | %-7s | %4s | %7s | %11s | %13s | %6s |\n' diagnose scenario mode events jobs correct "cannot tell" "wrong culprit" missed
printf '|%s|\n' "----------|---------------|--------|---------|------|---------|-------------|---------------|--------"
for sc in $SCENARIOS; do
  for mode in $MODES; do
    for ev in $EVENTS; do
      declare -A ok=() ct=() bad=() miss=()
      n=0
      for R in $POSITIONS; do
        rm -rf "$W/t"
        (
          unset NCCLSCOPE_MODE NCCLSCOPE_WATCHDOG_S NCCLSCOPE_FLIGHT_SIZE NCCLSCOPE_CAPTURE NCCLSCOPE_DISABLE
          [ "$mode" = flight ] && export NCCLSCOPE_MODE=flight NCCLSCOPE_WATCHDOG_S=1 NCCLSCOPE_FLIGHT_SIZE=1M
          NCCLSCOPE_EVENTS=$ev NCCLSCOPE_DIR=$W/t exec "$SIM" --plugin "$PLUGIN" --scenario "$sc" \
            --ranks "$RANKS" --procs "$PROCS" --iters "$ITERS" --fault "stall:$R:$SEQ" --hang-s "$HANG_S" \
            --clock model
        ) >"$W/sim.txt" 2>&1 && rc=0 || rc=$?
        [ $rc -eq 3 ] || { echo "diagnose_rate: nccl-sim $sc $mode $ev stall:$R exited $rc, not 3 (hung): $(tail -2 "$W/sim.txt")" >&2; exit 1; }
        n=$((n + 1))
        for i in "${!clis[@]}"; do
          "${clis[$i]}" diagnose --json "$W/t" >"$W/d.json" 2>/dev/null || true
          read -r o summary < <(outcome "$R")
          case $o in
          correct) ok[$i]=$((${ok[$i]:-0} + 1)) ;;
          cannot_tell) ct[$i]=$((${ct[$i]:-0} + 1)) ;;
          wrong) bad[$i]=$((${bad[$i]:-0} + 1)) ;;
          *) miss[$i]=$((${miss[$i]:-0} + 1)) ;;
          esac
          [ "$VERBOSE" = 1 ] && echo "job ${labels[$i]} $sc $mode $ev stall:$R: $o: $summary"
        done
      done
      for i in "${!clis[@]}"; do
        printf '| %-8s | %-13s | %-6s | %-7s | %4d | %7d | %11d | %13d | %6d |\n' "${labels[$i]}" "$sc" "$mode" "$ev" $n \
          "${ok[$i]:-0}" "${ct[$i]:-0}" "${bad[$i]:-0}" "${miss[$i]:-0}"
        echo "diagnose_rate: ${labels[$i]} $sc $mode $ev runs=$n correct=${ok[$i]:-0} cannot_tell=${ct[$i]:-0} wrong=${bad[$i]:-0} missed=${miss[$i]:-0}" >&2
      done
      unset ok ct bad miss
    done
  done
done
