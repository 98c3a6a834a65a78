#!/usr/bin/env bash
# Fuzz the trace reader, then the metrics endpoint's request path, with libFuzzer (clang, ASan +
# UBSan); each for SECONDS.
# Usage: scripts/fuzz.sh [SECONDS] [--merge]
#   SECONDS  how long to fuzz (default 60)
#   --merge  afterwards, minimise what was found together with tests/fuzz/corpus back into
#            tests/fuzz/corpus (commit the result)
# New inputs collect in build-fuzz/corpus (the committed corpus is only read); a crash leaves
# build-fuzz/artifacts/crash-* and makes this script fail. Replay one with
#   build-fuzz/fuzz_reader build-fuzz/artifacts/crash-...
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
cmake --build "$dir" --target fuzz_reader fuzz_http -j"$(nproc)" >/dev/null
mkdir -p "$dir/corpus" "$dir/artifacts"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
echo "fuzz: reader for ${secs}s (corpus: tests/fuzz/corpus + $dir/corpus)"
"$dir/fuzz_reader" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
  -print_final_stats=1 -artifact_prefix="$dir/artifacts/" "$dir/corpus" tests/fuzz/corpus
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
  echo "fuzz: tests/fuzz/corpus now holds $(ls tests/fuzz/corpus | wc -l) files," \
    "$(du -sh tests/fuzz/corpus | cut -f1)"
fi
