#!/usr/bin/env bash
# Read-side speed: every verb that reads a trace, on one trace, timed with /usr/bin/time, and
# optionally against another ncclscope (before/after) in interleaved order (docs/benchmarks.md,
# "Read speed").
#
# Usage: bench/read_speed.sh [BUILD_DIR]          (default build/)
#   TRACE=DIR      the trace directory to read (kept); default: record one with nccl-sim
#   RANKS=64 PROCS=16 ITERS=100 SCENARIO=mixed   the job recorded when TRACE is not given (every
#                  event; ITERS=100 is about 160 MB and 8.8 M records)
#   BASE=EXE       a second ncclscope (another version) timed on the same trace, each repetition
#                  right after this tree's, so that both see the same machine
#   REPS=3         repetitions per verb and program; the table gives the median
#   VERBS="stats report diagnose perfetto otf2 chrome sqlite"
#   OUT=DIR        where a recorded trace and the outputs go (default: a temporary directory under
#                  $TMPDIR, removed at the end)
#
# "records" are starts + stops + states as `dump --stats` counts them (the measure of issue 36);
# M rec/s is records / the median wall time; peak RSS is /usr/bin/time's maximum resident set
# size. Exports write to OUT (the same disk). The load average is read before and after each
# verb: when it exceeds the number of cores the line says so, and its times are not a measure.
set -euo pipefail
B=${1:-build}
RANKS=${RANKS:-64} PROCS=${PROCS:-16} ITERS=${ITERS:-100} SCENARIO=${SCENARIO:-mixed}
REPS=${REPS:-3} VERBS=${VERBS:-"stats report diagnose perfetto otf2 chrome sqlite"}
CLI=$(cd "$(dirname "$B/ncclscope")" && pwd)/ncclscope
SIM=$B/nccl-sim PLUGIN=$B/libnccl-profiler-ncclscope.so
[ -x "$CLI" ] || { echo "read_speed.sh: build first (scripts/build.sh): no $B/ncclscope" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "read_speed.sh: needs /usr/bin/time (apt-get install time)" >&2; exit 2; }
[ -z "${BASE:-}" ] || [ -x "$BASE" ] || { echo "read_speed.sh: BASE=$BASE is not a program" >&2; exit 2; }
case $REPS in '' | *[!0-9]* | 0) echo "read_speed.sh: REPS must be a positive integer" >&2; exit 2 ;; esac
if [ -n "${OUT:-}" ]; then
  work=$OUT
  mkdir -p "$work"
else
  work=$(mktemp -d -p "${TMPDIR:-/tmp}" ncs-read-speed.XXXXXX)
  trap 'rm -rf "$work"' EXIT
fi
trace=${TRACE:-}
if [ -z "$trace" ]; then
  trace=$work/trace
  rm -rf "$trace"
  echo "recording: nccl-sim --scenario $SCENARIO --ranks $RANKS --procs $PROCS --iters $ITERS (every event)"
  NCCLSCOPE_DIR=$trace NCCLSCOPE_EVENTS=all "$SIM" --plugin "$PLUGIN" --scenario "$SCENARIO" \
    --ranks "$RANKS" --procs "$PROCS" --iters "$ITERS" >"$work/sim.log" 2>&1 ||
    { echo "read_speed.sh: nccl-sim failed: $(tail -3 "$work/sim.log")" >&2; exit 1; }
fi
[ -d "$trace" ] || { echo "read_speed.sh: no trace directory $trace" >&2; exit 2; }
# the job's table only (the one after "== job:"; each file has its own table before it)
records=$("$CLI" dump --stats "$trace" 2>/dev/null |
  awk '/^== job/{job=1} /^  event type /{on=job; next} on && NF >= 6 && $2 ~ /^[0-9]+$/ {s += $2 + $3 + $4} /^==/{on=0} END {print s + 0}')
mb=$(du -sm "$trace" | awk '{print $1}')
cores=$(nproc)
echo "trace: $trace, $mb MB, $records records (starts + stops + states); $cores cores; $(date -u +%Y-%m-%dT%H:%MZ)"
[ "$records" -gt 0 ] || { echo "read_speed.sh: the trace has no records" >&2; exit 1; }

args() { # VERB: the command line after the program
  case $1 in
  stats) echo "dump --stats $trace" ;;
  report) echo "report --json $trace" ;;
  diagnose) echo "diagnose --json $trace" ;;
  perfetto | otf2 | chrome | sqlite) echo "export -q --force --format $1 -o $work/out.$1 $trace" ;;
  *) echo "read_speed.sh: unknown verb $1" >&2; exit 2 ;;
  esac
}
run() { # EXE VERB -> "user wall rss_kb" on stdout
  local a
  a=$(args "$2")
  rm -rf "$work/out.$2"
  # diagnose exits 1 for a hang and report 4 for damage: a status is not a failure of the timing
  /usr/bin/time -f "%U %e %M" -o "$work/time.txt" "$1" $a >/dev/null 2>"$work/err.txt" || true
  grep -q "^Command terminated by signal" "$work/time.txt" &&
    { echo "read_speed.sh: $1 $a: killed: $(cat "$work/err.txt" | tail -2)" >&2; exit 1; }
  tail -1 "$work/time.txt"
}
median() { sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }

printf "%-9s %-6s %9s %9s %9s %10s  %s\n" verb build "user s" "wall s" "M rec/s" "peak MiB" note
for v in $VERBS; do
  args "$v" >/dev/null
  l0=$(cut -d' ' -f1 /proc/loadavg)
  : >"$work/this.txt"
  : >"$work/base.txt"
  for ((i = 0; i < REPS; i++)); do
    run "$CLI" "$v" >>"$work/this.txt"
    [ -z "${BASE:-}" ] || run "$BASE" "$v" >>"$work/base.txt"
  done
  l1=$(cut -d' ' -f1 /proc/loadavg)
  note=
  awk -v a="$l0" -v b="$l1" -v c="$cores" 'BEGIN {exit !(a > c || b > c)}' &&
    note="load average $l0 -> $l1 on $cores cores: not a measure"
  for which in this base; do
    f=$work/$which.txt
    [ -s "$f" ] || continue
    u=$(cut -d' ' -f1 "$f" | median) w=$(cut -d' ' -f2 "$f" | median) m=$(cut -d' ' -f3 "$f" | median)
    awk -v v="$v" -v b="$which" -v u="$u" -v w="$w" -v m="$m" -v r="$records" -v n="$note" 'BEGIN {
      printf "%-9s %-6s %9.2f %9.2f %9.2f %10.0f  %s\n", v, b, u, w, (w > 0 ? r / w / 1e6 : 0), m / 1024, n }'
  done
done
