#!/bin/sh
# overhead_check.sh BUILD SRCDIR WORKDIR CASE - bench/overhead.sh's logic without a GPU: the
# benchmark program is tests/overhead_stub.sh, whose times follow a model, so every figure of the
# tables can be checked. In the plugins case the stub loads the real plugins through nccl-sim,
# so the script's "loaded" and drop checks see real traces.
# CASE: model | plugins | budget | fail | noise | usage
set -eu
B=$1 S=$2 W=$3 CASE=$4
rm -rf "$W" && mkdir -p "$W/state"
export NCS_STUB_STATE="$W/state"
OVH="$S/bench/overhead.sh" STUB="$S/tests/overhead_stub.sh"
fail() { echo "FAIL: $*"; tail -40 "$W/out.txt" 2>/dev/null; exit 1; }
case $CASE in
model)
  bash "$OVH" -b "$B" --perf "$STUB" -o "$W/o" -r 14 --min 8 --max 16M --factor 8 \
    --transport nvlink,socket --graph both --ops allreduce,alltoall >"$W/out.txt" 2>&1 ||
    fail "overhead.sh exited $?"
  python3 - "$W/o" "$W/out.txt" "$B" <<'PY' || fail "figures"
import os, sys, statistics as st
d, outp, build = sys.argv[1:4]
out = open(outp).read()
lv = ["none", "empty-default", "ncclscope-default", "empty-full", "ncclscope-full", "empty-flight",
      "ncclscope-flight"]
key = {"none": "n", "empty-default": "ed", "ncclscope-default": "nd", "empty-full": "ef",
       "ncclscope-full": "nf", "empty-flight": "efl", "ncclscope-flight": "nfl"}
floor = {"ncclscope-default": "empty-default", "ncclscope-full": "empty-full",
         "ncclscope-flight": "empty-flight"}
ADD = {"n": 0, "ed": 2, "nd": 2.5, "ef": 5, "nf": 6, "efl": 2.1, "nfl": 2.2}
OFF = {"n": 0, "ed": 1, "nd": 2, "ef": 3, "nf": 0, "efl": 2, "nfl": 1}
NL = len(lv)
R = NL if NL % 2 == 0 else 2 * NL  # a complete Williams design
NOISE = [0, .05, .01, .2]
sizes = [8 * 8 ** i for i in range(8)]  # 8 .. 16 MiB
def t(l, b, k, tf, graph):  # the stub's model, k = 0-based run count of that level
    k_ = key[l]
    return round((5 + b / 2000) * tf * (1 + NOISE[(k + OFF[k_]) % 4]) + ADD[k_] / (2 if graph else 1), 2)
runs = [l.rstrip("\n").split("\t") for l in open(os.path.join(d, "runs.tsv")) if not l.startswith("#")]
# warm-up run (rep 0) per transport/mode: counts for the none level's k
assert sum(r[4] == "0" for r in runs) == 4, "warm-up runs"
assert all(r[10] in ("ok", "warmup") for r in runs), [r for r in runs if r[10] not in ("ok", "warmup")]
for r in runs:
    assert r[7] == ("-" if r[3] == "none" else "yes"), ("plugin not loaded", r)
# the order: a Williams design per transport/mode: every level at every position equally often
# in R reps, and every ordered pair of levels adjacent
for tr in ("nvlink", "socket"):
    for mode in ("eager", "graph"):
        seq = {}
        for r in runs:
            if r[0] == tr and r[1] == mode and r[4] != "0":
                seq.setdefault(int(r[4]), []).append(r[3])
        assert sorted(seq) == list(range(1, R + 1)), seq
        for p in range(NL):
            assert sorted(seq[k][p] for k in seq) == sorted(lv * (R // NL)), ("position", p, seq)
        pairs = [(s[i], s[i + 1]) for s in seq.values() for i in range(NL - 1)]
        assert len(set(pairs)) == NL * (NL - 1), pairs
res = [l.rstrip("\n").split("\t") for l in open(os.path.join(d, "results.tsv")) if not l.startswith("#")]
# every perf line is there with the model's time
n = 0
for r in res:
    tr, mode, procs, l, rep, op, b, tm, ok, nr = r
    tf = 3 if tr == "socket" else 1
    k = int(rep) - (0 if l == "none" else 1)  # none ran once more (the warm-up) before
    want = t(l, int(b), k, tf, mode == "graph")
    assert abs(float(tm) - want) < 1e-6, (r, want)
    n += 1
assert n == 4 * 2 * len(sizes) * (NL * R + 1), n
# the tables and summaries, recomputed
summ = {}
for l in open(os.path.join(d, "summary.tsv")):
    if l.startswith("#"): continue
    f = l.split("\t")
    summ[tuple(f[:7])] = [float(x) for x in f[8:11]]
def size(b):
    for u, s in ((1 << 20, "MiB"), (1 << 10, "KiB")):
        if b >= u and b % u == 0: return "%d %s" % (b // u, s)
    return "%d B" % b
checked = 0
for tr, tf in (("nvlink", 1), ("socket", 3)):
    for mode in ("eager", "graph"):
        g = mode == "graph"
        T = {l: {b: [t(l, b, k + (1 if l == "none" else 0), tf, g) for k in range(R)] for b in sizes} for l in lv}
        for op in ("allreduce", "alltoall"):
            head = "### %s, %s, %s, one process (2 ranks)" % (tr, op, mode)
            assert head in out, head
            sec = out[out.index(head):]
            for b in (8, 2 << 20, 16 << 20):
                row = [c.strip() for c in sec[sec.index("\n| %s |" % size(b)) + 1:].split("\n")[0].split("|")[1:-1]]
                cells = [size(b)] + ["%.2f/%.2f" % (min(T[l][b]), st.median(T[l][b])) for l in lv]
                for l in lv[1:]:
                    cells.append("%.3f/%.3f" % (min(T[l][b]) / min(T["none"][b]),
                                                st.median(x / y for x, y in zip(T[l][b], T["none"][b]))))
                for l in ("ncclscope-default", "ncclscope-full", "ncclscope-flight"):
                    f = floor[l]
                    cells.append("%.3f/%.3f" % (min(T[l][b]) / min(T[f][b]),
                                                st.median(x / y for x, y in zip(T[l][b], T[f][b]))))
                assert row == cells, (head, b, row, cells)
                checked += 1
            for l in ("ncclscope-default", "ncclscope-full", "ncclscope-flight"):
                f = floor[l]
                def own(b):
                    return ((min(T[l][b]) - min(T[f][b])) / min(T["none"][b]),
                            st.median((x - e) / n for x, e, n in zip(T[l][b], T[f][b], T["none"][b])))
                big = [own(b) for b in (2 << 20, 16 << 20)]
                for at, want in (("small", own(8) + (own(8)[1],)),
                                 ("large", (st.mean(x[0] for x in big), st.mean(x[1] for x in big), max(x[1] for x in big)))):
                    got = summ[(tr, mode, "0", op, l, "own", at)]
                    assert all(abs(x - y) < 1e-4 for x, y in zip(got, want)), (tr, mode, op, l, at, got, want)
                    checked += 1
                o8 = own(8)
                line = [x for x in sec.split("\n") if x.strip().startswith(l[len("ncclscope-"):] + " (floor")][0]
                assert "8 B: %+.1f%% best, %+.1f%% median" % (100 * o8[0], 100 * o8[1]) in line, (line, o8)
            over8 = summ[(tr, mode, "0", op, "ncclscope-default", "over_base", "small")]
            want = min(T["ncclscope-default"][8]) / min(T["none"][8]) - 1
            assert abs(over8[0] - want) < 1e-4, (over8, want)
print("checked", checked)
PY
  # the tables again from the files, without running anything
  bash "$OVH" --table-only "$W/o" >"$W/again.txt" || fail "--table-only exited $?"
  cmp -s "$W/again.txt" "$W/o/summary.md" || fail "--table-only differs from summary.md"
  ;;
plugins)
  # the plugins loaded for real (nccl-sim), traces measured, drops counted, flight files kept
  NCS_STUB_SIM="$B/nccl-sim" bash "$OVH" -b "$B" --perf "$STUB" -o "$W/o" -r 1 --max 64 \
    --no-warmup-run --keep-traces --add-level "st-default selftime empty-default" \
    >"$W/out.txt" 2>&1 || fail "overhead.sh exited $?"
  # the selftime level: ncclscope with its calls timed, summarized per call kind
  grep -q "^  st-default nvlink eager procs=0: [0-9]* ns per operation; .*start GroupApi [0-9]*" "$W/out.txt" ||
    fail "no selftime summary: $(grep -A2 'time inside' "$W/out.txt")"
  python3 - "$W/o" "$B" <<'PY' || fail "runs.tsv"
import os, sys
d, b = sys.argv[1:3]
runs = [l.rstrip("\n").split("\t") for l in open(os.path.join(d, "runs.tsv")) if not l.startswith("#")]
assert sorted(r[3] for r in runs) == sorted(["none", "empty-default", "ncclscope-default",
    "empty-full", "ncclscope-full", "empty-flight", "ncclscope-flight", "st-default"]), runs
for r in runs:
    assert r[10] == "ok", r
    assert r[7] == ("-" if r[3] == "none" else "yes"), r
    if r[3].startswith("ncclscope") or r[3] == "st-default":
        assert int(r[9]) > 0, ("trace bytes", r)
        if os.access(os.path.join(b, "ncclscope"), os.X_OK):
            assert r[8] == "0", ("drops", r)
PY
  ls "$W"/o/traces/nvlink-eager-p0-ncclscope-flight-r1/*.nsflight >/dev/null 2>&1 || fail "flight level wrote no .nsflight"
  ls "$W"/o/traces/nvlink-eager-p0-ncclscope-default-r1/*.nstrace >/dev/null 2>&1 || fail "default level wrote no .nstrace"
  grep -q "ncclscope-empty: abi=v7 mask=0xf47 sample=1" "$W"/o/logs/nvlink-eager-p0-empty-default-r1.log || fail "empty-default mask"
  grep -q "ncclscope-empty: abi=v7 mask=0xf47 sample=1" "$W"/o/logs/nvlink-eager-p0-empty-flight-r1.log || fail "empty-flight mask"
  grep -q "ncclscope-empty: abi=v7 mask=0xffff " "$W"/o/logs/nvlink-eager-p0-empty-full-r1.log || fail "empty-full mask"
  ;;
budget)
  # How many runs fit in the budget depends on the machine's pace (a loaded one fits fewer), so
  # the checks are the budget's own rules, on any machine: it stopped early and said so; its
  # loop ended within the budget plus the kill grace of the run it cut short (timeout -k 5); the
  # tables show exactly the measured runs of runs.tsv, and are there when one was measured.
  NCS_STUB_SLEEP=0.5 bash "$OVH" -b "$B" --perf "$STUB" -o "$W/o" -r 10 --max 64K --budget 4 \
    >"$W/out.txt" 2>&1 || fail "overhead.sh exited $? (a budget stop is not an error)"
  grep -q "time budget of 4s nearly used up after [0-9]*s: stopped in repetition [0-9]* of 10" "$W/out.txt" ||
    fail "no budget message"
  python3 - "$W/o/runs.tsv" "$W/out.txt" <<'PY' || fail "the budget's rules"
import re, sys
runs = [l.rstrip("\n").split("\t") for l in open(sys.argv[1]) if not l.startswith("#")]
out = open(sys.argv[2]).read()
m = re.search(r"^# ncclscope GPU overhead: .*, (\d+)s, (\d+) runs$", out, re.M)
assert m, "no summary line"
assert int(m.group(1)) <= 4 + 5, "the runs went on %ss with --budget 4" % m.group(1)
assert len(runs) < 1 + 7 * 10, "every run ran: %d" % len(runs)
measured = [r for r in runs if r[4] != "0" and r[10] == "ok"]
if measured:
    assert re.search(r"^\| 8 B \| ", out, re.M), "no table after the budget stop"
    lv = ["none", "empty-default", "ncclscope-default", "empty-full", "ncclscope-full", "empty-flight", "ncclscope-flight"]
    # the levels that ran at all (a warm-up counts), in the table's order: how many runs fit
    # depends on the machine's pace
    seen = {r[3] for r in runs}
    want = "repetitions: " + ", ".join("%s %d" % (l, len({r[4] for r in measured if r[3] == l})) for l in lv if l in seen)
    assert want in out, ("repetition counts", want)
else:
    assert not re.search(r"^\| 8 B \| ", out, re.M), "a table without a measured run"
print("budget: %d runs (%d measured) in %ss" % (len(runs), len(measured), m.group(1)))
PY
  ;;
fail)
  NCS_STUB_FAIL=nd bash "$OVH" -b "$B" --perf "$STUB" -o "$W/o" -r 2 --max 64K --no-warmup-run \
    >"$W/out.txt" 2>&1 && fail "a failed run must give exit status 1"
  grep -q "nvlink-eager-p0-ncclscope-default-r1 *exit1" "$W/out.txt" || fail "the failed run is not shown"
  grep -q "stub failure for level nd" "$W/out.txt" || fail "the failed run's log tail is not shown"
  grep -q "^failed runs (1): nvlink-eager-0-ncclscope-default-r1 (exit1)" "$W/out.txt" || fail "failed runs line"
  grep -q "^repetitions: none 2, empty-default 2, ncclscope-default 1, " "$W/out.txt" || fail "repetitions"
  grep -q "^| 8 B | " "$W/out.txt" || fail "no table"
  ;;
noise)
  # --noise (none twice), an ext level (another plugin by path: the empty one here), --pin, and the
  # table of paired differences in us with its bootstrap interval, recomputed from results.tsv
  bash "$OVH" -b "$B" --perf "$STUB" -o "$W/o" -r 6 --max 64 --no-warmup-run --noise --pin 0 \
    --levels ncclscope-default,none-again,other --add-level "other ext - NCCL_PROFILER_PLUGIN=$B/libnccl-profiler-empty.so NCS_EMPTY_EVENTS=default" \
    >"$W/out.txt" 2>&1 || fail "overhead.sh exited $?"
  grep -q "levels: none empty-default ncclscope-default none-again other;" "$W/out.txt" || fail "levels"
  grep -q "taskset -c 0 " "$W"/o/logs/nvlink-eager-p0-none-again-r1.log || fail "--pin is not in the command"
  python3 - "$W/o" "$W/out.txt" <<'PY' || fail "differences"
import os, random, statistics as st, sys
d, outp = sys.argv[1:3]
out = open(outp).read()
res = [l.rstrip("\n").split("\t") for l in open(os.path.join(d, "results.tsv")) if not l.startswith("#")]
T = {}
for r in res:
    T.setdefault(r[3], {}).setdefault(int(r[6]), {})[r[4]] = float(r[7])
sec = out[out.index("## Differences per operation, us"):]
head = [c.strip() for c in sec[sec.index("\n| size |") + 1:].split("\n")[0].split("|")[1:-1]]
assert head == ["size", "noise floor: none-again - none", "default - empty-default: ncclscope's own cost",
                "empty-default - none", "other - none"], head
def boot(v):
    rnd = random.Random(12345)
    m = sorted(st.median(rnd.choices(v, k=len(v))) for _ in range(2000))
    return m[50], m[1949]
for b, label in ((8, "8 B"), (32, "32 B")):
    row = [c.strip() for c in sec[sec.index("\n| %s |" % label) + 1:].split("\n")[0].split("|")[1:-1]]
    want = [label]
    for x, y in (("none-again", "none"), ("ncclscope-default", "empty-default"), ("empty-default", "none"), ("other", "none")):
        v = [T[x][b][k] - T[y][b][k] for k in T[x][b] if k in T[y][b]]
        assert len(v) == 6, (x, y, v)
        lo, hi = boot(v)
        want.append("%+.2f [%+.2f, %+.2f]" % (st.median(v), lo, hi))
    assert row == want, (row, want)
# the stub's model: ncclscope-default is 0.5 us over its floor at every repetition whose noise
# matches; the interval must hold the median
print("differences ok")
PY
  set +e
  bash "$OVH" -b "$B" --perf "$STUB" --add-level "x ext -" >/dev/null 2>&1; [ $? -eq 2 ] || fail "ext without NCCL_PROFILER_PLUGIN: want 2"
  bash "$OVH" -b "$B" --perf "$STUB" --pin 99999 >/dev/null 2>&1; [ $? -eq 2 ] || fail "--pin 99999: want 2"
  set -e
  ;;
usage)
  set +e
  bash "$OVH" --bogus >/dev/null 2>&1; [ $? -eq 2 ] || fail "unknown option: want 2"
  bash "$OVH" --graph maybe >/dev/null 2>&1; [ $? -eq 2 ] || fail "--graph maybe: want 2"
  bash "$OVH" --transport ib >/dev/null 2>&1; [ $? -eq 2 ] || fail "--transport ib: want 2"
  bash "$OVH" -b "$B" --perf "$STUB" --levels ncclscope-nope >/dev/null 2>&1; [ $? -eq 2 ] || fail "unknown level: want 2"
  bash "$OVH" -b "$W/nothing" >/dev/null 2>&1; [ $? -eq 2 ] || fail "no ncs_perf: want 2"
  bash "$OVH" --help | grep -q -- "--budget" || fail "--help"
  set -e
  # --levels adds the base and the floor
  bash "$OVH" -b "$B" --perf "$STUB" -o "$W/o" -r 1 --max 64 --levels ncclscope-full --no-warmup-run >"$W/out.txt" 2>&1 ||
    fail "--levels run"
  grep -q "levels: none empty-full ncclscope-full;" "$W/out.txt" || fail "--levels did not add none and empty-full"
  ;;
*) echo "unknown case $CASE"; exit 2 ;;
esac
echo "overhead check $CASE: ok"
