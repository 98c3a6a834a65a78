#!/usr/bin/env bash
# Event-cost benchmark: ncclscope vs an empty plugin vs no plugin, with 1 and 2 producer
# threads, driven by nccl-sim's flood scenario. Prints a table and the plugin's memory.
#
# Usage: bench/event_cost.sh [BUILD_DIR]     (default build/)
#   EVENTS=4000000  calls per unpaced run      RATE=5000000  paced rate (calls/s, all threads)
#   PACED_S=3       seconds per paced run      SUSTAIN_S=10  seconds of the sustained-rate test
#   REPS=3          repetitions (the table shows the median)
#
# Columns:
#   max ev/s      unpaced: as fast as the producers can call (the writer may fall behind; then
#                 events are dropped and counted, never blocked on)
#   ns/ev max     unpaced: time inside the call loop / calls
#   ns/ev @RATE   paced at RATE: time inside the calls only (busy-wait excluded). This is the
#                 steady-state cost, with the writer keeping up.
#   drops         events ncclscope dropped in the paced runs, summed over the repetitions
set -euo pipefail
B=${1:-build}
SIM=$B/nccl-sim; [ -x "$SIM" ] || SIM=$B/sim/nccl-sim
CLI=$B/ncclscope
NCS=$(realpath "$B/libnccl-profiler-ncclscope.so")
EMPTY=$(realpath "$(ls "$B"/libnccl-profiler-empty.so "$B"/bench/libnccl-profiler-empty.so 2>/dev/null | head -1)")
EVENTS=${EVENTS:-4000000} RATE=${RATE:-5000000} PACED_S=${PACED_S:-3} SUSTAIN_S=${SUSTAIN_S:-10} REPS=${REPS:-3}
[ -x "$SIM" ] && [ -x "$CLI" ] || { echo "build first: scripts/build.sh" >&2; exit 2; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
export NCCLSCOPE_EVENTS=all

field() { sed -n "s/.*[ ^]$1=\([^ ]*\).*/\1/p" | head -1; }
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
# the job-wide total is the last "drops" line of dump --stats
drops_of() { "$CLI" dump --stats "$1" 2>/dev/null | sed -n 's/^  drops \([0-9]*\).*/\1/p' | tail -1 | awk '{print $1+0}'; }

run() { # plugin threads extra-args... -> prints the flood line
  local p=$1 t=$2; shift 2
  rm -rf "$tmp/trace"
  NCCLSCOPE_DIR="$tmp/trace" "$SIM" --plugin "$p" --scenario flood --threads "$t" "$@" 2>/dev/null | grep '^flood:'
}

echo "event cost: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), events=all, median of $REPS"
printf '| %-9s | %7s | %12s | %9s | %11s | %6s |\n' plugin threads "max ev/s" "ns/ev max" "ns/ev @$((RATE / 1000000))M/s" drops
printf '|%s|\n' "-----------|---------|--------------|-----------|-------------|--------"
declare -A NSP DROPS CALLS
for name in none empty ncclscope; do
  case $name in none) p=none ;; empty) p=$EMPTY ;; ncclscope) p=$NCS ;; esac
  for t in 1 2; do
    eps=(); nsm=(); nsp=(); drops=0 calls=0
    for r in $(seq "$REPS"); do
      l=$(run "$p" "$t" --events "$EVENTS")
      eps+=("$(echo "$l" | field events_per_sec)"); nsm+=("$(echo "$l" | field ns_per_event)")
      l=$(run "$p" "$t" --rate "$RATE" --duration "$PACED_S")
      nsp+=("$(echo "$l" | field ns_per_event)")
      calls=$((calls + $(echo "$l" | field events | awk '{print $1 + 0}')))
      [ "$name" = ncclscope ] && drops=$((drops + $(drops_of "$tmp/trace")))
    done
    m_eps=$(printf '%s\n' "${eps[@]}" | median); m_nsm=$(printf '%s\n' "${nsm[@]}" | median)
    m_nsp=$(printf '%s\n' "${nsp[@]}" | median); NSP[$name$t]=$m_nsp DROPS[$name$t]=$drops CALLS[$name$t]=$calls
    printf '| %-9s | %7s | %12.0f | %9.2f | %11.2f | %6s |\n' "$name" "$t" "$m_eps" "$m_nsm" "$m_nsp" \
      "$([ $name = ncclscope ] && echo $drops || echo -)"
  done
done
for t in 1 2; do
  warn=
  # a dropped call skips the record's stores: with drops the paced time is not ncclscope's cost
  [ "${DROPS[ncclscope$t]}" -gt 0 ] && warn=" (NOT A MEASURE: ${DROPS[ncclscope$t]} of ${CALLS[ncclscope$t]} paced calls ($(awk -v d="${DROPS[ncclscope$t]}" -v c="${CALLS[ncclscope$t]}" 'BEGIN{printf "%.1f", c ? 100*d/c : 0}')%) were dropped: the writer fell behind; a quieter machine or a lower RATE)"
  echo "ncclscope cost over the empty plugin at ${RATE} calls/s, $t thread(s): $(awk -v a="${NSP[ncclscope$t]}" -v b="${NSP[empty$t]}" 'BEGIN{printf "%.2f", a-b}') ns/event$warn"
done

echo
echo "sustained: ${RATE} calls/s for ${SUSTAIN_S} s, default buffers (NCCLSCOPE_BUFFER_SIZE unset)"
echo "  (2 threads wait with sched_yield, as an idle NCCL proxy thread does: two spinning producers"
echo "   would leave the writer no core on a 2-core machine)"
for t in 1 2; do
  pace=spin; [ "$t" -gt 1 ] && [ "$(nproc)" -le "$t" ] && pace=yield
  rm -rf "$tmp/trace"
  /usr/bin/time -f "%M" -o "$tmp/rss" env NCCLSCOPE_DIR="$tmp/trace" "$SIM" --plugin "$NCS" --scenario flood \
    --threads "$t" --rate "$RATE" --duration "$SUSTAIN_S" --pace "$pace" 2>/dev/null | grep '^flood:' > "$tmp/line"
  rss=$(cat "$tmp/rss")
  /usr/bin/time -f "%M" -o "$tmp/rss0" "$SIM" --plugin none --scenario flood --threads "$t" --rate "$RATE" \
    --duration 1 >/dev/null 2>&1
  rss0=$(cat "$tmp/rss0")
  bytes=$(du -sb "$tmp/trace" | cut -f1)
  ev=$(field events < "$tmp/line")
  echo "  threads=$t pace=$pace: events=$ev achieved=$(field events_per_sec < "$tmp/line")/s drops=$(drops_of "$tmp/trace") \
trace=$((bytes / 1048576)) MiB ($(awk -v b="$bytes" -v e="$ev" 'BEGIN{printf "%.1f", b/e}') B/event) \
peak RSS $((rss / 1024)) MiB vs $((rss0 / 1024)) MiB without plugin (plugin ~$(((rss - rss0) / 1024)) MiB)"
done
