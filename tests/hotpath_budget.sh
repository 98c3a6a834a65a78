#!/bin/sh
# hotpath_budget.sh SIM PLUGIN WORKDIR - the plugin's instruction budget per call.
#
# Instructions are counted by callgrind (valgrind), which gives the same count for the same
# binary and inputs on any machine, unlike times. nccl-sim's flood makes the calls of a busy
# proxy thread (ProxyOp/ProxyStep starts, states and stops, a Coll and a KernelCh every 64
# ProxyOps) through the plugin's v6 entry points (NCCL 2.29-2.30) and again through v7's (NCCL
# 2.31: start_v7, the same stop and state); each entry point is counted on its own (callgrind
# --toggle-collect, callees included) and divided by the number of such calls nccl-sim made. Both
# versions have the same budgets. `unrecorded` is a start of a type NCCLSCOPE_EVENTS does not ask
# for (only coll,kernel recorded).
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
# count ABI EVENTS FUNCTION: prints "instructions starts stops states" for one flood run
count() {
  abi=$1 ev=$2 fn=$3 o="$W/v$1-$2-$3"
  NCCLSCOPE_EVENTS=$ev NCCLSCOPE_DIR="$o.trace" valgrind --tool=callgrind --collect-atstart=no \
    --toggle-collect="$fn" --callgrind-out-file="$o.cg" "$SIM" --plugin "$PLUGIN" --abi "$abi" \
    --scenario flood --threads 1 --events 100000 >"$o.log" 2>&1 || fail "callgrind run (v$abi $ev $fn): $(tail -3 "$o.log")"
  ir=$(sed -n 's/^summary: *\([0-9]*\).*/\1/p' "$o.cg" | head -1)
  # a function that never ran would pass any budget
  [ -n "$ir" ] && [ "$ir" -gt 0 ] || fail "no instructions counted in $fn (v$abi): was it called?"
  # nccl-sim-types: Type=starts,stops,states
  calls=$(grep '^nccl-sim-types:' "$o.log" | tr ' ' '\n' | grep '=' | cut -d= -f2 |
          awk -F, '{a += $1; b += $2; c += $3} END {print a, b, c}')
  echo "$ir $calls"
}
per() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.1f", b ? a / b : 1e9}'; }
over() { awk -v v="$1" -v b="$2" 'BEGIN {exit !(v > b)}'; }
# budget ABI START_FUNCTION
budget() {
  v=$1 fs=$2
  set -- $(count "$v" all "$fs"); start=$(per "$1" "$2")
  set -- $(count "$v" all stop_any); stop=$(per "$1" "$3")
  set -- $(count "$v" all state_v4); state=$(per "$1" "$4")
  # unrecorded: the starts of ProxyOp/ProxyStep with only coll,kernel asked for; the few recorded
  # Coll/KernelCh starts among them are counted at the start figure above
  set -- $(count "$v" coll,kernel "$fs")
  rec=$(grep '^nccl-sim-types:' "$W/v$v-coll,kernel-$fs.log" | tr ' ' '\n' | grep -E '^(Coll|KernelCh)=' |
        cut -d= -f2 | awk -F, '{s += $2} END {print s}')
  unrec=$(awk -v ir="$1" -v n="$2" -v r="$rec" -v s="$start" 'BEGIN {printf "%.1f", (ir - r * s) / (n - r)}')
  echo "hotpath budget: v$v instructions per call: start $start (budget $B_START), stop $stop ($B_STOP), state $state ($B_STATE), unrecorded start $unrec ($B_UNREC)"
  over "$start" $B_START && fail "v$v start takes $start instructions, budget $B_START"
  over "$stop" $B_STOP && fail "v$v stop takes $stop instructions, budget $B_STOP"
  over "$state" $B_STATE && fail "v$v state takes $state instructions, budget $B_STATE"
  over "$unrec" $B_UNREC && fail "v$v an unrecorded start takes $unrec instructions, budget $B_UNREC"
}
budget 6 start_v6
budget 7 start_v7
echo "hotpath budget: ok"
