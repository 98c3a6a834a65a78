#!/bin/sh
# hotpath_budget.sh SIM PLUGIN WORKDIR - the plugin's instruction budget per call.
#
# Instructions are counted by callgrind (valgrind), which gives the same count for the same
# binary and inputs on any machine, unlike times. nccl-sim's flood makes the calls of a busy
# proxy thread (ProxyOp/ProxyStep starts, states and stops, a Coll and a KernelCh every 64
# ProxyOps) through the v6 plugin; each entry point is counted on its own (callgrind
# --toggle-collect, callees included) and divided by the number of such calls nccl-sim made.
# `unrecorded` is a start of a type NCCLSCOPE_EVENTS does not ask for (only coll,kernel recorded).
#
# The budgets are the counts measured when the fast paths were written (docs/benchmarks.md,
# "Instructions per call"), plus about 10%: start 61.1, stop 29.0, state 37.1, unrecorded 30.0 on
# gcc 12 -O2 (RelWithDebInfo). The event path before them took 126, 64, 75. Raise a budget only
# with a measurement that says why.
set -u
SIM=$1 PLUGIN=$2 W=$3
B_START=68 B_STOP=32 B_STATE=41 B_UNREC=34
fail() { echo "hotpath budget: FAILED: $*"; exit 1; }
command -v valgrind >/dev/null || fail "valgrind is not installed (scripts/deps.sh test installs it)"
rm -rf "$W" && mkdir -p "$W"
# count EVENTS FUNCTION: prints "instructions starts stops states" for one flood run
count() {
  ev=$1 fn=$2
  NCCLSCOPE_EVENTS=$ev NCCLSCOPE_DIR="$W/t-$fn" valgrind --tool=callgrind --collect-atstart=no \
    --toggle-collect="$fn" --callgrind-out-file="$W/cg-$ev-$fn" "$SIM" --plugin "$PLUGIN" \
    --scenario flood --threads 1 --events 100000 >"$W/log-$ev-$fn" 2>&1 || fail "callgrind run ($ev $fn): $(tail -3 "$W/log-$ev-$fn")"
  ir=$(sed -n 's/^summary: *\([0-9]*\).*/\1/p' "$W/cg-$ev-$fn" | head -1)
  [ -n "$ir" ] || fail "no callgrind summary for $fn"
  # nccl-sim-types: Type=starts,stops,states
  calls=$(grep '^nccl-sim-types:' "$W/log-$ev-$fn" | tr ' ' '\n' | grep '=' | cut -d= -f2 |
          awk -F, '{a += $1; b += $2; c += $3} END {print a, b, c}')
  echo "$ir $calls"
}
per() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.1f", b ? a / b : 1e9}'; }
set -- $(count all start_v6); start=$(per "$1" "$2")
set -- $(count all stop_any); stop=$(per "$1" "$3")
set -- $(count all state_v4); state=$(per "$1" "$4")
# unrecorded: the starts of ProxyOp/ProxyStep with only coll,kernel asked for; the few recorded
# Coll/KernelCh starts among them are counted at the start figure above
set -- $(count coll,kernel start_v6)
rec=$(grep '^nccl-sim-types:' "$W/log-coll,kernel-start_v6" | tr ' ' '\n' | grep -E '^(Coll|KernelCh)=' |
      cut -d= -f2 | awk -F, '{s += $2} END {print s}')
unrec=$(awk -v ir="$1" -v n="$2" -v r="$rec" -v s="$start" 'BEGIN {printf "%.1f", (ir - r * s) / (n - r)}')
echo "hotpath budget: instructions per call: start $start (budget $B_START), stop $stop ($B_STOP), state $state ($B_STATE), unrecorded start $unrec ($B_UNREC)"
over() { awk -v v="$1" -v b="$2" 'BEGIN {exit !(v > b)}'; }
over "$start" $B_START && fail "start takes $start instructions, budget $B_START"
over "$stop" $B_STOP && fail "stop takes $stop instructions, budget $B_STOP"
over "$state" $B_STATE && fail "state takes $state instructions, budget $B_STATE"
over "$unrec" $B_UNREC && fail "an unrecorded start takes $unrec instructions, budget $B_UNREC"
echo "hotpath budget: ok"
