#!/bin/sh
# export_check.sh MODE WORKDIR NCCLSCOPE LINT SIM PLUGIN PROTO [-- SIM-ARGS...]
#
# Record a small nccl-sim job, export it with `ncclscope export` and check the result:
#   golden  ncs-pftrace-lint passes, and its --summary matches what nccl-sim says it did:
#           one process per rank, one slice per event of each kind, one phase per ProxyOp /
#           ProxyStep / ProxyCtrl state, one instant per other state (KernelChStop and
#           KernelPhaseStop are the GPU ends of their slices), one job slice per collective instance, one flow per Coll (to its
#           job slice) and per send/recv pair; -j1 and -j3 give the same bytes
#   golden-nolink  the same without the job-slice and flow counts (scenarios whose
#           communicators do not span every rank, such as split)
#   protoc  `protoc --decode=perfetto.protos.Trace PROTO` decodes it and prints no unknown
#           field (a bare field number); exit 77 (skipped) without protoc
#   chrome  the Chrome JSON parses (python3) and has as many slices, instants, counters and
#           flows as the .pftrace
#   files   the arguments after -- are trace directories (recorded elsewhere, e.g. on GPUs):
#           each exports (a damaged file only warns), passes the lint and, with protoc, decodes
#           without unknown fields; exit 77 (skipped) when none of them holds a trace
# SIM-ARGS go to nccl-sim (--scenario, --ranks, ...). With --procs P, P trace files.
set -u
mode=$1 work=$2 ncs=$3 lint=$4 sim=$5 plugin=$6 proto=$7
shift 7
[ "${1:-}" = "--" ] && shift
fail() { echo "FAIL: $*" >&2; exit 1; }

rm -rf "$work" && mkdir -p "$work" || fail "cannot create $work"

if [ "$mode" = files ]; then
  n=0
  for d in "$@"; do
    ls "$d"/*.nstrace >/dev/null 2>&1 || continue
    n=$((n + 1))
    o="$work/f$n.pftrace"
    "$ncs" export -q "$d" -o "$o"
    rc=$?
    [ $rc = 0 ] || [ $rc = 4 ] || fail "export of $d: exit status $rc"
    "$lint" "$o" || fail "ncs-pftrace-lint: $d"
    if command -v protoc >/dev/null 2>&1; then
      protoc -I"$(dirname "$proto")" --decode=perfetto.protos.Trace "$proto" <"$o" >"$o.txt" ||
        fail "protoc cannot decode the export of $d"
      ! grep -qE '^[[:space:]]*[0-9]+:' "$o.txt" || fail "unknown fields in the export of $d"
    fi
    "$ncs" export -q -f chrome "$d" -o "$work/f$n.json"
    python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$work/f$n.json" || fail "JSON of $d"
    echo "ok: $d"
  done
  [ $n -gt 0 ] || { echo "SKIP: no trace directories among: $*"; exit 77; }
  echo "PASS: $n trace directories"
  exit 0
fi
# the monotonic clock: the plugin's TSC conversion can drift in short runs on a VM, and the GPU
# mapping check below wants clocks that agree
out=$(NCCLSCOPE_DIR="$work/trace" NCCLSCOPE_EVENTS=all NCCLSCOPE_CLOCK=monotonic \
  "$sim" --plugin "$plugin" "$@" 2>"$work/sim.err") || { cat "$work/sim.err" >&2; fail "nccl-sim failed"; }
printf '%s\n' "$out" >"$work/sim.out"
"$ncs" export --jobs 2 "$work/trace" -o "$work/t.pftrace" 2>"$work/export.err" ||
  { cat "$work/export.err" >&2; fail "export failed"; }
cat "$work/export.err"

case $mode in
protoc)
  command -v protoc >/dev/null 2>&1 || { echo "SKIP: protoc not installed (apt-get install protobuf-compiler)"; exit 77; }
  protoc -I"$(dirname "$proto")" --decode=perfetto.protos.Trace "$proto" <"$work/t.pftrace" \
    >"$work/t.txt" 2>"$work/protoc.err" || { cat "$work/protoc.err" >&2; fail "protoc cannot decode it"; }
  if grep -nE '^[[:space:]]*[0-9]+:' "$work/t.txt" | head -5 | grep .; then
    fail "fields that tests/perfetto_subset.proto does not know (printed above as numbers)"
  fi
  n=$(grep -c 'trusted_packet_sequence_id' "$work/t.txt")
  # the trace says what its clock is in wall-clock time (docs/timeline.md, "Time"): one
  # ClockSnapshot, before any event, with the trace clock (BOOTTIME) and REALTIME, REALTIME -
  # BOOTTIME being the recording's realtime - monotonic offset (its CLOCK pairs, as dump prints them)
  pair=$("$ncs" dump "$work/trace" | python3 -c 'import re,sys
m = re.search(r" CLOCK mono=(\d+) realtime=(\d+)", sys.stdin.read()); print(int(m.group(2)) - int(m.group(1)))')
  python3 - "$work/t.txt" "$pair" <<'PY' || fail "no ClockSnapshot that maps the trace's clock to REALTIME"
import re, sys
t = open(sys.argv[1]).read()
snaps = re.findall(r"clock_snapshot \{(.*?)\n  \}\n", t, re.S)
assert len(snaps) == 1, "%d clock snapshots" % len(snaps)
first_event = t.find("track_event {")
assert t.find("clock_snapshot {") < first_event, "the snapshot comes after an event"
clocks = dict((int(i), int(v)) for i, v in re.findall(r"clock_id: (\d+)\s+timestamp: (\d+)", snaps[0]))
assert 6 in clocks and 1 in clocks and 3 in clocks, clocks
assert "primary_trace_clock: BUILTIN_CLOCK_BOOTTIME" in snaps[0], snaps[0]
off = clocks[1] - clocks[6]
want = int(sys.argv[2])
assert abs(off - want) < 1e6, (off, want)  # the pairs' spread on one host: well under 1 ms
print("clock snapshot: REALTIME - BOOTTIME = %d ns (a CLOCK pair: %d)" % (off, want))
PY
  echo "PASS: protoc decoded $n packets, no unknown fields"
  exit 0
  ;;
esac

"$lint" "$work/t.pftrace" || fail "ncs-pftrace-lint found problems"
"$lint" --summary "$work/t.pftrace" >"$work/summary" || fail "ncs-pftrace-lint --summary"
get() { awk -v k="$1" '$1 == k { print $2; f = 1 } END { if (!f) print 0 }' "$work/summary"; }

if [ "$mode" = chrome ]; then
  "$ncs" export -q -f chrome "$work/trace" -o "$work/t.json" || fail "chrome export failed"
  counts=$(python3 -c '
import json, sys, collections
d = json.load(open(sys.argv[1]))
c = collections.Counter(e.get("ph") for e in d["traceEvents"])
print(c["X"], c["i"], c["C"], c["s"], c["f"])' "$work/t.json") || fail "the JSON does not parse"
  set -- $counts
  [ "$1" = "$(get slices)" ] || fail "JSON has $1 X events, the .pftrace $(get slices) slices"
  [ "$2" = "$(get instants)" ] || fail "JSON has $2 instants, the .pftrace $(get instants)"
  [ "$3" = "$(get counter_events)" ] || fail "JSON has $3 counter events, the .pftrace $(get counter_events)"
  [ "$4" = "$(get flows)" ] && [ "$5" = "$(get flows)" ] || fail "JSON has $4/$5 flow s/f, the .pftrace $(get flows) flows"
  echo "PASS: JSON parses: $1 slices, $2 instants, $3 counter events, $4 flows, as in the .pftrace"
  exit 0
fi

# golden: the structure against nccl-sim's own counts
types=$(grep '^nccl-sim-types:' "$work/sim.out")
ranks=$(sed -n 's/.* ranks=\([0-9]*\).*/\1/p' "$work/sim.out" | head -1)
# starts/stops/states of a type from "Type=S,P,T"
n() { printf '%s\n' "$types" | tr ' ' '\n' | awk -F'[=,]' -v t="$1" -v i="$2" '$1 == t { print $(i + 1) }'; }
S() { n "$1" 1; }
T() { n "$1" 3; }
check() { # name got want
  if [ "$2" != "$3" ]; then echo "FAIL: $1: $2 in the export, $3 expected" >&2; bad=1; else echo "ok: $1 $2"; fi
}
bad=0
check processes "$(get processes)" "$ranks"
check slices.api "$(get slices.api)" $(($(S GroupApi) + $(S CollApi) + $(S P2pApi) + $(S KernelLaunch)))
check slices.group "$(get slices.group)" "$(S Group)"
check slices.coll "$(get slices.coll)" "$(S Coll)"
check slices.p2p "$(get slices.p2p)" "$(S P2p)"
check slices.ce "$(get slices.ce)" $(($(S CeColl) + $(S CeSync) + $(S CeBatch)))
check slices.kernel "$(get slices.kernel)" "$(S KernelCh)"
check slices.kernelphase "$(get slices.kernelphase)" "$(S KernelPhase)"
check slices.proxyop "$(get slices.proxyop)" "$(S ProxyOp)"
check slices.proxystep "$(get slices.proxystep)" "$(S ProxyStep)"
check slices.proxyctrl "$(get slices.proxyctrl)" "$(S ProxyCtrl)"
check slices.net "$(get slices.net)" "$(S NetPlugin)"
check slices.phase "$(get slices.phase)" $(($(T ProxyOp) + $(T ProxyStep) + $(T ProxyCtrl)))
check instants.state "$(get instants.state)" \
  $(($(T GroupApi) + $(T NetPlugin) + $(T CeColl) + $(T CeSync) + $(T CeBatch) + $(T Coll) + $(T P2p)))
# every rank runs every collective of its communicators, and every send has its receive
if [ "$mode" != golden-nolink ]; then
  check slices.job "$(get slices.job)" $(($(S Coll) / ranks))
  check flows "$(get flows)" $(($(S Coll) + $(S P2p) / 2))
fi
# a clean recording lost nothing: no loss window (tests/consistency_check.sh has one that did)
check slices.loss "$(get slices.loss)" 0
exp_slices=$(($(get slices.api) + $(get slices.group) + $(get slices.coll) + $(get slices.p2p) +
  $(get slices.ce) + $(get slices.kernel) + $(get slices.kernelphase) + $(get slices.proxyop) +
  $(get slices.proxystep) + $(get slices.proxyctrl) + $(get slices.net) + $(get slices.phase) +
  $(get slices.job) + $(get slices.loss)))
check "slices (sum of kinds)" "$(get slices)" "$exp_slices"
grep -q 'disagree' "$work/export.err" && { echo "FAIL: the export reports clocks that disagree" >&2; bad=1; }
# the same bytes whatever the number of threads
"$ncs" export -q --jobs 1 "$work/trace" -o "$work/t1.pftrace" && "$ncs" export -q --jobs 3 "$work/trace" -o "$work/t3.pftrace" ||
  fail "export --jobs 1/3 failed"
cmp "$work/t.pftrace" "$work/t1.pftrace" && cmp "$work/t.pftrace" "$work/t3.pftrace" || { echo "FAIL: output depends on -j" >&2; bad=1; }
[ $bad = 0 ] || exit 1
echo "PASS"
