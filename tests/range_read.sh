#!/bin/sh
# range_read.sh SIM PLUGIN FAKEDIR NCS WORKDIR MODE (tests/ranges.cmake): the read side of user
# ranges against nccl-sim's --range-truth. MODE truth: nccl-sim runs its iterations inside ranges
# under the fake CUPTI; `report --json` (per name and per rank) and the SQLite `ranges` table must
# hold every range, with the operation counts and bytes per range exactly, wall times within the
# push/pop windows, and exposed communication known. MODE lost (POOL FAULTINJ): the writer thread's
# first write hangs (libncs-faultinj.so, NCS_FAULT_STALL) until every thread has run all its iterations
# and popped its outer range "train", so the pool (POOL) fills and range records are dropped
# however fast the machine is; the report must say they were lost, every "train" range (pushed
# before the pool filled, popped after) must be there without an end and without numbers, and no
# range may show shorter than nccl-sim made it; `report --range train` must keep every operation
# (a train range holds all that follows its begin) and say their ends are unknown and records were
# lost (docs/cli.md "Filters"). MODE flight (POOL: the flight ring's size): a flight recording of
# 3000 iterations; each range of its window is counted once in the report, the SQLite table and
# the timeline, however its oldest slot's keyframe restated it.
set -u
SIM=$1 PLUGIN=$2 FAKE=$3 NCS=$4 W=$5 MODE=$6 LINT=${9:-}
THREADS=2
fail() { echo "range read: FAILED: $*"; exit 1; }
rm -rf "$W" && mkdir -p "$W" && : >"$W/truth"
if [ "$MODE" = flight ]; then
  env NCCLSCOPE_DIR="$W/trace" NCCLSCOPE_MODE=flight NCCLSCOPE_FLIGHT_SIZE="$7" "$SIM" --plugin "$PLUGIN" --ranges \
    --range-truth "$W/truth" --scenario allreduce --ranks 2 --threads 1 --iters 3000 --range-outer \
    >"$W/sim.out" 2>&1 || { cat "$W/sim.out"; fail "nccl-sim"; }
  "$NCS" dump "$W/trace" | sed -n 's/.* RANGE BEGIN .* id=\([0-9]*\) .*/\1/p' | sort -u | wc -l >"$W/ids" ||
    fail "ncclscope dump"
elif [ "$MODE" = truth ]; then
  env NCCLSCOPE_DIR="$W/trace" NCCLSCOPE_CUPTI=on "$SIM" --plugin "$PLUGIN" --ranges --range-truth "$W/truth" \
    --scenario allreduce --ranks 4 --threads 2 --iters 6 --compute 2 --cupti "$FAKE/libcupti.so.13" \
    --cuda "$FAKE/libcuda.so.1" >"$W/sim.out" 2>&1 || { cat "$W/sim.out"; fail "nccl-sim"; }
else
  env LD_PRELOAD="$8" ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0" \
    NCS_FAULT_DIR="$W/trace" NCS_FAULT_STALL=1 NCS_FAULT_UNTIL="$W/release" \
    NCS_FAULT_LOG="$W/fault.log" NCCLSCOPE_DIR="$W/trace" NCCLSCOPE_BUFFER_SIZE="$7" "$SIM" --plugin "$PLUGIN" \
    --ranges --range-truth "$W/truth" --scenario allreduce --iters 3000 --threads $THREADS --ranks 4 --range-outer \
    >"$W/sim.out" 2>&1 &
  pid=$!
  # the writer hangs, and every thread has popped "train": all of its records were made meanwhile
  t0=$(date +%s)
  until grep -q ' stall$' "$W/fault.log" 2>/dev/null && [ "$(grep -c ' name=train ' "$W/truth")" -ge $THREADS ]; do
    kill -0 $pid 2>/dev/null || break
    [ $(($(date +%s) - t0)) -lt 200 ] || { kill $pid; wait $pid; fail "no stall and $THREADS 'train' ranges after 200 s"; }
    sleep 0.1
  done
  : >"$W/release"
  wait $pid || { cat "$W/sim.out"; fail "nccl-sim"; }
  grep -q ' stall$' "$W/fault.log" 2>/dev/null || fail "the writer never hung (libncs-faultinj.so not preloaded?)"
fi
"$NCS" report --json "$W/trace" >"$W/report.json" || fail "report --json"
"$NCS" report --top 3 "$W/trace" >"$W/report.txt" || fail "report"
if [ "$MODE" = lost ]; then
  "$NCS" report --json --range train "$W/trace" >"$W/train.json" || fail "report --range train"
fi
"$NCS" report --html "$W/report.html" --force "$W/trace" >/dev/null || fail "report --html"
"$NCS" export "$W/trace" --format sqlite -o "$W/db.sqlite" >/dev/null 2>&1 || fail "export sqlite"
"$NCS" export "$W/trace" --format chrome -o "$W/trace.json" >/dev/null 2>&1 || fail "export chrome"
"$NCS" export "$W/trace" -o "$W/trace.pftrace" >/dev/null 2>&1 || fail "export perfetto"
[ -z "${LINT:-}" ] || "$LINT" "$W/trace.pftrace" >/dev/null || fail "ncs-pftrace-lint"
python3 - "$W" "$MODE" $THREADS <<'PY' || fail "see above"
import json, sqlite3, sys
w, mode = sys.argv[1], sys.argv[2]
truth = []
for line in open(w + "/truth"):
    f = line.split()
    if f[0] == "R":
        truth.append({k: v for k, v in (x.split("=", 1) for x in f[1:])})
rep = json.load(open(w + "/report.json"))["ranges"]
db = sqlite3.connect(w + "/db.sqlite")
rows = db.execute("SELECT name, state, wall_ns, colls + p2ps, bytes, begin_job_ns, exposed_ns, lower_bound "
                  "FROM ranges").fetchall()
bad = []
text = open(w + "/report.txt").read()
# the export's range track (docs/timeline.md "Range tracks"): Chrome JSON, the same slices as the
# .pftrace
ev = json.load(open(w + "/trace.json"))
ev = ev["traceEvents"] if isinstance(ev, dict) else ev
sl = [e for e in ev if e.get("cat") == "range" and e.get("ph") == "X"]
other = set((e["pid"], e["tid"]) for e in ev if e.get("ph") == "X" and e.get("cat") != "range")
if any((e["pid"], e["tid"]) in other for e in sl): bad.append("range slices share a track with others")
for e in sl:
    a = e["args"]
    if a["state"] == "ended":
        if "wall_ns" not in a or abs(e["dur"] * 1000 - a["wall_ns"]) > 2:
            bad.append("slice %s: dur %s, wall_ns %s" % (e["name"], e["dur"], a.get("wall_ns")))
    elif "wall_ns" in a or "colls" in a: bad.append("a %s slice %s has numbers" % (a["state"], e["name"]))
if mode == "truth":
    names = {}
    for t in truth:
        n = names.setdefault(t["name"], {"n": 0, "ops": 0, "bytes": 0, "lo": [], "hi": []})
        n["n"] += 1; n["ops"] += int(t["ops"]); n["bytes"] += int(t["bytes"])
        n["lo"].append(int(t["e0"]) - int(t["b1"])); n["hi"].append(int(t["e1"]) - int(t["b0"]))
    by = {g["name"]: g for g in rep["by_name"]}
    if set(by) != set(names): bad.append("names %s != truth %s" % (sorted(by), sorted(names)))
    for name, t in names.items():
        g = by.get(name)
        if not g: continue
        for k, v in (("ranges", t["n"]), ("measured", t["n"]), ("colls", t["ops"]), ("bytes", t["bytes"])):
            if g[k] != v: bad.append("%s: %s=%s, truth %s" % (name, k, g[k], v))
        if not sum(t["lo"]) <= g["wall_ns"] <= sum(t["hi"]):
            bad.append("%s: wall %d outside [%d, %d]" % (name, g["wall_ns"], sum(t["lo"]), sum(t["hi"])))
        if g["exposed_ns"] is None: bad.append("%s: exposed unknown with CUPTI on" % name)
        if g["no_end"] or g["partial"]: bad.append("%s: no_end/partial" % name)
        ranks = sum(r["ranges"] for r in rep["by_rank"] if r["name"] == name)
        if ranks != t["n"]: bad.append("%s: by_rank sums %d, truth %d" % (name, ranks, t["n"]))
        dbn = [r for r in rows if r[0] == name]
        if len(dbn) != t["n"] or sum(r[3] for r in dbn) != t["ops"] or sum(r[4] for r in dbn) != t["bytes"] \
           or sum(r[2] for r in dbn) != g["wall_ns"]:
            bad.append("%s: sqlite rows disagree with the truth or the report" % name)
        es = [e for e in sl if e["name"] == name]
        if len(es) != t["n"] or sum(e["args"]["colls"] for e in es) != t["ops"] \
           or sum(e["args"]["bytes"] for e in es) != t["bytes"] or any(e["args"]["state"] != "ended" for e in es) \
           or sum(e["args"]["wall_ns"] for e in es) != g["wall_ns"] or any("exposed_ns" not in e["args"] for e in es):
            bad.append("%s: export slices disagree with the truth or the report" % name)
        if len(set((e["pid"], e["args"]["rank"]) for e in es)) != len(set(r["rank"] for r in rep["by_rank"] if r["name"] == name)):
            bad.append("%s: range slices not on one process per rank" % name)
    # the HTML page's table: a row per name with its count (the same as the JSON)
    import re
    html = open(w + "/report.html").read()
    if 'id="ranges-table"' not in html: bad.append("no ranges table in the HTML page")
    for name, t in names.items():
        if not re.search(r'<td class="l">%s</td><td>\d+</td><td>%d</td><td>%d</td>' % (re.escape(name), t["n"], t["n"]), html):
            bad.append("%s: the HTML row does not say %d ranges" % (name, t["n"]))
    if len(sl) != len(truth): bad.append("%d range slices, truth %d" % (len(sl), len(truth)))
    if rep["records_lost"] or rep["end_lost"] or "! lost" in text: bad.append("losses reported where none")
    summary = "mode=truth names=%d ranges=%d" % (len(names), rep["ranges"])
elif mode == "flight":
    # a flight window: its oldest slot's keyframe restates ranges (some before the slot's own records
    # begin them); each range is one range, whatever the order its copies come in
    ids = int(open(w + "/ids").read())
    if rep["ranges"] != ids: bad.append("%d ranges in the report, %d distinct range ids in the file" % (rep["ranges"], ids))
    if sum(g["ranges"] for g in rep["by_name"]) != ids: bad.append("by_name sums %d, %d ids" % (sum(g["ranges"] for g in rep["by_name"]), ids))
    if len(rows) != ids or len(sl) != ids: bad.append("%d sqlite rows, %d slices, %d ids" % (len(rows), len(sl), ids))
    if rep["open"] or rep["end_lost"]: bad.append("open=%d end_lost=%d after a clean exit" % (rep["open"], rep["end_lost"]))
    # no name has more ranges than nccl-sim made
    for g in rep["by_name"]:
        n = sum(1 for t in truth if t["name"] == g["name"])
        if g["ranges"] > n: bad.append("%s: %d ranges, nccl-sim made %d" % (g["name"], g["ranges"], n))
    summary = "mode=flight ranges=%d partial=%d" % (rep["ranges"], rep["partial"])
else:
    if not rep["records_lost"] and not rep["end_lost"] and not rep["begin_lost"]:
        bad.append("nothing said lost (is the pool small enough?)")
    if "! lost" not in text: bad.append("the text report does not say ranges were lost")
    if "range records lost" not in open(w + "/report.html").read(): bad.append("the HTML page does not say ranges were lost")
    if not rep["records_lost"]: bad.append("no range record counted lost (dropped)")
    # each thread's "train" was pushed before the pool filled and popped while it was full
    train = [r for r in rows if r[0] == "train"]
    if len(train) != int(sys.argv[3]) or any(r[1] == "ended" for r in train):
        bad.append("train ranges %s: want %s, none ended" % ([r[1] for r in train], sys.argv[3]))
    train = [e for e in sl if e["name"] == "train"]
    if len(train) != int(sys.argv[3]) or any(e["args"]["state"] == "ended" for e in train):
        bad.append("train slices %s: want %s, none ended" % ([e["args"]["state"] for e in train], sys.argv[3]))
    if len(sl) != len(rows): bad.append("%d range slices, %d sqlite rows" % (len(sl), len(rows)))
    # every range whose end was lost or never came has no numbers: no wall time, never a short range
    for r in rows:
        if r[1] != "ended" and r[2] is not None: bad.append("a %s range has wall %s" % (r[1], r[2]))
    # every ended range lasts at least what nccl-sim's shortest such range did
    for name in set(t["name"] for t in truth):
        lo = min(int(t["e0"]) - int(t["b1"]) for t in truth if t["name"] == name)
        for r in rows:
            if r[0] == name and r[1] == "ended" and r[2] < lo:
                bad.append("%s shorter (%d) than any truth range (%d)" % (name, r[2], lo))
        for e in sl:
            if e["name"] == name and e["args"]["state"] == "ended" and e["args"]["wall_ns"] < lo:
                bad.append("slice %s shorter (%d) than any truth range (%d)" % (name, e["args"]["wall_ns"], lo))
    # --range train: everything kept; the ends and the lost records said
    whole, tr = json.load(open(w + "/report.json")), json.load(open(w + "/train.json"))
    f = tr["filter"]
    if f["instances_left_out"] or f["p2p_left_out"] or tr["collectives"] != whole["collectives"]:
        bad.append("--range train left out %s" % f)
    s = f["selection"]
    if s["ranges"] != int(sys.argv[3]) or s["end_unknown"] != int(sys.argv[3]):
        bad.append("--range train: %s, want %s ranges, every end unknown" % (s, sys.argv[3]))
    if not s["range_records_lost"] or s["files_lost"] != 1 or "lost" not in f["text"] or "never ended" not in f["text"]:
        bad.append("--range train does not say what was lost: %s" % f)
    nolost = sum(1 for r in rows if r[1] != "ended")
    summary = "mode=lost records_lost=%d end_lost=%d open=%d rows_without_end=%d" % (
        rep["records_lost"], rep["end_lost"], rep["open"], nolost)
if bad:
    print("\n".join(bad[:20])); sys.exit(1)
print("range read: ok " + summary)
PY
