#!/usr/bin/env bash
# Export benchmark: record a big job with nccl-sim, then time `ncclscope export` on it and
# report records/s and peak memory (docs/timeline.md, "Speed and memory").
#
# Usage: bench/export_bench.sh [BUILD_DIR]          (default build/)
#   RANKS=64 PROCS=16 ITERS=800 SCENARIO=mixed   the job: 64 ranks in 16 processes, about
#                                                1 M records per rank (60 M in all, 1.1 GB)
#   JOBS="1 0"       export threads to try (0: one per core)
#   FORMAT=perfetto  or chrome (JSON is about 5x bigger and slower to write)
#   TRACE=DIR        export this trace directory instead of recording one (kept)
#   OUT=DIR          where the trace and the output go (default: a temporary directory under
#                    $TMPDIR, removed at the end; the output needs about 3.5x the trace's size)
#
# "records" are the records of the trace files (START, STOP, STATE, COMPLETE, EXPIRED), what
# `dump` prints one line each for; peak RSS is /usr/bin/time's maximum resident set size.
set -euo pipefail
B=${1:-build}
RANKS=${RANKS:-64} PROCS=${PROCS:-16} ITERS=${ITERS:-800} SCENARIO=${SCENARIO:-mixed}
JOBS=${JOBS:-"1 0"} FORMAT=${FORMAT:-perfetto}
SIM=$B/nccl-sim
CLI=$B/ncclscope
PLUGIN=$B/libnccl-profiler-ncclscope.so
[ -x "$SIM" ] && [ -x "$CLI" ] && [ -f "$PLUGIN" ] || { echo "build first: scripts/build.sh" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "needs /usr/bin/time (apt-get install time)" >&2; exit 2; }
if [ -n "${OUT:-}" ]; then
  work=$OUT
  mkdir -p "$work"
else
  work=$(mktemp -d -p "${TMPDIR:-/tmp}" ncs-export-bench.XXXXXX)
  trap 'rm -rf "$work"' EXIT
fi

trace=${TRACE:-}
if [ -z "$trace" ]; then
  trace=$work/trace
  rm -rf "$trace"
  echo "recording: nccl-sim --scenario $SCENARIO --ranks $RANKS --procs $PROCS --iters $ITERS"
  t0=$(date +%s.%N)
  # the monotonic clock keeps the GPU mapping exact (the TSC conversion can drift in short runs)
  NCCLSCOPE_DIR=$trace NCCLSCOPE_EVENTS=all NCCLSCOPE_CLOCK=monotonic \
    "$SIM" --plugin "$PLUGIN" --scenario "$SCENARIO" --ranks "$RANKS" --procs "$PROCS" \
    --iters "$ITERS" >"$work/sim.out"
  t1=$(date +%s.%N)
  drops=$("$CLI" dump --stats "$trace" | sed -n 's/^  drops \([0-9]*\).*/\1/p' | tail -1)
  echo "recorded in $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }') s; records dropped by the plugin: ${drops:-?}"
fi
in_bytes=$(du -cb "$trace"/*.nstrace | tail -1 | cut -f1)
files=$(ls "$trace"/*.nstrace | wc -l)
ext=pftrace
[ "$FORMAT" = chrome ] && ext=json

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
printf '| %-5s | %-8s | %11s | %9s | %10s | %8s | %11s | %9s | %8s |\n' jobs format records "input MB" \
  "output MB" seconds "M records/s" "peak RSS" "RSS/input"
printf '|%s|\n' "-------|----------|-------------|-----------|------------|----------|-------------|-----------|----------"
for j in $JOBS; do
  out=$work/out.$ext
  rm -f "$out"
  /usr/bin/time -f 'TIME %M %e' -o "$work/time" "$CLI" export --jobs "$([ "$j" = 0 ] && nproc || echo "$j")" \
    -f "$FORMAT" "$trace" -o "$out" 2>"$work/export.err" || { cat "$work/export.err" >&2; exit 1; }
  read -r _ rss secs <"$work/time"
  records=$(sed -n 's/.* \([0-9]*\) records from .*/\1/p' "$work/export.err")
  out_bytes=$(stat -c %s "$out")
  awk -v j="$([ "$j" = 0 ] && nproc || echo "$j")" -v f="$FORMAT" -v r="$records" -v i="$in_bytes" \
    -v o="$out_bytes" -v s="$secs" -v m="$rss" 'BEGIN {
      printf "| %-5s | %-8s | %11d | %9.1f | %10.1f | %8.2f | %11.2f | %6.1f MB | %7.1f%% |\n",
        j, f, r, i / 1e6, o / 1e6, s, r / s / 1e6, m / 1024, m * 1024 * 100 / i }'
  rm -f "$out"
done
echo "($files trace files, $RANKS ranks; records/s over the whole export: both passes, writing)"
