#!/usr/bin/env bash
# The whole test suite: a release build, an ASan+UBSan build and a TSan build, each running
# every ctest test, then a short fuzzing run of the trace reader and the whole read path.
# Usage: scripts/test.sh [--quick]   (--quick: release build only, no fuzzing)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh test
quick=0
[ "${1:-}" = --quick ] && quick=1
jobs=$(nproc)

passed=0 failed=0
log=$(mktemp); trap 'rm -f "$log"' EXIT
run_suite() { # name, build dir, cmake args...
  local name=$1 dir=$2
  shift 2
  echo "=== $name ==="
  cmake -S . -B "$dir" "$@" >/dev/null
  cmake --build "$dir" -j"$jobs" >/dev/null
  local rc=0
  (cd "$dir" && ctest --output-on-failure -j"$jobs" --timeout 300) | tee "$log" || rc=$?
  # "100% tests passed, 0 tests failed out of 105"
  local f n
  f=$(sed -n 's/.* \([0-9]*\) tests failed out of \([0-9]*\).*/\1/p' "$log" | tail -1)
  n=$(sed -n 's/.* \([0-9]*\) tests failed out of \([0-9]*\).*/\2/p' "$log" | tail -1)
  passed=$((passed + ${n:-0} - ${f:-0})) failed=$((failed + ${f:-0}))
  [ "$rc" -eq 0 ] && [ "${n:-0}" -gt 0 ] || { echo "tests: $passed passed, $((failed > 0 ? failed : 1)) failed"; exit 1; }
}

run_suite release build -DCMAKE_BUILD_TYPE=RelWithDebInfo
if [ $quick = 0 ]; then
  # halt_on_error: a sanitizer report fails the test instead of scrolling past
  export ASAN_OPTIONS=detect_leaks=1:halt_on_error=1:abort_on_error=1
  export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
  export TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1
  run_suite "asan+ubsan" build-asan -DCMAKE_BUILD_TYPE=Debug -DNCS_SANITIZE=address,undefined
  run_suite tsan build-tsan -DCMAKE_BUILD_TYPE=Debug -DNCS_SANITIZE=thread
  if [ -x scripts/fuzz.sh ]; then
    echo "=== fuzz (reader, whole read path) ==="
    scripts/fuzz.sh "${NCS_FUZZ_SECONDS:-60}"
  fi
fi
echo "tests: $passed passed, $failed failed"
