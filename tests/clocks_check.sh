#!/bin/sh
# clocks_check.sh SIM PLUGIN NCCLSCOPE REHOST WORKDIR CASE - `ncclscope report` across hosts
# (docs/report.md, "Clocks"). A 4-rank job in 4 processes with a straggler (rank 2 sleeps 10 ms
# before each collective) is recorded on this host; ncs-trace-rehost then rewrites files as if
# another host had written them.
# CASE:
#   rehost     every file, same host, monotonic and realtime shifted alike: the report must not
#              change (every time in the file moved together)
#   slow_on_b  ranks 2 and 3 on "hostB", whose wall clock is 37 ms ahead and whose monotonic clock
#              is elsewhere; the straggler is on hostB
#   slow_on_a  ranks 1 and 3 on hostB, 37 ms behind; the straggler stays on hostA (the reference)
# For the two-host cases the report must estimate hostB's offset within its own error bound of
# the truth, print that bound, and keep the one-host figures: the straggler, skews and waits
# within the bound, latencies unchanged.
set -eu
SIM=$1 PLUGIN=$2 NCS=$3 RH=$4 W=$5 CASE=$6
rm -rf "$W" && mkdir -p "$W/two"
fail() { echo "FAIL: $*"; exit 1; }
ITERS=30
# --couple on: a collective ends when every rank has arrived, as in NCCL (docs/nccl-sim.md); the
# host offsets are estimated from those common ends. --clock model: every time in the recording
# comes from nccl-sim's model, so the figures compared below are the same on a loaded machine
NCCLSCOPE_EVENTS=default,kernelphase NCCLSCOPE_DIR="$W/one" "$SIM" --plugin "$PLUGIN" --clock model --scenario allreduce --ranks 4 --procs 4 \
  --iters $ITERS --slow-rank 2 --slow-us 10000 --couple on >"$W/sim.out" || fail "nccl-sim"
"$NCS" report --json "$W/one" >"$W/one.json" || fail "report of the one-host job"
rank_of() { "$NCS" dump --stats "$1" | sed -n 's/.* rank \([0-9]*\)\/4 .*/\1/p' | head -1; }

case $CASE in
rehost)
  M=987654321012345
  for f in "$W"/one/*.nstrace; do
    "$RH" "$f" "$W/two/$(basename "$f")" --mono-shift $M --realtime-shift $M >/dev/null || fail "rehost $f"
  done
  "$NCS" report --json "$W/two" >"$W/two.json" || fail "report of the rewritten job"
  python3 - "$W" $M <<'PY' || fail "the rewritten job's report differs"
import json, sys, re, subprocess
w, m = sys.argv[1], int(sys.argv[2])
a, b = json.load(open(w + "/one.json")), json.load(open(w + "/two.json"))
def nofile(x):  # file paths differ (processes[], gpu.files[], gpu.devices[]); nothing else may
    if isinstance(x, dict):
        return {k: nofile(v) for k, v in x.items() if k not in ("file", "path")}
    return [nofile(v) for v in x] if isinstance(x, list) else x
assert nofile(a) == nofile(b), "reports differ"
PY
  # the CLOCK pairs moved by exactly M, and every event record survived
  f=$(ls "$W"/one/*.nstrace | head -1)
  "$NCS" dump "$f" >"$W/a.txt" && "$NCS" dump "$W/two/$(basename "$f")" >"$W/b.txt" || fail "dump"
  python3 - "$W" $M <<'PY' || fail "dump of the rewritten file"
import re, sys
w, m = sys.argv[1], int(sys.argv[2])
a, b = open(w + "/a.txt").read().splitlines(), open(w + "/b.txt").read().splitlines()
assert len(a) == len(b), (len(a), len(b))
n = 0
for x, y in zip(a, b):
    cx, cy = re.search(r"CLOCK mono=(\d+) realtime=(\d+)", x), re.search(r"CLOCK mono=(\d+) realtime=(\d+)", y)
    if cx:
        assert int(cy.group(1)) - int(cx.group(1)) == m and int(cy.group(2)) - int(cx.group(2)) == m, (x, y)
        n += 1
        continue
    # relative times (t=, end=, firstChild=) are unchanged; GPU and segment start times moved by M
    fields = "gpuStart|gpuStop|pTimer|startRealtime|startMono|end_ns|clockMono|clockCupti|flush_ns" + \
        ("|arg0" if re.search(r"STATE Kernel(Ch|Phase) ", y) else "") + ("|start|end" if re.search(r"GPU (KERNEL|SUMMARY)", y) else "")
    g = lambda s: re.sub(r"\b(%s)=(\d+)" % fields, lambda k: "%s=%d" % (k.group(1), int(k.group(2)) - (m if int(k.group(2)) else 0)), s)
    assert x == g(y), (x, y)
assert n > 0
PY
  # a damaged file is refused
  head -c 200 "$f" >"$W/cut.nstrace"
  if "$RH" "$W/cut.nstrace" "$W/cut2.nstrace" 2>/dev/null; then fail "a truncated file was accepted"; fi
  ;;
slow_on_b | slow_on_a)
  if [ "$CASE" = slow_on_b ]; then B_RANKS="2 3" SHIFT=37000000 MONO=123456789012345
  else B_RANKS="1 3" SHIFT=-37000000 MONO=5555555555555; fi
  for f in "$W"/one/*.nstrace; do
    r=$(rank_of "$f") pid=$(basename "$f" .nstrace | sed 's/.*-//')
    case " $B_RANKS " in
    *" $r "*) "$RH" "$f" "$W/two/hostB-$pid.nstrace" --host hostB --mono-shift $MONO --realtime-shift $SHIFT ;;
    *) "$RH" "$f" "$W/two/hostA-$pid.nstrace" --host hostA ;;
    esac >/dev/null || fail "rehost $f"
  done
  "$NCS" report --json "$W/two" >"$W/two.json" || fail "report of the two-host job"
  "$NCS" report "$W/two" >"$W/two.txt" || fail "text report of the two-host job"
  python3 - "$W" $SHIFT $ITERS <<'PY' || fail "two-host figures"
import json, sys
w, truth, iters = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
a, b = json.load(open(w + "/one.json")), json.load(open(w + "/two.json"))
hosts = {h["host"]: h for h in b["hosts"]}
assert [h["host"] for h in b["hosts"]] == ["hostA", "hostB"], b["hosts"]
hb, bound = hosts["hostB"], b["error_bound_ns"]
print("hostB offset %.3f ms (truth %.3f ms), error %.3f ms, error bound %.3f ms, %d instances"
      % (hb["offset_ns"] / 1e6, truth / 1e6, hb["error_ns"] / 1e6, bound / 1e6, hb["samples"]))
assert hb["samples"] == iters, hb
assert 0 < hb["error_ns"] <= bound, (hb, bound)
assert abs(hb["offset_ns"] - truth) <= hb["error_ns"], ("offset outside its error bound", hb, truth)
assert a["error_bound_ns"] < 1000000, a["error_bound_ns"]  # one host: CLOCK spreads only
# the straggler, as on one host: the injected one, last in every instance
sa, sb = a["stragglers"][0], b["stragglers"][0]
assert sa["rank"] == 2 and sa["last_fraction"] == 1.0, ("the one-host recording does not name the injected straggler", sa)
assert sb["rank"] == sa["rank"] and abs(sb["last_fraction"] - sa["last_fraction"]) <= 0.1, (sa, sb)
assert sb["error_ns"] == bound, sb
# skews within the bound (not off by 37 ms), latencies (one clock each) unchanged
ka = {(x["comm"], x["func"], x["bytes_lo"]): x for x in a["buckets"]}
for x in b["buckets"]:
    y = ka[(x["comm"], x["func"], x["bytes_lo"])]
    assert x["count"] == y["count"] and x["lat_p50_ns"] == y["lat_p50_ns"], (x, y)
    for k in ("skew_p50_ns", "skew_max_ns"):  # null in both where no instance has a GPU time
        assert (x[k] is None and y[k] is None) if not x["count"] else abs(x[k] - y[k]) <= bound, (k, x[k], y[k], bound)
# waits caused/suffered: each instance within the bound
ra = {(x["comm"], x["rank"]): x for x in a["ranks"]}
for x in b["ranks"]:
    y = ra[(x["comm"], x["rank"])]
    assert abs(x["last_arrivals"] - y["last_arrivals"]) <= iters // 10, (x, y)
    for k in ("wait_caused_ns", "wait_suffered_ns"):
        assert abs(x[k] - y[k]) <= 3 * x["instances"] * bound, (k, x, y, bound)
PY
  grep -q "clock error bound +-" "$W/two.txt" || fail "no error bound in the text report"
  grep -q "^  hostB: -\{0,1\}3[67]\.[0-9]* ms +-" "$W/two.txt" || fail "no hostB offset line: $(grep -A3 '^Clocks' "$W/two.txt")"
  grep -q "rank 2 (pid [0-9]*) arrived last" "$W/two.txt" || fail "straggler finding"
  ;;
*) echo "unknown case $CASE"; exit 2 ;;
esac
echo "clocks check $CASE: ok"
