#!/bin/sh
# flight_check.sh SIM PLUGIN NCCLSCOPE WORKDIR CASE - the flight recorder (docs/flight.md) on
# nccl-sim: ring reuse with keyframes, survival of kill -9, dumps on a signal and on a request
# file, reloads. Prints "flight check CASE: ok" on success.
set -u
SIM=$1 PLUGIN=$2 NS=$3 W=$4 CASE=$5
rm -rf "$W"
mkdir -p "$W"
fail() {
  echo "flight check $CASE: FAILED: $*"
  exit 1
}
export NCCLSCOPE_MODE=flight NCCLSCOPE_DIR="$W/t"
unset NCCLSCOPE_EVENTS NCCLSCOPE_CAPTURE NCCLSCOPE_FLIGHT_SIZE NCCLSCOPE_DUMP_SIGNAL

stats() { "$NS" dump --stats "$@" >"$W/stats.txt" 2>&1; }
count() { # count TYPE: starts of TYPE in the job total of stats.txt
  awk -v t="$1" '/^== job/ {j = 1} j && $1 == t {print $2; exit}' "$W/stats.txt"
}
# wait until the flight file of a running process exists (the plugin creates it at init); a guard
# of 60 s, not a verdict: a loaded machine may start the process late
wait_file() {
  i=0
  while [ $i -lt 1200 ]; do
    ls "$W"/t/*.nsflight >/dev/null 2>&1 && return 0
    sleep 0.05
    i=$((i + 1))
  done
  return 1
}
# wait_for SECONDS CMD...: until CMD succeeds (polled every 0.1 s), at most SECONDS (a guard)
wait_for() {
  n=$(($1 * 10))
  shift
  while [ "$n" -gt 0 ]; do
    "$@" && return 0
    sleep 0.1
    n=$((n - 1))
  done
  return 1
}
colls_over() { stats "$W/t" && [ "$(count Coll)" -gt "$1" ]; }
dumps_are() { [ "$(ls "$W"/t/dumps/*.nsflight 2>/dev/null | wc -l)" -eq "$1" ]; }
files_are() { [ "$(ls "$W"/t/*.nsflight 2>/dev/null | wc -l)" -eq "$1" ]; }

case "$CASE" in
wrap)
  # a 1 MiB ring (4 slots) under 2 s of every event type: slots are reused, the file reads whole,
  # and the window starts with a keyframe (the open Coll and its children precede the rest)
  NCCLSCOPE_FLIGHT_SIZE=1M NCCLSCOPE_EVENTS=all "$SIM" --plugin "$PLUGIN" --scenario flood \
    --duration 2 --rate 1000000 >"$W/sim.txt" 2>&1 || fail "nccl-sim: $(tail -3 "$W/sim.txt")"
  stats "$W/t" || fail "dump --stats failed: $(tail -5 "$W/stats.txt")"
  grep -q "flight recorder: exited" "$W/stats.txt" || fail "file not marked exited: $(cat "$W/stats.txt")"
  grep -q "4 of 4 slots" "$W/stats.txt" || fail "slots: $(grep flight "$W/stats.txt")"
  reused=$(sed -n 's/.*slots of [0-9]* KiB kept (\([0-9]*\) reused).*/\1/p' "$W/stats.txt")
  [ "${reused:-0}" -gt 0 ] || fail "the ring was never reused: $(grep flight "$W/stats.txt")"
  # the footer counts the whole run; the window (what dump prints) holds only the recent past
  total=$(count ProxyStep)
  "$NS" dump "$W/t" >"$W/dump.txt" 2>&1 || fail "dump failed"
  steps=$(grep -c " START ProxyStep " "$W/dump.txt")
  [ "${steps:-0}" -gt 1000 ] && [ "$steps" -lt "$total" ] ||
    fail "window holds $steps of $total ProxySteps (expected some, not all)"
  # the first events of the window are the keyframe: the open Coll, then its open children
  first=$(grep -m1 " START " "$W/dump.txt")
  echo "$first" | grep -q "START Coll" || fail "window does not start with the keyframe: $first"
  # the ring is bounded: the file is header + meta + ring, whatever the run length
  sz=$(stat -c %s "$W"/t/*.nsflight)
  [ "$sz" -le $((4096 + 2 * 1048576 + 1048576)) ] || fail "file is $sz bytes"
  ;;
kill9)
  # the state lives in a shared file mapping: after kill -9 the file still reads, with what it
  # held before (once it held more than 10 Coll: how soon depends on the machine's pace)
  "$SIM" --plugin "$PLUGIN" --scenario flood --duration 60 --rate 200000 >"$W/sim.txt" 2>&1 &
  pid=$!
  wait_file || fail "no flight file appeared"
  wait_for 50 colls_over 10 || fail "the running file never held 10 Coll: $(grep flight "$W/stats.txt")"
  kill -9 $pid
  wait $pid 2>/dev/null
  stats "$W/t" || fail "dump --stats of a killed process failed: $(tail -5 "$W/stats.txt")"
  grep -q "flight recorder: running" "$W/stats.txt" || fail "state: $(grep flight "$W/stats.txt")"
  c=$(count Coll)
  [ "${c:-0}" -gt 10 ] || fail "only ${c:-0} Coll survived kill -9"
  ;;
signal)
  # SIGUSR1 dumps, and no longer kills the process (which nccl-sim does not handle itself): two
  # signals, each sent once the process is running and the dump before it is written (a signal
  # during a dump is one more request for the same dump), make two dumps, and the process is
  # still running after both
  "$SIM" --plugin "$PLUGIN" --scenario flood --duration 60 --rate 200000 >"$W/sim.txt" 2>&1 &
  pid=$!
  wait_file || fail "no flight file appeared"
  wait_for 50 colls_over 0 || fail "the running file never held a Coll"
  kill -USR1 $pid
  wait_for 50 dumps_are 1 || fail "no dump for the first signal: $(ls -R "$W/t")"
  kill -USR1 $pid
  wait_for 50 dumps_are 2 || fail "$(ls "$W"/t/dumps/*.nsflight 2>/dev/null | wc -l) dumps for 2 signals: $(ls -R "$W/t")"
  kill -0 $pid 2>/dev/null || { wait $pid; fail "nccl-sim did not survive SIGUSR1 (status $?)"; }
  kill -TERM $pid
  wait $pid 2>/dev/null
  stats "$W/t/dumps" || fail "dumps unreadable: $(tail -5 "$W/stats.txt")"
  grep -q "signal dump 1" "$W/stats.txt" && grep -q "signal dump 2" "$W/stats.txt" ||
    fail "dump reasons: $(grep flight "$W/stats.txt")"
  c=$(count Coll)
  [ "${c:-0}" -gt 0 ] || fail "dumps hold no Coll"
  ;;
request)
  # a line written to <dir>/ncclscope.dump makes every process of the job dump
  "$SIM" --plugin "$PLUGIN" --scenario allreduce --ranks 4 --procs 4 --iters 200000 \
    >"$W/sim.txt" 2>&1 &
  pid=$!
  wait_file || fail "no flight file appeared"
  wait_for 60 files_are 4 || fail "$(ls "$W"/t/*.nsflight | wc -l) flight files for 4 processes"
  echo "test-request 12345" >"$W/t/ncclscope.dump"
  wait_for 60 dumps_are 4
  pkill -P $pid 2>/dev/null # the rank processes first, then nccl-sim itself: none is left behind
  kill $pid 2>/dev/null
  wait $pid 2>/dev/null
  n=$(ls "$W"/t/dumps/*.nsflight 2>/dev/null | wc -l)
  [ "$n" -eq 4 ] || fail "$n dumps from 4 processes: $(ls -R "$W/t")"
  stats "$W/t/dumps" || fail "dumps unreadable"
  [ "$(grep -c 'request dump 1 ("test-request 12345")' "$W/stats.txt")" -eq 4 ] ||
    fail "reasons: $(grep flight "$W/stats.txt")"
  ;;
reload)
  # each load of the plugin gets its own file; none is overwritten
  "$SIM" --plugin "$PLUGIN" --scenario reload --cycles 3 >"$W/sim.txt" 2>&1 || fail "nccl-sim"
  n=$(ls "$W"/t/*.nsflight | wc -l)
  [ "$n" -eq 3 ] || fail "$n files for 3 loads: $(ls "$W/t")"
  stats "$W/t" || fail "unreadable: $(tail -5 "$W/stats.txt")"
  [ "$(grep -c 'flight recorder: exited' "$W/stats.txt")" -eq 3 ] || fail "states"
  ;;
trigger)
  # `ncclscope trigger DIR` writes the request file: every process dumps, the verb counts them
  # (--wait) and the dumps carry its --reason; with no process there, it waits and says so (1)
  "$NS" trigger --wait 1 "$W/nonexistent" 2>"$W/trig.err"
  [ $? -eq 3 ] || fail "trigger of a missing directory did not exit 3"
  "$SIM" --plugin "$PLUGIN" --scenario allreduce --ranks 4 --procs 4 --iters 200000 \
    >"$W/sim.txt" 2>&1 &
  pid=$!
  wait_file || fail "no flight file appeared"
  wait_for 60 files_are 4 || fail "$(ls "$W"/t/*.nsflight | wc -l) flight files for 4 processes"
  "$NS" trigger --reason "from the test" --wait 60 "$W/t" >"$W/trig.out" 2>"$W/trig.err"
  rc=$?
  pkill -P $pid 2>/dev/null
  kill $pid 2>/dev/null
  wait $pid 2>/dev/null
  [ $rc -eq 0 ] || fail "trigger exited $rc: $(cat "$W/trig.out" "$W/trig.err")"
  grep -q "^4 new dumps in .* for 4 flight files" "$W/trig.out" || fail "trigger said: $(cat "$W/trig.out")"
  stats "$W/t/dumps" || fail "dumps unreadable"
  [ "$(grep -c 'request dump 1 ("from the test ' "$W/stats.txt")" -eq 4 ] ||
    fail "reasons: $(grep flight "$W/stats.txt")"
  # nobody records there any more: waiting finds no new dump, status 1
  "$NS" trigger --wait 1 "$W/t" >"$W/trig2.out" 2>&1
  [ $? -eq 1 ] || fail "trigger with no live process did not exit 1: $(cat "$W/trig2.out")"
  ;;
*)
  fail "unknown case"
  ;;
esac
echo "flight check $CASE: ok"
