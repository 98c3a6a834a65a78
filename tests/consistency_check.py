#!/usr/bin/env python3
"""consistency_check.py SIM PLUGIN NCCLSCOPE WORKDIR CASE - every consumer of the job model
(docs/model.md) names the same facts about one recording: report (terminal, --json, --html), the
Chrome timeline (the Perfetto one has the same slices: tests/export_check.sh), the SQLite
database and diagnose.

  slowed  a coupled mixed job with rank 1 slowed: the same instances (commId, func, seqNumber),
          first arrivals, skews, first and last ranks in the timeline and SQLite; the same
          straggler counts and waiting in JSON and SQLite; the same findings and warnings in the
          terminal, the JSON, the HTML page and SQLite's meta; diagnose's completed collectives
          per communicator are the complete instances; per-rank waiting within the wall time
  drops   every event through a small buffer: the same loss windows in the JSON coverage, the
          timeline's 'loss' slices and SQLite's losses table, the same warnings everywhere
  hang    rank 2 skips an AllReduce: diagnose names it, and that instance is the incomplete one
          of the report, the timeline and SQLite, with the same ranks seen
The jobs run in model time (nccl-sim --clock model): their times come from nccl-sim's model, so
the straggler and the instances are the same on a loaded machine (docs/testing.md). What drops
depends on how fast the plugin's writer keeps up; the consumers must agree on it whatever it is.
"""
import html
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys

SIM, PLUGIN, NCS, W, CASE = sys.argv[1:6]


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def run(args, ok=(0,), env=None):
    p = subprocess.run(args, capture_output=True, text=True, env=env)
    if p.returncode not in ok:
        fail("%s exited %d: %s" % (" ".join(args), p.returncode, p.stderr[-2000:]))
    return p


def record(extra_env, sim_args, ok=(0,)):
    env = dict(os.environ, NCCLSCOPE_DIR=os.path.join(W, "t"), **extra_env)
    run([SIM, "--plugin", PLUGIN, "--clock", "model"] + sim_args, ok=ok, env=env)
    return os.path.join(W, "t")


def outputs(t):
    """every consumer's view of the recording"""
    o = {}
    o["json"] = json.loads(run([NCS, "report", "--json", t], ok=(0, 4)).stdout)
    o["text"] = run([NCS, "report", t], ok=(0, 4)).stdout
    page = os.path.join(W, "r.html")
    run([NCS, "report", "--force", "--html", page, t], ok=(0, 4))
    o["html"] = open(page).read()
    cj = os.path.join(W, "t.json")
    run([NCS, "export", "-q", "--force", "-f", "chrome", "-o", cj, t], ok=(0, 4))
    o["chrome"] = json.load(open(cj))["traceEvents"]
    db = os.path.join(W, "t.sqlite")
    run([NCS, "export", "-q", "--force", "-f", "sqlite", "-o", db, t], ok=(0, 4))
    o["db"] = sqlite3.connect(db)
    o["diag"] = json.loads(run([NCS, "diagnose", "--json", t], ok=(0, 1, 4)).stdout)
    return o


def instances(o):
    """(commId hex, func, seq) -> facts, from the timeline's job slices and from SQLite"""
    tl = {}
    for e in o["chrome"]:
        if e.get("cat") == "job" and e.get("ph") == "X":
            a = e["args"]
            key = (int(a["commId"], 16), a["func"], a["seqNumber"])
            if key in tl:
                fail("timeline: instance %s twice" % (key,))
            tl[key] = dict(ts_ns=round(e["ts"] * 1000), skew=a["skew_ns"], first=a["first_rank"],
                           last=a["straggler_rank"], seen=a["ranks_seen"])
    db = {}
    q = ("SELECT m.comm_hex, c.func, c.seq, c.first_arrival_job_ns, c.skew_ns, c.first_rank, "
         "c.last_rank, c.nranks_seen, c.complete FROM collectives c JOIN comms m ON m.id = c.comm")
    for hexid, func, seq, first_ns, skew, first, last, seen, complete in o["db"].execute(q):
        key = (int(hexid, 16), func, seq)
        if key in db:
            fail("sqlite: instance %s twice" % (key,))
        db[key] = dict(first_ns=first_ns, skew=skew, first=first, last=last, seen=seen,
                       complete=complete)
    return tl, db


def check_instances(o):
    tl, db = instances(o)
    n = o["json"]["collectives"]["instances"]
    if not (len(tl) == len(db) == n):
        fail("instances: timeline %d, sqlite %d, report %d" % (len(tl), len(db), n))
    if set(tl) != set(db):
        fail("instances differ: %s" % sorted(set(tl) ^ set(db))[:5])
    origin = None
    for k in tl:
        a, b = tl[k], db[k]
        if (a["skew"], a["first"], a["last"], a["seen"]) != (b["skew"], b["first"], b["last"], b["seen"]):
            fail("instance %s: timeline %s, sqlite %s" % (k, a, b))
        d = b["first_ns"] - a["ts_ns"]  # the timeline's time origin, the same for every instance
        if origin is None:
            origin = d
        elif abs(d - origin) > 1:
            fail("instance %s starts at another time in the timeline and SQLite (%d vs %d ns)" %
                 (k, d, origin))
    return tl, db


def unwrap(text, mark):
    """the items starting with `mark` ("  - ", "  ! "), with the terminal's wrapped
    continuation lines (4 spaces) joined back"""
    out, cur = [], None
    for l in text.splitlines():
        if l.startswith(mark):
            out.append(l[4:])
            cur = True
        elif cur and l.startswith("    ") and not l.startswith("     "):
            out[-1] += " " + l.strip()
        else:
            cur = None
    return out


def finding_lines(text):
    return unwrap(text, "  - ")


def check_findings(o):
    r = o["json"]
    # terminal, HTML, JSON: the same findings and warnings
    text_find = finding_lines(o["text"].split("\nFindings\n", 1)[1].split("\n\n", 1)[0])
    page_find = [html.unescape(x) for x in re.findall(r'<li class="(?:rank|job|none)">([^<]*)', o["html"])]
    if text_find != page_find:
        fail("findings: terminal %s, page %s" % (text_find, page_find))
    keys = [w["key"] for w in r["warnings"]]
    page_keys = re.findall(r'<li class="warn" data-key="([a-z_0-9]+)">', o["html"])
    meta = dict(o["db"].execute("SELECT key, value FROM meta"))
    meta_keys = sorted(k[len("warning_"):] for k in meta if k.startswith("warning_"))
    text_warn = unwrap(o["text"], "  ! ")
    if keys != page_keys or sorted(keys) != meta_keys or len(text_warn) != len(keys):
        fail("warnings: json %s, page %s, sqlite %s, terminal %d" % (keys, page_keys, meta_keys, len(text_warn)))
    for w in r["warnings"]:
        if w["text"] not in text_warn or meta["warning_" + w["key"]] != w["text"]:
            fail("warning %s: not the same text everywhere" % w["key"])
    if int(meta["instances"]) != r["collectives"]["instances"]:
        fail("meta instances %s, report %d" % (meta["instances"], r["collectives"]["instances"]))
    # per (comm, rank): the same last arrivals and waiting in JSON and SQLite
    comms = {c["index"]: int(c["comm_id"], 16) for c in r["communicators"]}
    dbr = {}
    for hexid, rank, last, caused, suffered in o["db"].execute(
            "SELECT m.comm_hex, r.rank, SUM(r.last_arrivals), SUM(r.wait_caused_ns), "
            "SUM(r.wait_suffered_ns) FROM ranks r JOIN comms m ON m.id = r.comm GROUP BY r.comm, r.rank"):
        dbr[(int(hexid, 16), rank)] = (last, caused, suffered)
    counted = dict(((int(h, 16), rk), n) for h, rk, n in o["db"].execute(
        "SELECT m.comm_hex, c.last_rank, COUNT(*) FROM collectives c JOIN comms m ON m.id = c.comm "
        "WHERE c.last_counted = 1 GROUP BY c.comm, c.last_rank"))
    for x in r["ranks"]:
        key = (comms[x["comm"]], x["rank"])
        want = (x["last_arrivals"], x["wait_caused_ns"], x["wait_suffered_ns"])
        if dbr.get(key) != want:
            fail("rank %s: json %s, sqlite ranks %s" % (key, want, dbr.get(key)))
        if counted.get(key, 0) != x["last_arrivals"]:
            fail("rank %s: %d last arrivals, %d instances name it" % (key, x["last_arrivals"], counted.get(key, 0)))
        if x["wait_suffered_ns"] > r["wall_ns"]:
            fail("rank %s waited %d ns in a job of %d ns" % (key, x["wait_suffered_ns"], r["wall_ns"]))
    for s in r["stragglers"]:
        n = [c["nranks"] for c in r["communicators"] if c["index"] == s["comm"]][0]
        if s["wait_caused_ns"] / (n - 1) > r["wall_ns"]:
            fail("straggler %s caused more waiting per rank than the job lasted" % s)


def check_diagnose(o, db):
    per_comm = {}
    for k, v in db.items():
        per_comm[k[0]] = per_comm.get(k[0], 0) + (1 if v["complete"] else 0)
    for c in o["diag"]["communicators"]:
        want = per_comm.get(int(c["comm_id"], 16), 0)
        if c["completed_on_all"] != want:
            fail("diagnose: %s completed %d collectives on every rank, the instances say %d" %
                 (c["comm_id"], c["completed_on_all"], want))


shutil.rmtree(W, ignore_errors=True)
os.makedirs(W)
if CASE == "slowed":
    t = record({}, ["--scenario", "mixed", "--ranks", "4", "--procs", "2", "--iters", "30",
                    "--couple", "on", "--slow-rank", "1", "--slow-us", "20000"])
    o = outputs(t)
    tl, db = check_instances(o)
    check_findings(o)
    if not o["json"]["stragglers"] or any(s["rank"] != 1 for s in o["json"]["stragglers"]):
        fail("the slowed rank is not the straggler: %s" % o["json"]["stragglers"])
    if o["diag"]["status"] != "ok":
        fail("diagnose: %s" % o["diag"]["status"])
    check_diagnose(o, db)
elif CASE == "drops":
    t = record({"NCCLSCOPE_EVENTS": "all", "NCCLSCOPE_BUFFER_SIZE": "64K"},
               ["--scenario", "mixed", "--ranks", "4", "--iters", "100"])
    o = outputs(t)
    cov = o["json"]["coverage"]
    windows = sum(cov["loss_windows"].values())
    if not cov["lost_records"]["drops"]:
        print("consistency check drops: SKIP: nothing dropped")
        sys.exit(77)
    slices = [e for e in o["chrome"] if e.get("cat") == "loss" and e.get("ph") == "X"]
    rows = o["db"].execute("SELECT COUNT(*), SUM(CASE WHEN kind = 'drops' THEN records END) FROM losses").fetchone()
    if not (windows == len(slices) == rows[0]):
        fail("loss windows: report %d, timeline %d, sqlite %d" % (windows, len(slices), rows[0]))
    if rows[1] != cov["lost_records"]["drops"]:
        fail("dropped records: report %d, sqlite %s" % (cov["lost_records"]["drops"], rows[1]))
    if sum(e["args"]["records"] for e in slices if e["args"]["kind"] == "drops") != rows[1]:
        fail("dropped records: the timeline's slices disagree")
    check_instances(o)
    check_findings(o)
    if "lost" not in [w["key"] for w in o["json"]["warnings"]]:
        fail("no warning about the lost records")
    if [v for v in o["diag"]["verdicts"] if v["kind"] in ("stuck_inside", "not_entered")]:
        fail("diagnose: a hang in a job that ended: %s" % o["diag"]["verdicts"])
elif CASE == "hang":
    t = record({}, ["--scenario", "allreduce", "--ranks", "4", "--procs", "4", "--iters", "10",
                    "--fault", "skip:2:5", "--hang-s", "2"], ok=(3,))
    o = outputs(t)
    tl, db = check_instances(o)
    check_findings(o)
    v = o["diag"]["verdicts"][0]
    if v["kind"] != "not_entered" or v["rank"] != 2:
        fail("diagnose: %s" % v)
    key = (int(v["comm_id"], 16), v["func"], v["seq"])
    if key not in db or db[key]["complete"] or db[key]["seen"] != 3 or tl[key]["seen"] != 3:
        fail("the instance diagnose names (%s) is not the incomplete one: sqlite %s, timeline %s" %
             (key, db.get(key), tl.get(key)))
    if [k for k, x in db.items() if not x["complete"] and k != key]:
        fail("other incomplete instances: %s" % [k for k, x in db.items() if not x["complete"]])
    if o["json"]["collectives"]["incomplete"] != 1:
        fail("report: %d incomplete instances" % o["json"]["collectives"]["incomplete"])
else:
    fail("unknown case " + CASE)
print("consistency check %s: ok" % CASE)
