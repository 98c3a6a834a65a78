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
# ctest in DIR with SELECTION at -jJOBS; its counts are added to passed/failed; 1 on a failure
ctest_run() { # dir, jobs, selection...
  local dir=$1 j=$2 rc=0
  shift 2
  (cd "$dir" && ctest --output-on-failure -j"$j" --timeout 300 "$@") | tee "$log" || rc=$?
  # "100% tests passed, 0 tests failed out of 105"
  local f n
  f=$(sed -n 's/.* \([0-9]*\) tests failed out of \([0-9]*\).*/\1/p' "$log" | tail -1)
  n=$(sed -n 's/.* \([0-9]*\) tests failed out of \([0-9]*\).*/\2/p' "$log" | tail -1)
  passed=$((passed + ${n:-0} - ${f:-0})) failed=$((failed + ${f:-0}))
  [ "$rc" -eq 0 ] && [ "${n:-0}" -gt 0 ]
}
# name, build dir, "all" or "untimed", cmake args... The "timing" tests (below) run after the
# others, one at a time: their verdicts compare durations, which tests running beside them on a
# small machine would skew; "untimed" leaves them out.
run_suite() {
  local name=$1 dir=$2 which=$3
  shift 3
  echo "=== $name ==="
  cmake -S . -B "$dir" "$@" >/dev/null
  cmake --build "$dir" -j"$jobs" >/dev/null
  local ok=1
  ctest_run "$dir" "$jobs" -LE timing || ok=0
  if [ "$which" = all ] && [ $ok = 1 ]; then
    echo "=== $name (timing tests, one at a time) ==="
    ctest_run "$dir" 1 -L timing || ok=0
  fi
  [ $ok = 1 ] || { echo "tests: $passed passed, $((failed > 0 ? failed : 1)) failed"; exit 1; }
}

# The "timing" tests (tests/CMakeLists.txt, NCS_TIMING_TESTS) under TSan: their verdicts rest on
# injected delays that the sanitizer's slowdown swamps, so they run one at a time and fail this
# stage only on a ThreadSanitizer report (a race, a lock-order inversion); the other stages judge
# them in full.
tsan_timing() {
  echo "=== tsan (timing tests: ThreadSanitizer reports only) ==="
  local out n
  out=$(mktemp)
  (cd build-tsan && ctest --output-on-failure -j1 --timeout 300 -L timing) >"$out" 2>&1 || true
  n=$(grep -c "Test *#" "$out" || true)
  if grep -q "ThreadSanitizer" "$out"; then
    cat "$out"; rm -f "$out"
    echo "tests: $passed passed, $((failed + 1)) failed (a ThreadSanitizer report in a timing test)"; exit 1
  fi
  grep "Test *#" "$out" | sed 's/^ *[0-9]*\/[0-9]* //'
  echo "timing tests under TSan: $n run, no ThreadSanitizer report (their own verdicts are judged by the other stages)"
  rm -f "$out"
}

run_suite release build all -DCMAKE_BUILD_TYPE=RelWithDebInfo
if [ $quick = 0 ]; then
  # halt_on_error: a sanitizer report fails the test instead of scrolling past
  export ASAN_OPTIONS=detect_leaks=1:halt_on_error=1:abort_on_error=1
  export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
  export TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1
  run_suite "asan+ubsan" build-asan all -DCMAKE_BUILD_TYPE=Debug -DNCS_SANITIZE=address,undefined
  run_suite tsan build-tsan untimed -DCMAKE_BUILD_TYPE=Debug -DNCS_SANITIZE=thread
  tsan_timing
  if [ -x scripts/fuzz.sh ]; then
    echo "=== fuzz (reader, whole read path) ==="
    scripts/fuzz.sh "${NCS_FUZZ_SECONDS:-60}"
  fi
fi
echo "tests: $passed passed, $failed failed"
