#!/bin/sh
# cupti_launch_cost.sh SIM PLUGIN FAKE WORKDIR - what CUPTI on adds to NCCL's thread per kernel
# launch, in instructions (callgrind: the same count on any machine).
#
# nccl-sim's flood --cold makes the calls NCCL 2.28 makes for one AllReduce (13 per round, one of
# them the KernelLaunch start/stop pair) and, with --cupti, a fake cuLaunchKernelEx inside the
# KernelLaunch, which fires the plugin's CUPTI launch callback. The plugin's instructions on the
# producer thread (every function of the plugin's library, callees in it included; the fake's
# own work is CUPTI's, not ours) are summed with NCCLSCOPE_CUPTI off and on; the difference per
# round is what the KernelLaunch slow path and the callback cost. Budget: the count measured when
# this was written plus about 10% (docs/benchmarks.md, "CUPTI on a kernel launch").
set -u
SIM=$1 PLUGIN=$2 FAKE=$3 W=$4
BUDGET=${BUDGET:-420}
ROUNDS=20000
fail() { echo "cupti launch cost: FAILED: $*"; exit 1; }
command -v valgrind >/dev/null || fail "valgrind is not installed (scripts/deps.sh test installs it)"
command -v callgrind_annotate >/dev/null || fail "callgrind_annotate is not installed"
rm -rf "$W" && mkdir -p "$W"
lib=$(basename "$PLUGIN")
# Instructions per round on the thread that ran flood_api_round that are not the fake CUPTI's:
# the thread's total, less the inclusive cost of the fake's entry points nccl-sim calls
# (fakecupti_*: the fake's work, its own calls into libc included), plus the inclusive cost of
# the plugin's CUPTI callback, which the fake calls from inside them. Only call boundaries are
# used: callgrind attributes the fast paths' tail calls to one function or the next from run to
# run (seen: start_v7 156 or 374 self instructions per round for the same code), so sums of
# self costs per function move while these do not. nccl-sim's own work is the same in both
# modes, so the difference between the modes is the plugin's.
count() {
  mode=$1
  env NCCLSCOPE_CUPTI="$mode" NCCLSCOPE_DIR="$W/t-$mode" valgrind --tool=callgrind --separate-threads=yes \
    --callgrind-out-file="$W/cg-$mode" "$SIM" --plugin "$PLUGIN" --cupti "$FAKE" --scenario flood \
    --threads 1 --cold 4 --events $((ROUNDS * 13)) >"$W/log-$mode" 2>&1 || fail "callgrind run ($mode): $(tail -3 "$W/log-$mode")"
  for f in "$W"/cg-"$mode"-*; do
    case $f in *.txt) continue ;; esac
    callgrind_annotate --inclusive=yes --threshold=100 "$f" >"$f.txt" 2>/dev/null || continue
    grep -q 'flood_api_round' "$f.txt" || continue
    awk '/PROGRAM TOTALS/ && !t {gsub(",", "", $1); t = $1}
         / [^ ]*:fakecupti_[a-z_]* \[/ {gsub(",", "", $1); fake += $1}
         / [^ ]*:cupti_cb \[/ {gsub(",", "", $1); cb += $1}
         END {if (t == "") exit 1; printf "%.1f\n", (t - fake + cb) / '"$ROUNDS"'}' "$f.txt" ||
      fail "no total in the callgrind output ($mode)"
    return
  done
  fail "no producer thread found in the callgrind output ($mode)"
}
off=$(count off)
on=$(count on)
grep -q '^nccl-sim-gpu: nccl=[1-9]' "$W/log-on" || fail "the fake CUPTI recorded no kernel with CUPTI on"
add=$(awk -v a="$on" -v b="$off" 'BEGIN {printf "%.1f", a - b}')
echo "cupti launch cost: instructions per AllReduce on NCCL's thread (the fake CUPTI's left out): CUPTI off $off, on $on: a kernel launch costs $add more (budget $BUDGET)"
awk -v v="$add" -v b="$BUDGET" 'BEGIN {exit !(v > b)}' && fail "CUPTI adds $add instructions per kernel launch, budget $BUDGET"
echo "cupti launch cost: ok"
