#!/usr/bin/env bash
# Fuzz the read path with libFuzzer (clang, ASan + UBSan): the trace reader alone (fuzz_reader)
# and the whole path, reader -> job model -> report -> every export -> diagnose (fuzz_job,
# tests/fuzz/fuzz_job.c), each for half of SECONDS; then the metrics endpoint's request path
# (fuzz_http) for SECONDS.
# Usage: scripts/fuzz.sh [SECONDS] [--merge]
#   SECONDS  how long to fuzz (default 60): the reader and the whole path half each, then the
#            HTTP endpoint SECONDS (so CI fuzzes as long as before the whole path was added)
#   --merge  afterwards, minimise what was found together with the committed corpora back into
#            tests/fuzz/corpus and tests/fuzz/job_corpus (commit the result)
# New inputs collect in build-fuzz/corpus and build-fuzz/job_corpus (the committed corpora are
# only read); a crash leaves build-fuzz/artifacts/crash-* (reader) or build-fuzz/artifacts/job-*
# and makes this script fail. Replay one with
#   build-fuzz/fuzz_reader build-fuzz/artifacts/crash-...
#   NCS_FUZZ_VERBOSE=1 build-fuzz/fuzz_job build-fuzz/artifacts/job-crash-...
set -euo pipefail
cd "$(dirname "$0")/.."
secs=60 merge=0
for a in "$@"; do
  case $a in
  --merge) merge=1 ;;
  ''|*[!0-9]*) echo "usage: scripts/fuzz.sh [SECONDS] [--merge]" >&2; exit 2 ;;
  *) secs=$a ;;
  esac
done
scripts/deps.sh test
dir=${NCS_FUZZ_BUILD:-build-fuzz}
CC=clang cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DNCS_FUZZ=ON >/dev/null
cmake --build "$dir" --target fuzz_reader fuzz_job fuzz_http -j"$(nproc)" >/dev/null
mkdir -p "$dir/corpus" "$dir/job_corpus" "$dir/artifacts"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
half=$((secs / 2)) rest=$((secs - secs / 2))
echo "fuzz: reader for ${half}s (corpus: tests/fuzz/corpus + $dir/corpus)"
"$dir/fuzz_reader" -max_total_time="$half" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
  -print_final_stats=1 -artifact_prefix="$dir/artifacts/" "$dir/corpus" tests/fuzz/corpus
# the whole path: a job is up to 4 files; the reader's corpus seeds it with single files
echo "fuzz: the whole read path for ${rest}s (corpus: tests/fuzz/job_corpus + $dir/job_corpus)"
# fuzz_job sends the verbs' output, and so a sanitizer's report, to /dev/null: on a failure the
# newest artifact is run again with NCS_FUZZ_VERBOSE=1 so that the log shows what went wrong
if ! "$dir/fuzz_job" -max_total_time="$rest" -timeout=30 -rss_limit_mb=2048 -max_len=262144 \
  -print_final_stats=1 -artifact_prefix="$dir/artifacts/job-" "$dir/job_corpus" \
  tests/fuzz/job_corpus tests/fuzz/corpus; then
  a=$(ls -t "$dir"/artifacts/job-* 2>/dev/null | head -n 1)
  if [ -n "$a" ]; then
    echo "fuzz: the whole read path failed; $a again, with NCS_FUZZ_VERBOSE=1:"
    NCS_FUZZ_VERBOSE=1 "$dir/fuzz_job" "$a" 2>&1 | grep -v '^INFO' | tail -n 60 || true
  fi
  exit 1
fi
# the HTTP endpoint: bytes from a client to libmicrohttpd and src/metrics/http.c (one request per
# connection, so much slower per input); its corpus is tests/fuzz/http_corpus
mkdir -p "$dir/http_corpus"
echo "fuzz: metrics HTTP endpoint for ${secs}s (corpus: tests/fuzz/http_corpus + $dir/http_corpus)"
"$dir/fuzz_http" -max_total_time="$secs" -timeout=20 -rss_limit_mb=2048 -max_len=65536 \
  -print_final_stats=1 -artifact_prefix="$dir/artifacts/http-" "$dir/http_corpus" tests/fuzz/http_corpus
if [ $merge = 1 ]; then
  rm -rf "$dir/merged" && mkdir -p "$dir/merged"
  "$dir/fuzz_reader" -merge=1 -max_len=65536 "$dir/merged" tests/fuzz/corpus "$dir/corpus"
  rm -f tests/fuzz/corpus/*
  cp "$dir"/merged/* tests/fuzz/corpus/
  rm -rf "$dir/merged" && mkdir -p "$dir/merged"
  "$dir/fuzz_job" -merge=1 -max_len=262144 "$dir/merged" tests/fuzz/job_corpus "$dir/job_corpus"
  rm -f tests/fuzz/job_corpus/*
  cp "$dir"/merged/* tests/fuzz/job_corpus/
  echo "fuzz: tests/fuzz/corpus now holds $(ls tests/fuzz/corpus | wc -l) files," \
    "$(du -sh tests/fuzz/corpus | cut -f1); tests/fuzz/job_corpus $(ls tests/fuzz/job_corpus | wc -l)," \
    "$(du -sh tests/fuzz/job_corpus | cut -f1)"
fi
