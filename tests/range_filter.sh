#!/bin/sh
# range_filter.sh SIM PLUGIN NCS WORKDIR (tests/ranges.cmake): the filters --range and --tag
# (docs/cli.md "Filters", docs/model.md "Filters") against nccl-sim's --range-truth, which says per
# range how many NCCL operations its thread called inside it. nccl-sim runs every iteration inside
# "step" > "comm" (its NCCL calls) and "optimizer" (none), all inside "train" (--range-outer), and
# tags iteration i with userTag 1 + i/N (--user-tags N, ABI v7). On one process with one thread
# driving 4 ranks, one process with 2 threads, and 2 processes of 2 threads (sends and receives
# too), `report --json` must keep:
#   --range step:K   exactly the operations the truth puts in every thread's K-th step, and each
#                    instance in exactly one step (the steps together are the whole job);
#   --range step:2-3, --range step:1 --range step:4   the sum of those steps;
#   --range comm, --range train   everything, with the same numbers as no filter (train: the same
#                    buckets and ranks); --range optimizer nothing (it holds no NCCL call);
#   --tag T, --tag A,B-C   exactly the iterations of those tags; --tag 99 nothing;
#   --range step:K --tag T   step K when T is its tag, nothing otherwise (one operation must meet
#                    both);
# and say so (the filter's text, nothing partial, late or unknown). A name the job lacks, a number
# past every thread's count, --range on a job without ranges and --tag on an ABI v5 job are usage
# errors (2) that say why. A flight recording (a window of the run): --range train keeps everything
# and says the range is partial; --range step leaves out only operations it says it cannot tell.
set -u
SIM=$1 PLUGIN=$2 NCS=$3 W=$4
ITERS=6
fail() { echo "range filter: FAILED: $*"; exit 1; }
rm -rf "$W" && mkdir -p "$W"

run() { # NAME ENV... -- SIM-ARGS...: a recording in $W/NAME, its truth in $W/NAME/truth
  d=$W/$1
  shift
  mkdir -p "$d" && : >"$d/truth"
  e=""
  while [ "$1" != "--" ]; do e="$e $1"; shift; done
  shift
  env $e NCCLSCOPE_DIR="$d/trace" "$SIM" --plugin "$PLUGIN" "$@" >"$d/sim.out" 2>&1 || { cat "$d/sim.out"; fail "nccl-sim $*"; }
}

# REPORT NAME TAG ARGS...: report --json ARGS into $W/NAME/TAG.json (exit status 0 wanted)
report() {
  rd=$W/$1 rt=$2
  shift 2
  "$NCS" report --json "$@" "$rd/trace" >"$rd/$rt.json" 2>"$rd/$rt.err" || { cat "$rd/$rt.err"; fail "report $* on $rd"; }
}

# EXPECT2 NAME WHAT ARGS...: a usage error whose message holds WHAT
expect2() {
  d=$W/$1 what=$2
  shift 2
  "$NCS" report "$@" "$d/trace" >"$d/out" 2>"$d/err"
  rc=$?
  [ $rc -eq 2 ] || { cat "$d/err"; fail "report $* on $d: exit $rc, want 2"; }
  grep -q -- "$what" "$d/err" || { cat "$d/err"; fail "report $* on $d does not say '$what'"; }
}

TAGS=2
for r in "one --scenario allreduce --ranks 4 --threads 1" "threads --scenario allreduce --ranks 4 --threads 2" \
         "procs --scenario mixed --seed 2 --ranks 4 --procs 2 --threads 2"; do
  set -- $r
  name=$1
  shift
  run "$name" -- --ranges --range-outer --range-truth "$W/$name/truth" --iters $ITERS --user-tags $TAGS "$@"
  report "$name" whole
  k=1
  while [ $k -le $ITERS ]; do
    report "$name" "step$k" --range "step:$k"
    tag=$(( 1 + (k - 1) / TAGS ))
    report "$name" "tag$k" --tag $tag
    report "$name" "steptag$k" --range "step:$k" --tag $tag
    report "$name" "stepnottag$k" --range "step:$k" --tag $(( tag + 1 ))
    k=$((k + 1))
  done
  report "$name" step23 --range step:2-3
  report "$name" step14 --range step:1 --range step:4
  report "$name" comm --range comm
  report "$name" train --range train
  report "$name" optimizer --range optimizer
  report "$name" tags --tag 1,3-9
  report "$name" tag99 --tag 99
  python3 - "$W/$name" $ITERS $TAGS <<'PY' || fail "$name: see above"
import json, sys
d, iters, tags = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
bad = []
steps = {}  # (pid, tid) -> [ops of its 1st, 2nd, ... step]
for line in open(d + "/truth"):
    f = line.split()
    if f[0] != "R": continue
    t = {k: v for k, v in (x.split("=", 1) for x in f[1:])}
    if t["name"] == "step":
        steps.setdefault((t["pid"], t["tid"]), []).append((int(t["b0"]), int(t["ops"])))
threads = len(steps)
want = [0] * (iters + 1)  # want[k]: operations of the k-th steps
for v in steps.values():
    v.sort()
    if len(v) != iters: bad.append("a thread has %d steps, not %d" % (len(v), iters))
    for k, (_, ops) in enumerate(v, 1): want[k] += ops
def load(t): return json.load(open("%s/%s.json" % (d, t)))
def ops(r): return r["collectives"]["rank_ops"] + r["p2p"]["sends"] + r["p2p"]["recvs"]
def inst(r): return r["collectives"]["instances"] + r["p2p"]["pairs"]
whole = load("whole")
if "filter" in whole: bad.append("a filter without asking")
if sum(want) != ops(whole): bad.append("the truth's steps hold %d operations, the job %d" % (sum(want), ops(whole)))
def check(t, n, text, ranges=None):
    r = load(t)
    f = r.get("filter")
    if not f: return bad.append("%s: no filter in the output" % t)
    if text not in f["text"]: bad.append("%s: filter text %r lacks %r" % (t, f["text"], text))
    if ops(r) != n: bad.append("%s: %d operations, want %d" % (t, ops(r), n))
    if inst(r) + f["instances_left_out"] + f["p2p_left_out"] // 2 != inst(whole):
        bad.append("%s: kept %d + left out %d/%d is not the job's %d" % (t, inst(r), f["instances_left_out"], f["p2p_left_out"], inst(whole)))
    s = f["selection"]
    for k in ("partial", "end_unknown", "late", "range_records_lost", "ops_no_ranges", "ops_before_ranges", "ops_no_tag"):
        if s[k]: bad.append("%s: selection %s=%s" % (t, k, s[k]))
    if ranges is not None and s["ranges"] != ranges: bad.append("%s: %d ranges selected, want %d" % (t, s["ranges"], ranges))
    return r
total = 0
for k in range(1, iters + 1):
    r = check("step%d" % k, want[k], "step:%d" % k, threads)
    total += inst(r)
    tag = 1 + (k - 1) // tags
    tw = sum(want[i] for i in range(1, iters + 1) if 1 + (i - 1) // tags == tag)
    check("tag%d" % k, tw, "user tag %d" % tag)
    check("steptag%d" % k, want[k], "step:%d, user tag %d" % (k, tag))
    check("stepnottag%d" % k, 0, "user tag %d" % (tag + 1))
if total != inst(whole): bad.append("the steps keep %d instances together, the job has %d" % (total, inst(whole)))
check("step23", want[2] + want[3], "step:2-3", 2 * threads)
check("step14", want[1] + want[4], "step:1 or step:4", 2 * threads)
check("comm", ops(whole), "comm", iters * threads)
check("optimizer", 0, "optimizer", iters * threads)
tr = check("train", ops(whole), "train", threads)
for k in ("collectives", "p2p", "buckets", "ranks"):
    a, b = whole[k], tr[k]
    if k == "buckets": a, b = [(x["func"], x["count"], x["bytes"]) for x in a], [(x["func"], x["count"], x["bytes"]) for x in b]
    if k == "ranks": a, b = [(x["rank"], x["instances"]) for x in a], [(x["rank"], x["instances"]) for x in b]
    if a != b: bad.append("--range train changed %s: %s vs %s" % (k, b, a))
check("tags", sum(want[i] for i in range(1, iters + 1) if 1 + (i - 1) // tags != 2), "user tags 1,3-9")
check("tag99", 0, "user tag 99")
if bad:
    print("\n".join(bad[:20])); sys.exit(1)
print("%s: threads=%d ops=%d" % (d.rsplit("/", 1)[1], threads, ops(whole)))
PY
done

# the text report says the filter
"$NCS" report --range step:2 --tag 1 "$W/procs/trace" >"$W/procs/text" 2>&1 || fail "text report"
grep -q "^Filter: inside the user range step:2, user tag 1 (4 ranges selected): " "$W/procs/text" ||
  { grep Filter "$W/procs/text"; fail "the text report does not state the filter"; }

# what the job cannot answer: usage errors that say why
expect2 procs "no user range of that name in the job (its ranges: train, step, comm, optimizer)" --range nope
expect2 procs "no user range of that name" --range step --range Step
expect2 procs "no thread began 7 ranges named step (at most 6)" --range step:7
expect2 procs "a range name, NAME:N" --range step:0
expect2 procs "a range name, NAME:N" --range step:3-2
expect2 procs "needs the name of a user range" --range :
expect2 procs "needs NCCL user tags" --tag 1,
expect2 procs "needs NCCL user tags" --tag 5-2
run plain -- --scenario allreduce --ranks 2 --iters 3
expect2 plain "this recording has no user ranges (none were recorded" --range step
run v5 -- --ranges --scenario allreduce --ranks 2 --iters 3 --abi 5
expect2 v5 "--tag: this recording has no user tags (NCCL's ABI v7, NCCL 2.31 or later, records them)" --tag 1
report v5 step --range step:2 # ranges still work there
run off NCCLSCOPE_RANGES=off -- --scenario allreduce --ranks 2 --iters 3
expect2 off "this recording has no user ranges (they were off: NCCLSCOPE_RANGES=off)" --range step

# a flight recording holds a window of the run: "train" began before it (partial, said), and
# holds everything; a step leaves out only what it says it cannot tell (operations still open
# when the window began, whose own step ended before it)
run flight NCCLSCOPE_MODE=flight NCCLSCOPE_FLIGHT_SIZE=1M -- --ranges --range-outer --scenario allreduce \
  --ranks 2 --threads 1 --iters 3000
report flight whole
report flight train --range train
report flight step --range step
report flight step1 --range step:1
python3 - "$W/flight" <<'PY' || fail "flight: see above"
import json, sys
d = sys.argv[1]
def load(t): return json.load(open("%s/%s.json" % (d, t)))
whole, train, step, step1 = load("whole"), load("train"), load("step"), load("step1")
bad = []
ops = lambda r: r["collectives"]["rank_ops"]
f = train["filter"]
if ops(train) != ops(whole) or f["instances_left_out"]: bad.append("--range train left out %s" % f)
if f["selection"]["partial"] != 1 or "partial" not in f["text"]: bad.append("train not said partial: %s" % f)
f = step["filter"]
early = f["selection"]["ops_before_ranges"]
if not ops(whole) - ops(step) <= early: bad.append("--range step left out %d operations, said %d" % (ops(whole) - ops(step), early))
if early and "cannot tell" not in f["text"]: bad.append("cannot tell not said: %s" % f["text"])
if not step1["filter"]["selection"]["flight_numbered"] or "numbered from its window" not in step1["filter"]["text"]:
    bad.append("the numbering of a flight window is not said: %s" % step1["filter"])
# the window's first step may have begun before it (restated by the oldest slot's keyframe, its
# operations in a slot already reused): then it is partial, said so, and holds at most its 2
s1 = step1["filter"]["selection"]
if s1["partial"]:
    if ops(step1) > 2 or "partial" not in step1["filter"]["text"]:
        bad.append("step:1 is partial and kept %d operations (at most 2), or it is not said: %s" % (ops(step1), step1["filter"]))
elif ops(step1) != 2: bad.append("step:1 kept %d operations, want 2" % ops(step1))
if bad:
    print("\n".join(bad)); sys.exit(1)
print("flight: ops=%d step=%d cannot_tell=%d" % (ops(whole), ops(step), early))
PY
echo "range filter: ok"
