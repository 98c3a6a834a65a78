#!/bin/sh
# read_budget.sh NCCLSCOPE FIXTURES WORKDIR - the read side's instruction budget per record.
#
# Instructions are counted by callgrind (valgrind), the same for the same binary and input on any
# machine, unlike times (issue 36: "per-record work measured with callgrind and held by a budget
# test", as tests/hotpath_budget.sh holds the plugin's). The input is a real NCCL trace: the
# 4-GPU ncs_perf sweep over sockets with every event (tests/fixtures/real/4gpu-nccl2.28.9/
# perf-socket: 159,576 records, starts + stops + states as the job's table of `dump --stats`
# counts them). Each verb's whole run is counted (startup included, about 1% here) and divided
# by the records.
#
# The budgets are the counts measured on 2026-11-29 (gcc 12 -O2, RelWithDebInfo; docs/benchmarks.md,
# "Read speed") plus about 10%: dump --stats 598, report --json 1519, diagnose --json 1465, the
# Perfetto export 3301, the Chrome JSON export 4274 instructions per record. Raise a budget only
# with a measurement that says why; lower it when the read side gets faster.
set -u
NCS=$1 FIX=$2 W=$3
fail() { echo "read budget: FAILED: $*"; exit 1; }
command -v valgrind >/dev/null || fail "valgrind is not installed (scripts/deps.sh test installs it)"
rm -rf "$W" && mkdir -p "$W/t" || fail "cannot make $W"
tar xJf "$FIX/real/4gpu-nccl2.28.9/perf-socket.tar.xz" -C "$W/t" || fail "cannot unpack the fixture"
rm -f "$W/t/job.log"
records=$("$NCS" dump --stats "$W/t" 2>/dev/null |
  awk '/^== job/{job=1} /^  event type /{on=job; next} on && NF >= 6 && $2 ~ /^[0-9]+$/ {s += $2 + $3 + $4} /^==/{on=0} END {print s + 0}')
[ "$records" -gt 100000 ] || fail "the fixture has $records records (expected 159576)"
bad=0
# count NAME BUDGET ARGS...: one verb under callgrind, per record against its budget
count() {
  name=$1 budget=$2; shift 2
  o="$W/$(echo "$name" | tr ' ' '_')"
  valgrind --tool=callgrind --callgrind-out-file="$o.cg" "$NCS" "$@" >"$o.out" 2>"$o.log" ||
    { [ $? -le 1 ] || fail "$name under callgrind: $(tail -3 "$o.log")"; }
  ir=$(sed -n 's/^summary: *\([0-9]*\).*/\1/p' "$o.cg" | head -1)
  [ -n "$ir" ] && [ "$ir" -gt 0 ] || fail "$name: no instructions counted"
  per=$(awk -v a="$ir" -v b="$records" 'BEGIN {printf "%.0f", a / b}')
  echo "read budget: $name: $ir instructions, $per per record (budget $budget)"
  [ "$per" -le "$budget" ] || { echo "read budget: $name takes $per instructions per record, budget $budget"; bad=1; }
}
count "dump --stats" 660 dump --stats "$W/t"
count "report --json" 1670 report --json "$W/t"
count "diagnose --json" 1610 diagnose --json "$W/t"
count "export perfetto" 3630 export -f perfetto -o "$W/x.pftrace" "$W/t"
count "export chrome" 4700 export -f chrome -o "$W/x.json" "$W/t"
[ "$bad" = 0 ] || fail "over budget (above)"
echo "read budget: ok ($records records)"
