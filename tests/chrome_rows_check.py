#!/usr/bin/env python3
"""chrome_rows_check.py NCCLSCOPE LINT NCCL-SIM PLUGIN WORK [--hold N] [--trace DIR] [--xargs 'ARGS']
                       [-- SIM-ARGS...]
- the rows of the Chrome JSON (docs/timeline.md, "Thread rows"): an nccl-sim job (every event
type, GPU channels, proxy and network events), or the recording DIR, is exported as .pftrace and
as JSON, and the JSON is checked against the .pftrace as ncs-pftrace-lint --slices decodes it:

  - every (pid, tid) that holds an event is named (thread_name) and ordered
    (thread_sort_index), names and sort indexes unique within the process;
  - rows: in every row the complete (X) slices nest properly (no partial overlap), and B/E
    events, if any, pair up;
  - rows per process bounded: for every class of rows (the row name without its channels and
    "#k"), rows <= peak + SLACK, where peak is the most top-level slices of the class in flight
    at one instant, which no layout of nesting rows can go below; SLACK (4) allows for slices
    that reach the exporter out of time order (threads write their records in chunks; measured:
    2 more rows at most) and for the gap kept next to slices with flows. And never more rows than
    the .pftrace has lanes in that process. With --hold N (NCCLSCOPE_CHROME_HOLD=N: slices whose
    nested JSON passes N bytes take their row before they end) only the lanes bound applies;
  - nothing lost or changed: the multisets of (pid, cat, name, ts, dur, args) of the slices and
    of (pid, cat, name, ts, args) of the instants equal the .pftrace's (ts in ns: the JSON's
    relative µs plus otherData.origin_ns);
  - flows intact: each flow id has one "s" and one "f"; each binds (the deepest slice of its row
    holding its time, and only one top-level slice holds it) to a slice, and those two slices
    are the ones that carry the id in the .pftrace;
  - a row's name says what it holds: its channels list every channelId of its slices, and a
    KernelPhase nested in a row sits in its own KernelCh (args parent == the KernelCh's id);
  - the JSON is the same for --jobs 1 and --jobs 3;
  - with --xargs (export options, the filters: --rank 2,5 --from 1ms) every export above is
    filtered, so the rows are checked against a .pftrace with the same filter;
  - the size warning (NCCLSCOPE_EXPORT_WARN_SIZE): a threshold below the JSON's size gives the
    warning with the exact size; one above both the size and the estimate gives none.
"""
import bisect, collections, json, os, re, subprocess, sys

SLACK = 4

ncs, lint, sim, plugin, work = sys.argv[1:6]
rest = sys.argv[6:]
hold = None  # --hold N: NCCLSCOPE_CHROME_HOLD for every export (slices take their rows early)
given = None  # --trace DIR: a recording (real GPUs) instead of an nccl-sim job
xargs = []  # --xargs 'ARGS': export options (filters) for every export
while rest[:1] in (["--hold"], ["--trace"], ["--xargs"]):
    if rest[0] == "--hold":
        hold = rest[1]
    elif rest[0] == "--xargs":
        xargs = rest[1].split()
    else:
        given = rest[1]
    rest = rest[2:]
sim_args = rest[1:] if rest[:1] == ["--"] else rest
xenv = {"NCCLSCOPE_CHROME_HOLD": hold} if hold else {}
fails = []


def fail(msg):
    fails.append(msg)
    print("FAIL:", msg)


def run(args, env=None, **kw):
    p = subprocess.run(args, capture_output=True, text=True, env=dict(os.environ, **(env or {})), **kw)
    if p.returncode != 0:
        print(p.stdout[-2000:], p.stderr[-2000:])
        sys.exit("FAIL: %s exited %d" % (" ".join(args), p.returncode))
    return p


subprocess.run(["rm", "-rf", work], check=True)
os.makedirs(work)
trace = given or os.path.join(work, "trace")
if not given:
    run([sim, "--plugin", plugin] + sim_args,
        env={"NCCLSCOPE_DIR": trace, "NCCLSCOPE_EVENTS": "all", "NCCLSCOPE_CLOCK": "monotonic"})
pf, js = os.path.join(work, "t.pftrace"), os.path.join(work, "t.json")
run([ncs, "export", "-q", "--jobs", "2", trace, "-o", pf] + xargs)
p = run([ncs, "export", "--jobs", "2", "-f", "chrome", trace, "-o", js] + xargs, env=xenv)
if xargs and "filter:" not in p.stderr:
    fail("a filtered export does not say what it left out: %s" % p.stderr[:300])
msum = re.search(r"(\d+) tracks in (\d+) thread rows", p.stderr)
if not msum:
    fail("the summary does not give the thread rows: %s" % p.stderr[:300])

doc = json.load(open(js))
origin = int(doc["otherData"]["origin_ns"])
evs = doc["traceEvents"]
ref = [json.loads(l) for l in run([lint, "--slices", pf]).stdout.splitlines()]


def ns(us):  # the JSON's µs with 3 decimals, as integer ns
    return int(round(us * 1000))


# ---- names and order
pname, tname, tsort = {}, {}, {}
for e in evs:
    if e["ph"] != "M":
        continue
    if e["name"] == "process_name":
        pname[e["pid"]] = e["args"]["name"]
    elif e["name"] == "thread_name":
        if (e["pid"], e["tid"]) in tname:
            fail("thread %s named twice" % ((e["pid"], e["tid"]),))
        tname[(e["pid"], e["tid"])] = e["args"]["name"]
    elif e["name"] == "thread_sort_index":
        tsort[(e["pid"], e["tid"])] = e["args"]["sort_index"]
job_pid = [p for p, n in pname.items() if n == "job"]
if len(job_pid) != 1:
    fail("no single process named job: %s" % pname)
used = {(e["pid"], e["tid"]) for e in evs if e["ph"] in "XiBEsf"}
for k in sorted(used):
    if k not in tname or k not in tsort:
        fail("row %s has events but no thread_name or thread_sort_index" % (k,))
    if k[0] not in pname:
        fail("process %s has no process_name" % k[0])
for what, d in (("name", tname), ("sort index", tsort)):
    seen = collections.Counter((k[0], v) for k, v in d.items())
    dup = [k for k, n in seen.items() if n > 1]
    if dup:
        fail("%d thread %ss repeated within a process, e.g. %s" % (len(dup), what, dup[0]))

# ---- every row nests properly
rows = collections.defaultdict(list)
for i, e in enumerate(evs):
    if e["ph"] == "X":
        s = ns(e["ts"])
        rows[(e["pid"], e["tid"])].append((s, s + ns(e["dur"]), i))
bad = 0
tops = {}  # row -> its top-level slices (start, end, index)
for k, v in rows.items():
    v.sort(key=lambda x: (x[0], -x[1], x[2]))
    stack, top = [], []
    for s, t, i in v:
        while stack and stack[-1][1] <= s:
            stack.pop()
        if stack and t > stack[-1][1]:
            bad += 1
            if bad <= 5:
                fail("row %s (%s): slice [%d, %d] overlaps [%d, %d] partly"
                     % (k, tname.get(k), s, t, stack[-1][0], stack[-1][1]))
        if not stack:
            top.append((s, t, i))
        stack.append((s, t, i))
    tops[k] = top
be = collections.defaultdict(list)
for e in evs:
    if e["ph"] in "BE":
        be[(e["pid"], e["tid"])].append(e)
for k, v in be.items():
    depth = 0
    for e in sorted(v, key=lambda e: (e["ts"], e["ph"] == "B")):
        depth += 1 if e["ph"] == "B" else -1
        if depth < 0:
            fail("row %s: an E closes nothing" % (k,))
            break
    if depth > 0:
        fail("row %s: a B never ends" % (k,))

# ---- rows per process: near the least any nesting layout can have
CLASS = re.compile(r"^(.*?)( phases)?( ch [-0-9,?]+)?( #\d+)?$")
cls = collections.defaultdict(list)
nrows = collections.Counter()
for k in used:
    m = CLASS.match(tname.get(k, "?"))
    c = (k[0], m.group(1), bool(m.group(2)), bool(m.group(3)))
    nrows[c] += 1
    cls[c] += [(s, t) for s, t, _ in tops.get(k, [])]


def peak(iv):  # the most intervals holding one instant; [a, b] and [b, c] do not overlap
    ev = sorted([(s, 1) for s, _ in iv] + [(t, -1) for _, t in iv])
    m = c = 0
    for _, d in ev:
        c += d
        m = max(m, c)
    return m


lanes = collections.defaultdict(set)
for r in ref:
    lanes[r["pid"]].add(r["track"])
per_pid, least = collections.Counter(), collections.Counter()
for c, iv in cls.items():
    pk = peak(iv)
    per_pid[c[0]] += nrows[c]
    least[c[0]] += pk
    if nrows[c] > pk + SLACK and not hold:
        fail("%d rows for %s%s (process %s); at most %d slices of it are in flight at once"
             % (nrows[c], c[1], " phases" if c[2] else "", c[0], pk))
for pid, n in sorted(per_pid.items()):
    rp = None if pid in job_pid else pid
    if n > len(lanes[rp]):
        fail("process %s: %d rows, more than its %d lanes in the .pftrace" % (pid, n, len(lanes[rp])))
total_lanes = sum(len(v) for v in lanes.values())
print("rows: %d thread rows for %d lanes of the .pftrace (at least %d: the most slices of each "
      "class in flight at once); per process: %s"
      % (sum(per_pid.values()), total_lanes, sum(least.values()),
         " ".join("%s:%d/%d" % (p, per_pid[p], len(lanes[None if p in job_pid else p]))
                  for p in sorted(per_pid))))
if msum and int(msum.group(2)) != sum(per_pid.values()):
    fail("the summary says %s thread rows, the JSON has %d" % (msum.group(2), sum(per_pid.values())))


# ---- nothing lost or changed
def canon(a):
    return json.dumps(a, sort_keys=True)


def jpid(p):
    return None if p in job_pid else p


got_x = collections.Counter()
got_i = collections.Counter()
for e in evs:
    if e["ph"] == "X":
        got_x[(jpid(e["pid"]), e["cat"], e["name"], origin + ns(e["ts"]), ns(e["dur"]), canon(e["args"]))] += 1
    elif e["ph"] == "i":
        got_i[(jpid(e["pid"]), e["cat"], e["name"], origin + ns(e["ts"]), canon(e["args"]))] += 1
want_x = collections.Counter((r["pid"], r["cat"], r["name"], r["ts"], r["dur"], canon(r["args"]))
                             for r in ref if r["ph"] == "X")
want_i = collections.Counter((r["pid"], r["cat"], r["name"], r["ts"], canon(r["args"]))
                             for r in ref if r["ph"] == "i")
for what, got, want in (("slices", got_x, want_x), ("instants", got_i, want_i)):
    if got != want:
        miss, extra = want - got, got - want
        fail("%s differ from the .pftrace: %d missing (e.g. %s), %d extra (e.g. %s)"
             % (what, sum(miss.values()), next(iter(miss), None), sum(extra.values()),
                next(iter(extra), None)))
if sum(want_x.values()) == 0 or sum(want_i.values()) == 0:
    fail("the .pftrace has no slices or no instants: nothing was compared")

# ---- flows: each end binds to the slice that carries its id in the .pftrace
want_f = collections.defaultdict(list)
for r in ref:
    for f in r["flows"]:
        want_f[f].append((r["pid"], r["name"], r["ts"], r["dur"]))
row_start = {k: [s for s, _, _ in v] for k, v in rows.items()}
got_f = collections.defaultdict(list)
phs = collections.defaultdict(collections.Counter)
for e in evs:
    if e["ph"] not in "sf":
        continue
    k, t = (e["pid"], e["tid"]), ns(e["ts"])
    phs[e["id"]][e["ph"]] += 1
    holders = [x for x in rows.get(k, [])[:bisect.bisect_right(row_start.get(k, []), t)] if x[1] >= t]
    ntop = sum(1 for s, u, _ in tops.get(k, []) if s <= t <= u)
    if not holders or ntop != 1:
        fail("flow %s (%s) at %s in row %s binds to %d top-level slices" % (e["id"], e["ph"], e["ts"], k, ntop))
        continue
    s, u, i = max(holders, key=lambda x: (x[0], -x[1]))
    x = evs[i]
    got_f[e["id"]].append((jpid(x["pid"]), x["name"], origin + s, u - s))
for fid, c in phs.items():
    if c["s"] != 1 or c["f"] != 1:
        fail("flow %s has %d s and %d f events" % (fid, c["s"], c["f"]))
if set(got_f) != set(want_f):
    fail("flow ids differ: %d in the JSON, %d in the .pftrace" % (len(got_f), len(want_f)))
wrong = [f for f in want_f if sorted(want_f[f], key=str) != sorted(got_f.get(f, []), key=str)]
if wrong:
    fail("%d flows bind to other slices than in the .pftrace, e.g. %s: %s, not %s"
         % (len(wrong), wrong[0], sorted(got_f.get(wrong[0], []), key=str), sorted(want_f[wrong[0]], key=str)))
if not want_f:
    fail("no flows to check")

# ---- names say what rows hold; KernelPhase slices nest in their own KernelCh
bad_ch = bad_kp = 0
for k, v in rows.items():
    m = CLASS.match(tname.get(k, "?"))
    chans = set()
    for part in (m.group(3) or "")[4:].split(","):
        if "-" in part:
            a, b = part.split("-")
            chans |= set(range(int(a), int(b) + 1))
        elif part not in ("", "?"):
            chans.add(int(part))
    stack = []
    for s, t, i in v:
        e = evs[i]
        ch = e["args"].get("channelId")
        if m.group(3) and isinstance(ch, int) and e["cat"] in ("kernel", "proxyop") and ch not in chans:
            bad_ch += 1
        while stack and stack[-1][1] <= s:
            stack.pop()
        if e["cat"] == "kernelphase" and stack:
            host = evs[stack[-1][2]]
            if host["cat"] != "kernel" or host["args"].get("id") != e["args"].get("parent"):
                bad_kp += 1
        stack.append((s, t, i))
if bad_ch:
    fail("%d slices sit in rows whose name does not list their channel" % bad_ch)
if bad_kp:
    fail("%d KernelPhase slices nest in a slice that is not their KernelCh" % bad_kp)

# ---- the same bytes for any number of threads
for n in ("1", "3"):
    o = os.path.join(work, "t%s.json" % n)
    run([ncs, "export", "-q", "--jobs", n, "-f", "chrome", trace, "-o", o] + xargs, env=xenv)
    if open(o, "rb").read() != open(js, "rb").read():
        fail("the JSON of --jobs %s differs from --jobs 2" % n)

# ---- the size warning
size = os.path.getsize(js)
o = os.path.join(work, "w.json")
p = run([ncs, "export", "-q", "-f", "chrome", trace, "-o", o, "--force"] + xargs,
        env=dict(xenv, NCCLSCOPE_EXPORT_WARN_SIZE=str(size // 2)))
m = re.search(r"warning: the Chrome JSON is [0-9.]+ MB \((\d+) bytes; the warning size is %d bytes\): "
              r"chrome://tracing and the Perfetto UI .* struggle .*--format perfetto.*--events" % (size // 2),
              p.stderr)
if not m:
    fail("no size warning for a %d-byte JSON over a %d-byte threshold: %s" % (size, size // 2, p.stderr))
elif int(m.group(1)) != size:
    fail("the warning says %s bytes, the JSON has %d" % (m.group(1), size))
p = run([ncs, "export", "-q", "-f", "chrome", trace, "-o", o, "--force"] + xargs,
        env=dict(xenv, NCCLSCOPE_EXPORT_WARN_SIZE=str(size * 4)))
if re.search(r"the Chrome JSON (is|file will be)", p.stderr):
    fail("a size warning for a %d-byte JSON under a %d-byte threshold: %s" % (size, size * 4, p.stderr))
p = run([ncs, "export", "-q", "-f", "chrome", trace, "-o", o, "--force"] + xargs,
        env=dict(xenv, NCCLSCOPE_EXPORT_WARN_SIZE="many"))
if "ignoring NCCLSCOPE_EXPORT_WARN_SIZE='many'" not in p.stderr:
    fail("a bad NCCLSCOPE_EXPORT_WARN_SIZE is not reported: %s" % p.stderr)

if fails:
    sys.exit("FAIL: %d problem(s)" % len(fails))
print("PASS: chrome rows: %d slices, %d instants, %d flows as in the .pftrace; %d thread rows for "
      "%d lanes" % (sum(want_x.values()), sum(want_i.values()), len(want_f), sum(per_pid.values()),
                    total_lanes))
