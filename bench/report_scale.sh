#!/usr/bin/env bash
# report_scale.sh - `ncclscope report` on a large job: records a 1024-rank nccl-sim job in 16
# processes with the plugin, then analyses it under /usr/bin/time -v. Prints, per recording: the
# trace size, events, collective instances and rank operations, how long recording and report took
# (and the report's reading passes), the report's peak resident memory and the most rank
# operations it held at once. Recordings of different lengths show that the report's memory does
# not grow with the job (docs/benchmarks.md, "Report at scale").
#
# Usage: bench/report_scale.sh [BUILD_DIR]        (default build/)
#   RANKS=1024 PROCS=16 THREADS=4   the job (nccl-sim --ranks/--procs/--threads: 4 user threads
#                                   per process drive its 64 ranks; one thread per rank is 1024
#                                   threads, too many for the simulated coupling on 2 cores)
#   ITERS="50 200 800"              collectives per rank, one recording per value
#   SCENARIO=allreduce              nccl-sim scenario
#   COUPLE=on                       nccl-sim --couple: a collective ends when all its ranks arrived
#   EVENTS=                         NCCLSCOPE_EVENTS for the recording (default: the plugin's)
#   KEEP=DIR                        keep the traces under DIR (default: a temporary directory)
#   REUSE=1                         with KEEP: analyse the traces kept there instead of recording
#                                   again (record s is then "-")
set -euo pipefail
B=${1:-build}
SIM=$B/nccl-sim CLI=$B/ncclscope PLUGIN=$B/libnccl-profiler-ncclscope.so
RANKS=${RANKS:-1024} PROCS=${PROCS:-16} THREADS=${THREADS:-4} ITERS=${ITERS:-50 200 800}
SCENARIO=${SCENARIO:-allreduce} COUPLE=${COUPLE:-on}
for f in "$SIM" "$CLI" "$PLUGIN"; do [ -e "$f" ] || { echo "report_scale: no $f (build first)" >&2; exit 2; }; done
[ -x /usr/bin/time ] || { echo "report_scale: needs /usr/bin/time (Debian: apt-get install time)" >&2; exit 2; }
if [ -n "${KEEP:-}" ]; then W=$KEEP; mkdir -p "$W"; else W=$(mktemp -d); trap 'rm -rf "$W"' EXIT; fi
PLUGIN=$(realpath "$PLUGIN")

kv() { sed -n "s/.*[ ^]$1=\([^ ]*\).*/\1/p" | head -1; }
tv() { sed -n "s/^[[:space:]]*$1: *//p" "$2" | head -1; } # a /usr/bin/time -v field
secs() { awk -F: '{s = 0; for (i = 1; i <= NF; i++) s = s * 60 + $i; printf "%.2f", s}'; } # [h:]m:ss.cc

echo "report at scale: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
echo "job: nccl-sim --scenario $SCENARIO --ranks $RANKS --procs $PROCS --threads $THREADS --couple $COUPLE, events ${EVENTS:-default}"
printf '| %5s | %9s | %5s | %9s | %9s | %9s | %8s | %8s | %11s | %9s | %9s | %9s |\n' iters "trace MiB" files events "rank ops" instances "record s" "report s" "passes s" "peak RSS" "RSS B/op" "held ops"
printf '|%s|\n' "-------|-----------|-------|-----------|-----------|-----------|----------|----------|-------------|-----------|-----------|-----------"
rm -f "$W/growth"
for it in $ITERS; do
  d=$W/t-$it
  if [ -n "${REUSE:-}" ] && [ -n "${KEEP:-}" ] && [ -s "$W/sim-$it.out" ] && [ -d "$d" ]; then
    rec=-
  else
    rm -rf "$d"
    t0=$(date +%s.%N)
    env ${EVENTS:+NCCLSCOPE_EVENTS=$EVENTS} NCCLSCOPE_DIR="$d" "$SIM" --plugin "$PLUGIN" --scenario "$SCENARIO" \
      --ranks "$RANKS" --procs "$PROCS" --threads "$THREADS" --iters "$it" --couple "$COUPLE" >"$W/sim-$it.out" 2>&1 ||
      { tail -5 "$W/sim-$it.out"; echo "report_scale: nccl-sim failed" >&2; exit 1; }
    rec=$(printf '%.1f' "$(echo "$(date +%s.%N) - $t0" | bc)")
  fi
  bytes=$(du -sb "$d" | cut -f1) files=$(ls "$d" | wc -l)
  events=$(kv starts <"$W/sim-$it.out")
  /usr/bin/time -v "$CLI" report --timing "$d" >"$W/report-$it.txt" 2>"$W/time-$it.txt" ||
    { cat "$W/time-$it.txt"; echo "report_scale: report failed" >&2; exit 1; }
  "$CLI" report --json "$d" >"$W/report-$it.json"
  read -r inst ops held < <(python3 -c "import json,sys
r=json.load(open(sys.argv[1])); c=r['collectives']; s=r.get('analysis', {})
print(c['instances'], c['rank_ops'], s.get('peak_held_ops', '-'))" "$W/report-$it.json")
  # ncclscope report --timing: "N passes: a s + b s" (an older report has no --timing: "-")
  passes=$(sed -n 's/.*passes: //p' "$W/time-$it.txt" | sed 's/ *(.*//; s/ s//g; s/ //g' | head -1)
  passes=${passes:--}
  wall=$(tv "Elapsed (wall clock) time (h:mm:ss or m:ss)" "$W/time-$it.txt" | secs)
  rss=$(tv "Maximum resident set size (kbytes)" "$W/time-$it.txt")
  printf '| %5s | %9.1f | %5s | %9s | %9s | %9s | %8s | %8s | %11s | %6.1f MiB | %9.0f | %9s |\n' "$it" \
    "$(echo "$bytes / 1048576" | bc -l)" "$files" "$events" "$ops" "$inst" "$rec" "$wall" "$passes" \
    "$(echo "$rss / 1024" | bc -l)" "$(echo "$rss * 1024 / $ops" | bc -l)" "$held"
  echo "$it $rss $ops $bytes" >>"$W/growth"
done
# growth between the first and the last recording: resident bytes per extra rank operation
if [ "$(wc -l <"$W/growth")" -gt 1 ]; then
  awk 'NR == 1 {r0 = $2; o0 = $3; b0 = $4} {r1 = $2; o1 = $3; b1 = $4}
       END {if (o1 > o0) printf "growth: %.0f B of peak RSS per extra rank operation (trace: %.0f B per rank operation)\n", (r1 - r0) * 1024 / (o1 - o0), (b1 - b0) / (o1 - o0)}' "$W/growth"
fi
echo "report (last recording), first lines:"
sed -n '1,3p' "$W/report-${ITERS##* }.txt" | sed 's/^/  /'
