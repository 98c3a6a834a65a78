#!/usr/bin/env python3
"""export_filter_check.py - `ncclscope export --comm/--rank/--from/--to` in every format
(docs/cli.md "Filters"), on one nccl-sim job (mixed: two communicators, collectives, sends and
receives, kernel channels and phases, proxy operations, steps and network events, CE work, groups).

usage: export_filter_check.py MODE WORKDIR NCCLSCOPE LINT SIM PLUGIN [OTF2_READ]
  MODE timeline  Perfetto (ncs-pftrace-lint) and Chrome JSON
       sqlite    the database (SQLite)
       otf2      the archive (otf2-print, and otf2_read: OTF2's reader API)

The truth is the unfiltered SQLite export of the same job: every operation with its rows and its
children's. For each filter (one of the two communicators; rank 1; a window that splits the
operations, its ends between two arrivals) the expected operations are worked out from it
independently of the filter code (instances kept whole, a send/receive by its two ranks, a
collective by its first arrival, a send/receive by the earlier one), then the filtered output
must hold exactly them and all their pieces, and nothing of the others (no track, row, record of
the other communicator; no event of no operation of another rank, or outside the window, which
must still hold every such event of that rank and window). The output must say what it covers.
An all-passing filter (--from 0) keeps every count of the unfiltered export, a filter that keeps
nothing writes an output that says so and warns, and a --comm that is not the job's is refused
(status 2) with nothing written. Exit 77 (skipped) without sqlite3 for the truth, or otf2-print.
"""
import collections
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys

mode, work, ncs, lint, sim, plugin = sys.argv[1:7]
otf2_read = sys.argv[7] if len(sys.argv) > 7 else None
bad = 0


def fail(msg):
    print("FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


def check(cond, msg):
    global bad
    if cond:
        print("ok: " + msg)
    else:
        print("FAIL: " + msg, file=sys.stderr)
        bad = 1


def run(*args, rc=0, env=None):
    p = subprocess.run(list(args), capture_output=True, text=True, env=env)
    if rc is not None and p.returncode != rc:
        fail("%s: status %d (want %d): %s" % (" ".join(args), p.returncode, rc, p.stderr[-2000:]))
    return p


if mode == "otf2" and not shutil.which("otf2-print"):
    print("SKIP: otf2-print not installed (otf2-tools)")
    sys.exit(77)
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
trace = os.path.join(work, "t")
env = dict(os.environ, NCCLSCOPE_DIR=trace, NCCLSCOPE_EVENTS="all", NCCLSCOPE_CLOCK="monotonic")
run(sim, "--plugin", plugin, "--scenario", "mixed", "--ranks", "4", "--procs", "4", "--iters", "12",
    env=env)

# ---------------------------------------------------------------- the truth
truth = os.path.join(work, "all.sqlite")
if run(ncs, "export", "-q", "-f", "sqlite", trace, "-o", truth, rc=None).returncode == 2:
    print("SKIP: this ncclscope has no SQLite export (libsqlite3-dev): no truth to compare with")
    sys.exit(77)
A = sqlite3.connect(truth)
A.row_factory = sqlite3.Row
q = lambda sql, *a: A.execute(sql, a).fetchall()
for sql in ("SELECT COUNT(*) FROM kernel_channels WHERE operation_id IS NULL",
            "SELECT COUNT(*) FROM proxy_ops WHERE operation_id IS NULL",
            "SELECT COUNT(*) FROM proxy_steps WHERE proxy_op_id IS NULL",
            "SELECT COUNT(*) FROM kernel_phases WHERE kernel_channel_id IS NULL"):
    if q(sql)[0][0]:  # the expectations below assume every such row has its operation
        fail("the job has rows without their operation: " + sql)
# the job's first event (docs/model.md): the earliest START, STOP or STATE record
dump = run(ncs, "dump", "--abs", trace).stdout
t_first = min(int(m.group(1)) for m in re.finditer(r"^\S+ seg=\d+ t=(\d+) (?:START|STOP|STATE) ",
                                                   dump, re.M))
comms = {r["id"]: r["comm_hex"] for r in q("SELECT id, comm_hex FROM comms")}
if len(comms) != 2:
    fail("the mixed scenario should have two communicators, not %d" % len(comms))
CID = max(comms)
CHEX, OTHER = comms[CID], comms[min(comms)]
RANK = 1
# rank of each process (one rank per process here, the same in both communicators)
prank = {r["process_id"]: r["rank"] for r in q("SELECT process_id, rank FROM ranks")}
ppid = {r["id"]: r["pid"] for r in q("SELECT id, pid FROM processes")}
if sorted(prank.values()) != [0, 1, 2, 3] or len(set(q("SELECT DISTINCT process_id, rank FROM ranks"))) != 4:
    fail("one rank per process expected")
ops = q("SELECT i.id, type, comm, rank, process_id, segment, event_id, collective_id, "
        "arrival_job_ns, api_start_mono_ns + p.job_offset_ns AS api_job_ns "
        "FROM operations i JOIN processes p ON p.id = i.process_id")
if sum(1 for o in ops if o["api_job_ns"] is None) > len(ops) // 4:
    fail("most operations should have their API call recorded")
pairs = q("SELECT send_id, recv_id, sender, receiver, send_arrival_job_ns AS sa, "
          "recv_arrival_job_ns AS ra FROM p2p")
paired = {p["send_id"] for p in pairs} | {p["recv_id"] for p in pairs}
colls = {r["id"]: r for r in q("SELECT id, comm, first_arrival_job_ns AS fa, nranks_seen FROM collectives")}

# a window whose ends lie between two arrivals: about a quarter to two thirds of them
keys = sorted({c["fa"] - t_first for c in colls.values()} |
              {min(p["sa"], p["ra"]) - t_first for p in pairs})
lo, hi = len(keys) // 4, len(keys) * 2 // 3
FROM, TO = (keys[lo - 1] + keys[lo]) // 2, (keys[hi] + keys[hi + 1]) // 2


def expected(kind):
    """instance row ids (of the truth) of the operations that pass"""
    keep = set()
    for o in ops:
        if o["type"] == "Coll":
            c = colls[o["collective_id"]]
            if kind == "comm": ok = c["comm"] == CID
            elif kind == "rank": ok = any(x["rank"] == RANK for x in ops if x["collective_id"] == o["collective_id"] and x["type"] == "Coll")
            else: ok = FROM <= c["fa"] - t_first <= TO
        else:
            p = [p for p in pairs if o["id"] in (p["send_id"], p["recv_id"])]
            if kind == "comm": ok = o["comm"] == CID
            elif not p: ok = o["rank"] == RANK if kind == "rank" else FROM <= o["arrival_job_ns"] - t_first <= TO
            elif kind == "rank": ok = RANK in (p[0]["sender"], p[0]["receiver"])
            else: ok = FROM <= min(p[0]["sa"], p[0]["ra"]) - t_first <= TO
        if ok: keep.add(o["id"])
    return keep


def children(keep):
    """the truth's rows of these operations: (process_id, segment, event_id) per table"""
    ids = ",".join(map(str, keep)) or "NULL"
    k = lambda t, w: {tuple(r) for r in q("SELECT process_id, segment, event_id FROM %s WHERE %s" % (t, w))}
    return {
        "operations": k("operations", "id IN (%s)" % ids),
        "kernel_channels": k("kernel_channels", "operation_id IN (%s)" % ids),
        "proxy_ops": k("proxy_ops", "operation_id IN (%s)" % ids),
        "proxy_steps": k("proxy_steps", "proxy_op_id IN (SELECT id FROM proxy_ops WHERE operation_id IN (%s))" % ids),
        "kernel_phases": k("kernel_phases", "kernel_channel_id IN (SELECT id FROM kernel_channels WHERE operation_id IN (%s))" % ids),
    }


FILTERS = {"comm": ["--comm", CHEX], "rank": ["--rank", str(RANK)],
           "window": ["--from", "%d.%03dus" % divmod(FROM, 1000), "--to", "%d.%03dus" % divmod(TO, 1000)]}
EXP = {}
for kind in FILTERS:
    keep = expected(kind)
    EXP[kind] = (keep, children(keep))
    n_ops = len(ops)
    if not 0 < len(keep) < n_ops:
        fail("%s: the filter should keep some of the %d operations, not %d" % (kind, n_ops, len(keep)))
    print("%s %s: %d of %d operations pass" % (kind, " ".join(FILTERS[kind]), len(keep), n_ops))
n_coll = lambda keep: len({o["collective_id"] for o in ops if o["id"] in keep and o["type"] == "Coll"})
n_pairs = lambda keep: len([p for p in pairs if p["send_id"] in keep])


def export(fmt, out, *flt, rc=0):
    return run(ncs, "export", "--force", "-f", fmt, trace, "-o", out, *flt, rc=rc)


def refused(fmt, out):
    """a --comm the job does not have: status 2, the job's commIds listed, nothing written"""
    p = export(fmt, out, "--comm", "0x00000000000000ab", rc=2)
    check("no such communicator" in p.stderr and CHEX in p.stderr and not os.path.exists(out),
          "%s: --comm of no communicator of the job: status 2, nothing written" % fmt)


# ================================================================ SQLite
def sqlite_mode():
    tables = ["operations", "kernel_channels", "proxy_ops", "proxy_steps", "kernel_phases"]
    for kind, flt in FILTERS.items():
        db = os.path.join(work, kind + ".sqlite")
        err = export("sqlite", db, *flt).stderr
        D = sqlite3.connect(db)
        d = lambda sql: D.execute(sql).fetchall()
        keep, rows = EXP[kind]
        for t in tables:
            got = {tuple(r) for r in d("SELECT process_id, segment, event_id FROM " + t)}
            check(got == rows[t], "%s: %s holds the %d rows of the operations that passed (got %d: "
                  "%d missing, %d not theirs)" % (kind, t, len(rows[t]), len(got),
                                                  len(rows[t] - got), len(got - rows[t])))
        check(d("SELECT COUNT(*) FROM collectives")[0][0] == n_coll(keep),
              "%s: collectives: the %d instances kept" % (kind, n_coll(keep)))
        check(d("SELECT COUNT(*) FROM p2p")[0][0] == n_pairs(keep),
              "%s: p2p: the %d pairs kept" % (kind, n_pairs(keep)))
        check(d("SELECT COUNT(*) FROM operations WHERE type = 'Coll'")[0][0] ==
              sum(colls[c]["nranks_seen"] for c in {o["collective_id"] for o in ops if o["id"] in keep and o["type"] == "Coll"}),
              "%s: Coll rows = instances kept x their ranks" % kind)
        meta = dict(d("SELECT key, value FROM meta WHERE key LIKE 'filter%'"))
        check(meta.get("filter_instances_kept") == str(n_coll(keep)) and
              meta.get("filter_operations_kept") == str(len(keep)) and meta.get("filter") and
              int(meta.get("filter_instances_left_out", -1)) == len(colls) - n_coll(keep) and
              int(meta.get("filter_p2p_left_out", -1)) == 2 * (len(pairs) - n_pairs(keep)),
              "%s: meta says what it covers: %s" % (kind, meta))
        check("filter: " in err and "left out" in err, "%s: the summary states the filter" % kind)
        # false positives: nothing of what was left out
        if kind == "comm":
            check(d("SELECT COUNT(*) FROM operations WHERE comm IS NOT %d" % CID)[0][0] == 0 and
                  d("SELECT COUNT(*) FROM kernel_channels WHERE comm IS NOT %d" % CID)[0][0] == 0 and
                  d("SELECT COUNT(*) FROM proxy_ops WHERE comm IS NOT %d" % CID)[0][0] == 0 and
                  d("SELECT COUNT(*) FROM collectives WHERE comm != %d" % CID)[0][0] == 0,
                  "comm: no row of the other communicator")
        elif kind == "rank":
            check(d("SELECT COUNT(*) FROM p2p WHERE sender != %d AND receiver != %d" % (RANK, RANK))[0][0] == 0,
                  "rank: no send/receive between other ranks")
            check(d("SELECT COUNT(*) FROM collectives c WHERE NOT EXISTS (SELECT 1 FROM operations i "
                    "WHERE i.collective_id = c.id AND i.rank = %d)" % RANK)[0][0] == 0,
                  "rank: no collective without the rank")
        else:
            check(d("SELECT COUNT(*) FROM collectives WHERE first_arrival_job_ns < %d OR "
                    "first_arrival_job_ns > %d" % (t_first + FROM, t_first + TO))[0][0] == 0,
                  "window: no collective arriving outside it")
        check(d("PRAGMA integrity_check")[0][0] == "ok", "%s: integrity_check" % kind)
    # an all-passing filter: every table as without one
    db = os.path.join(work, "from0.sqlite")
    export("sqlite", db, "--from", "0")
    D = sqlite3.connect(db)
    names = [r[0] for r in q("SELECT name FROM sqlite_master WHERE type = 'table' AND name != 'meta'")]
    diff = [t for t in names if D.execute("SELECT COUNT(*) FROM " + t).fetchone()[0] !=
            q("SELECT COUNT(*) FROM " + t)[0][0]]
    check(not diff and len(names) > 20, "--from 0: the %d tables have the rows of the unfiltered "
          "export (differ: %s)" % (len(names), diff))
    check(D.execute("SELECT value FROM meta WHERE key = 'filter_rows_left_out'").fetchone()[0] == "0" and
          not q("SELECT * FROM meta WHERE key LIKE 'filter%'"),
          "--from 0: meta says nothing was left out; the unfiltered export has no filter keys")
    # nothing passes
    db = os.path.join(work, "none.sqlite")
    err = export("sqlite", db, "--from", "1000s").stderr
    D = sqlite3.connect(db)
    check(all(D.execute("SELECT COUNT(*) FROM " + t).fetchone()[0] == 0 for t in tables + ["collectives", "p2p"]) and
          "no collective" in D.execute("SELECT value FROM meta WHERE key = 'filter_result'").fetchone()[0] and
          "warning: no collective or send/receive passed" in err,
          "nothing passes: an empty database whose meta says so, and a warning")
    refused("sqlite", os.path.join(work, "refused.sqlite"))


# ================================================================ Perfetto and Chrome JSON
def chrome(path):
    """the Chrome JSON: processes by rank, lanes' names, complete events, otherData"""
    d = json.load(open(path))
    ev = d["traceEvents"]
    rank_of = {}
    for e in ev:
        if e.get("ph") == "M" and e["name"] == "process_name":
            m = re.match(r"rank (\d+) ", e["args"]["name"])
            if m: rank_of[e["pid"]] = int(m.group(1))
    lanes = {(e["pid"], e["tid"]): e["args"]["name"] for e in ev if e.get("ph") == "M" and e["name"] == "thread_name"}
    xs = [e for e in ev if e.get("ph") == "X"]
    return d, rank_of, lanes, xs


# events of no operation, as the timeline names them
OWN = {"group": None, "proxyctrl": None, "ce": None, "api": ("ncclGroup", "kernel launch")}


def own_events(xs):
    return [e for e in xs if e["cat"] in OWN and (OWN[e["cat"]] is None or e["name"] in OWN[e["cat"]])]


def span(e, zero):
    b = round(e["ts"] * 1000) + zero  # µs with 3 decimals: whole ns
    return b, b + round(e["dur"] * 1000)


def timeline_mode():
    # the truth's rows as the timeline shows them: (rank, event id)
    rk = lambda rows: {(prank[p], i) for p, s, i in rows}
    base = os.path.join(work, "from0")
    export("perfetto", base + ".pftrace", "--from", "0")
    export("chrome", base + ".json", "--from", "0")
    _, rank0, lanes0, xs0 = chrome(base + ".json")
    zero0 = [e for e in xs0 if e["cat"] == "filter"][0]["args"]["time_zero_job_ns"]
    for kind, flt in FILTERS.items():
        pf, js = os.path.join(work, kind + ".pftrace"), os.path.join(work, kind + ".json")
        err = export("perfetto", pf, *flt).stderr
        export("chrome", js, *flt)
        run(lint, pf)
        summary = dict(l.split() for l in run(lint, "--summary", pf).stdout.splitlines())
        d, rank_of, lanes, xs = chrome(js)
        keep, rows = EXP[kind]
        cat = collections.Counter(e["cat"] for e in xs)
        check(all(int(summary.get("slices." + c, 0)) == n for c, n in cat.items()) and
              int(summary["slices"]) == len(xs), "%s: the .pftrace and the JSON have the same slices "
              "per kind (%s)" % (kind, dict(cat)))
        got = lambda c: {(rank_of[e["pid"]], e["args"]["id"]) for e in xs if e["cat"] in c}
        for c, t in ((("coll", "p2p"), "operations"), (("kernel",), "kernel_channels"),
                     (("proxyop",), "proxy_ops"), (("proxystep",), "proxy_steps"),
                     (("kernelphase",), "kernel_phases")):
            check(got(c) == rk(rows[t]), "%s: %s slices are those of the %d %s rows of the operations "
                  "that passed (got %d)" % (kind, "/".join(c), len(rows[t]), t, len(got(c))))
        check(cat["job"] == n_coll(keep) and int(summary["flows"]) ==
              len([o for o in ops if o["id"] in keep and o["type"] == "Coll"]) + n_pairs(keep),
              "%s: one job slice per instance kept, a flow per Coll and pair kept" % kind)
        mk = [e for e in xs if e["cat"] == "filter"]
        check(len(mk) == 1 and d["otherData"].get("filter") == mk[0]["args"]["filter"] and
              mk[0]["args"]["instances_kept"] == n_coll(keep) and
              mk[0]["args"]["operations_kept"] == len(keep) and
              mk[0]["args"]["p2p_left_out"] == 2 * (len(pairs) - n_pairs(keep)) and
              mk[0]["name"].startswith("filter: ") and "filter: " in err,
              "%s: the file and the summary say what it covers: %s" % (kind, mk[0]["name"] if mk else None))
        zero = mk[0]["args"]["time_zero_job_ns"]
        # API calls (CollApi/P2pApi) go with their operation: every kept one's, none of the others'
        api = {(rank_of[e["pid"]], round(e["ts"] * 1000) + zero) for e in xs
               if e["cat"] == "api" and e["name"] not in OWN["api"]}
        mine = {(o["rank"], o["api_job_ns"]) for o in ops if o["api_job_ns"] is not None and o["id"] in keep}
        others = {(o["rank"], o["api_job_ns"]) for o in ops if o["api_job_ns"] is not None and o["id"] not in keep}
        check(mine <= api and not (others & api), "%s: the %d API calls of the operations that passed, "
              "none of the %d others'" % (kind, len(mine), len(others)))
        own = own_events(xs)
        own_all = own_events(xs0)
        key = lambda e, z, r: (r[e["pid"]], e["cat"], e["name"], round(e["ts"] * 1000) + z)
        if kind == "comm":
            named = [n for n in lanes.values() if re.match(r"c\d+ 0x", n)]
            check(named and all(CHEX in n for n in named) and not any(OTHER in n for n in lanes.values()),
                  "comm: no track of the other communicator (%d of this one)" % len(named))
        elif kind == "rank":
            want = {key(e, zero0, rank0) for e in own_all if rank0[e["pid"]] == RANK}
            check({key(e, zero, rank_of) for e in own} == want and want,
                  "rank: the %d events of no operation (groups, launches, proxy progress, CE) are "
                  "rank %d's, all of them" % (len(want), RANK))
        else:
            w0, w1 = t_first + FROM, t_first + TO
            ov = lambda e, z: span(e, z)[0] <= w1 and span(e, z)[1] >= w0
            want = {key(e, zero0, rank0) for e in own_all if ov(e, zero0)}
            check({key(e, zero, rank_of) for e in own} == want and want and len(want) < len(own_all),
                  "window: the %d events of no operation that overlap it, and only those" % len(want))
            check(any(span(e, zero)[0] < w0 for e in own) or
                  not any(span(e, zero0)[0] < w0 <= span(e, zero0)[1] for e in own_all),
                  "window: one that began before it and reaches into it is there")
    # the same bytes for any number of threads (events held back for the window included)
    one, three = os.path.join(work, "j1.pftrace"), os.path.join(work, "j3.pftrace")
    run(ncs, "export", "-q", "--jobs", "1", trace, "-o", one, *FILTERS["window"])
    run(ncs, "export", "-q", "--jobs", "3", trace, "-o", three, *FILTERS["window"])
    check(open(one, "rb").read() == open(three, "rb").read(), "window: --jobs 1 and 3 write the same bytes")
    # an all-passing filter: every count as without one, and the marker
    run(ncs, "export", "-q", trace, "-o", os.path.join(work, "all.pftrace"))
    s_all = dict(l.split() for l in run(lint, "--summary", os.path.join(work, "all.pftrace")).stdout.splitlines())
    s_0 = dict(l.split() for l in run(lint, "--summary", base + ".pftrace").stdout.splitlines())
    extra = {"packets", "sequences", "tracks", "tracks.slice", "tracks.group", "rows", "slices", "slices.filter"}
    check(all(s_all.get(k) == s_0.get(k) for k in set(s_all) | set(s_0) if k not in extra) and
          int(s_0["slices"]) == int(s_all["slices"]) + 1 and s_0.get("slices.filter") == "1",
          "--from 0: every count of the unfiltered export, and the filter's marker")
    # nothing passes
    pf = os.path.join(work, "none.pftrace")
    err = export("perfetto", pf, "--from", "1000s").stderr
    run(lint, pf)
    s = dict(l.split() for l in run(lint, "--summary", pf).stdout.splitlines())
    check(s["slices"] == "1" and s["processes"] == "0" and "warning: no collective" in err,
          "nothing passes: only the marker, no process, and a warning")
    refused("perfetto", os.path.join(work, "refused.pftrace"))
    refused("chrome", os.path.join(work, "refused.json"))


# ================================================================ OTF2
def otf2_events(arch):
    out = run("otf2-print", arch + "/traces.otf2").stdout
    recs = collections.Counter(l.split()[0] for l in out.splitlines() if re.match(r"^[A-Z_]+ +\d+ +\d+", l))
    locs = {}
    for l in run("otf2-print", "-G", arch + "/traces.otf2").stdout.splitlines():
        m = re.match(r'^LOCATION +(\d+) +Name: "([^"]*)".*Group: "([^"]*)"', l)
        if m: locs[int(m.group(1))] = (m.group(2), m.group(3))
    groups = []  # GroupApi intervals: (location, enter, leave)
    apis = set()  # CollApi/P2pApi calls: (process group, enter)
    stack = collections.defaultdict(list)
    for l in out.splitlines():
        m = re.match(r'^(ENTER|LEAVE) +(\d+) +(\d+) +Region: "([^"]*)"', l)
        if not m: continue
        loc, ts = int(m.group(2)), int(m.group(3))
        if m.group(1) == "ENTER":
            stack[loc].append((m.group(4), ts))
            if re.match(r"nccl[A-Z]", m.group(4)) and not m.group(4).startswith("ncclGroupStart"):
                apis.add((locs[loc][1], ts))
        else:
            r, b = stack[loc].pop()
            if r == "ncclGroupStart..ncclGroupEnd": groups.append((loc, b, ts))
    defs = run("otf2-print", "-G", arch + "/traces.otf2").stdout
    props = run("otf2-print", "-I", arch + "/traces.otf2").stdout
    return recs, locs, groups, defs, props, apis


def otf2_mode():
    args = {"comm": ["comm=" + CHEX], "rank": ["ranks=%d" % RANK], "window": ["from=%d" % FROM, "to=%d" % TO]}
    all_arch = os.path.join(work, "all-otf2")
    run(ncs, "export", "-q", "-f", "otf2", trace, "-o", all_arch)
    recs_all, locs_all, groups_all, _, _, _ = otf2_events(all_arch)
    pid_of_rank = {prank[p]: ppid[p] for p in prank}
    for kind, flt in FILTERS.items():
        arch = os.path.join(work, kind + "-otf2")
        err = export("otf2", arch, *flt).stderr
        r = run(otf2_read, arch + "/traces.otf2", trace, *args[kind], rc=None)
        check(r.returncode == 0 and "otf2_read: ok" in r.stdout, "%s: otf2_read (OTF2's reader API) "
              "agrees with the filtered model: %s" % (kind, (r.stdout + r.stderr).strip()[-300:]))
        recs, locs, groups, defs, props, apis = otf2_events(arch)
        keep, _ = EXP[kind]
        grp = lambda o: "pid %d on " % ppid[o["process_id"]]
        call = lambda o: any(g.startswith(grp(o)) and t == o["api_job_ns"] for g, t in apis)
        mine = [o for o in ops if o["api_job_ns"] is not None and o["id"] in keep]
        others = [o for o in ops if o["api_job_ns"] is not None and o["id"] not in keep]
        check(all(call(o) for o in mine) and not any(call(o) for o in others),
              "%s: the %d API calls of the operations that passed, none of the %d others'" %
              (kind, len(mine), len(others)))
        nc = len([o for o in ops if o["id"] in keep and o["type"] == "Coll"])
        check(recs["MPI_COLLECTIVE_END"] == nc and recs["MPI_SEND"] == n_pairs(keep) and
              recs["MPI_RECV"] == n_pairs(keep), "%s: %d collective records and %d messages: those of "
              "the operations that passed" % (kind, nc, n_pairs(keep)))
        check("NCCLSCOPE::FILTER" in props and "%d collective instances, %d rank operations" %
              (n_coll(keep), len(keep)) in props and "filter: " in err,
              "%s: the archive's properties and the summary say what it covers" % kind)
        check(all(n for n, g in locs.values()) and len(locs) < len(locs_all),
              "%s: %d locations (%d unfiltered): those with nothing left are not written" %
              (kind, len(locs), len(locs_all)))
        if kind == "comm":
            cm = re.findall(r'^COMM +\d+ +Name: "([^"]*)"', defs, re.M)
            check(len(cm) == 1 and CHEX in cm[0] and OTHER not in defs,
                  "comm: only this communicator is defined: %s" % cm)
        elif kind == "rank":
            mine = "pid %d on " % pid_of_rank[RANK]
            want = len([g for g in groups_all if locs_all[g[0]][1].startswith(mine)])
            check(groups and all(locs[g[0]][1].startswith(mine) for g in groups) and len(groups) == want,
                  "rank: the %d group calls are rank %d's, all of them" % (want, RANK))
        else:
            w0, w1 = t_first + FROM, t_first + TO
            want = sorted((b, e) for _, b, e in groups_all if b <= w1 and e >= w0)
            check(want and sorted((b, e) for _, b, e in groups) == want and len(want) < len(groups_all),
                  "window: the %d group calls that overlap it, and only those" % len(want))
    # an all-passing filter: every event record as without one
    arch = os.path.join(work, "from0-otf2")
    export("otf2", arch, "--from", "0")
    recs, _, _, _, props, _ = otf2_events(arch)
    check(recs == recs_all and "NCCLSCOPE::FILTER" in props,
          "--from 0: the events of the unfiltered archive (%s)" % dict(recs))
    # nothing passes: a readable archive that says so
    arch = os.path.join(work, "none-otf2")
    err = export("otf2", arch, "--from", "1000s").stderr
    recs, locs, _, _, props, _ = otf2_events(arch)
    check(not recs and list(locs.values()) == [("nothing passed the export filter", locs[0][1])] and
          "no collective or send/receive passed" in props and "warning: no collective" in err,
          "nothing passes: one location that says so, and a warning")
    refused("otf2", os.path.join(work, "refused-otf2"))


{"sqlite": sqlite_mode, "timeline": timeline_mode, "otf2": otf2_mode}[mode]()
if bad:
    sys.exit(1)
print("export_filter_check: ok")
