#!/usr/bin/env bash
# The whole test suite: a release build, an ASan+UBSan build and a TSan build, each running
# every ctest test, then a short fuzzing run of the trace reader and the whole read path.
# Usage: scripts/test.sh [--quick]   (--quick: release build only, no fuzzing)
#
# Every stage runs, whatever the stages before it did: a failure in one does not hide the state
# of the others. At the end one line per stage gives its verdict, its test counts and its time,
# and the script exits 1 when any stage failed (docs/testing.md, "Stages").
set -uo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh test || { echo "test.sh: cannot install the test dependencies"; exit 1; }
quick=0
[ "${1:-}" = --quick ] && quick=1
jobs=$(nproc)

summary=() # one line per stage
failures=() # "stage: test" for every failed test, with the tail of its output in $faildir
faildir=$(mktemp -d)
any_failed=0
total_passed=0 total_failed=0
log=$(mktemp)
trap 'rm -f "$log"; rm -rf "$faildir"' EXIT

# ctest in DIR at -jJOBS with the selection; sets st_passed/st_failed; 1 on a failure or no test
ctest_run() { # dir, jobs, selection...
  local dir=$1 j=$2 rc=0
  shift 2
  (cd "$dir" && ctest --output-on-failure -j"$j" --timeout 600 "$@") 2>&1 | tee "$log" || rc=$?
  # "100% tests passed, 0 tests failed out of 105"
  local f n
  f=$(sed -n 's/.* \([0-9]*\) tests failed out of \([0-9]*\).*/\1/p' "$log" | tail -1)
  n=$(sed -n 's/.* \([0-9]*\) tests failed out of \([0-9]*\).*/\2/p' "$log" | tail -1)
  st_passed=$((${n:-0} - ${f:-0})) st_failed=${f:-0}
  # "The following tests FAILED:" then lines "\t 42 - name (Failed)": keep each name and the
  # last lines of its output (CI shows only the end of what this script prints)
  local t
  for t in $(sed -n '/The following tests FAILED:/,$s/^[[:space:]]*[0-9]* - \([^ ]*\) (.*/\1/p' "$log"); do
    failures+=("$stage_name: $t")
    awk -v t="$t" '$0 ~ "^[0-9]+/[0-9]+ Test: " t "$" {on=1; next}
      on && /^<end of output>/ {exit} on {print}' "$dir/Testing/Temporary/LastTest.log" 2>/dev/null |
      tail -n 25 >"$faildir/${#failures[@]}"
  done
  [ "$rc" -eq 0 ] && [ "${n:-0}" -gt 0 ]
}

# stage NAME SECONDS-SINCE VERDICT DETAIL: records the stage's summary line
stage_done() {
  local name=$1 t0=$2 ok=$3 detail=$4 secs
  secs=$(($(date +%s) - t0))
  [ "$ok" = 1 ] || any_failed=1
  summary+=("$(printf '%-34s %-6s %4dm%02ds  %s' "$name" "$([ "$ok" = 1 ] && echo ok || echo FAILED)" \
    $((secs / 60)) $((secs % 60)) "$detail")")
}

# configure and build DIR; 1 on a failure (the stage then fails without running its tests)
build_tree() { # dir, cmake args...
  local dir=$1
  shift
  cmake -S . -B "$dir" "$@" >"$log" 2>&1 && cmake --build "$dir" -j"$jobs" >>"$log" 2>&1 && return 0
  tail -40 "$log"
  return 1
}

# name, build dir, cmake args...: builds, then runs every test not labelled "live" (nor a label
# of $skip_labels, a regex) in parallel, then the "live" ones (tests/CMakeLists.txt,
# NCS_LIVE_TESTS) one at a time
skip_labels=
run_suite() {
  local name=$1 dir=$2 t0
  shift 2
  stage_name=$name
  echo "=== $name ==="
  t0=$(date +%s)
  if ! build_tree "$dir" "$@"; then
    stage_done "$name" "$t0" 0 "build failed"
    stage_done "$name (live tests)" "$(date +%s)" 0 "not run: build failed"
    return
  fi
  local ok=1
  ctest_run "$dir" "$jobs" -LE "live${skip_labels:+|$skip_labels}" || ok=0
  total_passed=$((total_passed + st_passed)) total_failed=$((total_failed + st_failed))
  stage_done "$name" "$t0" $ok "$st_passed passed, $st_failed failed"
  echo "=== $name (live tests, one at a time) ==="
  t0=$(date +%s)
  if ! (cd "$dir" && ctest -N -L live | grep -q "Test *#"); then
    stage_done "$name (live tests)" "$t0" 1 "none in this build"
    return
  fi
  ok=1
  stage_name="$name (live tests)"
  ctest_run "$dir" 1 -L live || ok=0
  total_passed=$((total_passed + st_passed)) total_failed=$((total_failed + st_failed))
  stage_done "$name (live tests)" "$t0" $ok "$st_passed passed, $st_failed failed"
}

run_suite release build -DCMAKE_BUILD_TYPE=RelWithDebInfo
if [ $quick = 0 ]; then
  # halt_on_error: a sanitizer report fails the test instead of scrolling past
  export ASAN_OPTIONS=detect_leaks=1:halt_on_error=1:abort_on_error=1
  export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
  export TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1
  # the real-GPU benchmark recordings (label realjob_heavy) take minutes each under ASan; the
  # release stage runs them, and the PyTorch recordings take the same read path here
  skip_labels=realjob_heavy
  run_suite "asan+ubsan" build-asan -DCMAKE_BUILD_TYPE=Debug -DNCS_SANITIZE=address,undefined
  skip_labels=
  # the real-GPU fixtures (label realjob) exercise the single-threaded read side, which the
  # release and ASan+UBSan stages check; under ThreadSanitizer they would take half an hour
  # ... nor the diagnose sweeps (label sweep: sixteen nccl-sim jobs through the paths the
  # diagnose_sim_* tests take)
  skip_labels='realjob|sweep'
  run_suite tsan build-tsan -DCMAKE_BUILD_TYPE=Debug -DNCS_SANITIZE=thread
  skip_labels=
  echo "=== fuzz (reader, whole read path) ==="
  t0=$(date +%s)
  # libFuzzer's progress lines run to hundreds: they go to a file, and only its end is shown
  fuzzlog=$(mktemp)
  if scripts/fuzz.sh "${NCS_FUZZ_SECONDS:-60}" >"$fuzzlog" 2>&1; then
    grep -E '^(fuzz:|Done |stat::(number_of_executed_units|new_units_added))' "$fuzzlog"
    stage_done fuzz "$t0" 1 "no crash"
  else
    tail -n 80 "$fuzzlog"
    stage_done fuzz "$t0" 0 "a crash or a build failure (see above)"
  fi
  rm -f "$fuzzlog"
fi

echo
if [ ${#failures[@]} -gt 0 ]; then
  echo "=== failed tests (the last lines of each one's output) ==="
  for i in "${!failures[@]}"; do
    echo "--- ${failures[$i]}"
    cat "$faildir/$((i + 1))" 2>/dev/null
  done
  echo
fi
echo "=== summary ==="
for l in "${summary[@]}"; do echo "$l"; done
echo "tests: $total_passed passed, $total_failed failed"
for f in "${failures[@]}"; do echo "failed: $f"; done
[ $any_failed = 0 ] || { echo "test.sh: FAILED"; exit 1; }
echo "test.sh: ok"
