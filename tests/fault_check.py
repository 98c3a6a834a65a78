#!/usr/bin/env python3
"""fault_check.py SIM PLUGIN NCCLSCOPE WORKDIR CASE PROCS - nccl-sim --fault (docs/nccl-sim.md
"Faults") with the ncclscope plugin: exit status, the one-line message, and what `ncclscope dump`
shows open in the traces (and for mismatches, what `ncclscope report` names).

CASE: skip | stall | kill | mismatch | mismatch-dtype | usage. 4 ranks, 6 AllReduces each,
--hang-s 2, PROCS processes (1 or 4). Prints "fault check CASE: ok" on success.
"""
import json
import os
import re
import shutil
import subprocess
import sys

SIM, PLUGIN, NCS, WORK, CASE, PROCS = sys.argv[1:7]
PROCS = int(PROCS)
RANKS, ITERS = 4, 6
fails = []


def fail(msg):
    fails.append(msg)


def check(cond, msg):
    if not cond:
        fail(msg)
    return cond


def run_sim(*extra, env_events="all"):
    shutil.rmtree(WORK, ignore_errors=True)
    os.makedirs(WORK)
    env = dict(os.environ, NCCLSCOPE_DIR=os.path.join(WORK, "t"), NCCLSCOPE_EVENTS=env_events)
    args = [SIM, "--plugin", PLUGIN, "--scenario", "allreduce", "--ranks", str(RANKS), "--procs",
            str(PROCS), "--iters", str(ITERS), "--hang-s", "2"] + list(extra)
    p = subprocess.run(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       timeout=90)
    return p.returncode, p.stdout, p.stderr


LINE = re.compile(r"^(\S+) seg=(\d+) t=\S+ (START|STOP|STATE|EXPIRED) (\w+) id=(\d+)(.*)$")
FIELD = re.compile(r"(\w+)=(\S+)")


class Ev:
    def __init__(self, typ, key, fields):
        self.type, self.key, self.f = typ, key, fields
        self.stopped = False
        self.expired = False
        self.states = []

    def parent(self):
        p = self.f.get("parent", "none")
        return (self.key[0], int(p.split(":")[1])) if p.startswith("local:") else None


def load_events():
    p = subprocess.run([NCS, "dump", os.path.join(WORK, "t")], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True)
    check(p.returncode == 0, "dump exited %d: %s" % (p.returncode, p.stderr.strip()[:300]))
    ev = {}
    for line in p.stdout.splitlines():
        m = LINE.match(line)
        if not m:
            continue
        src, seg, what, typ, eid, rest = m.groups()
        key = (src + "/" + seg, int(eid))
        if what == "START":
            ev[key] = Ev(typ, key, dict(FIELD.findall(rest)))
        elif key in ev:
            e = ev[key]
            if what == "STOP":
                e.stopped = True
            elif what == "EXPIRED":
                e.expired = True
            else:
                st = re.search(r"state=(\w+)\(", rest)
                e.states.append(st.group(1) if st else "?")
    return ev


class Job:
    """Colls of the comm by (rank, seqNumber), with their KernelCh, ProxyOps and ProxySteps."""

    def __init__(self, ev):
        self.coll = {}
        kids = {}
        for e in ev.values():
            par = e.parent()
            if par:
                kids.setdefault(par, []).append(e)
        for e in ev.values():
            if e.type == "Coll" and e.f.get("func") == "AllReduce":
                r, s = int(e.f["rank"]), int(e.f["seqNumber"])
                e.kch = [k for k in kids.get(e.key, []) if k.type == "KernelCh"]
                e.pops = [k for k in kids.get(e.key, []) if k.type == "ProxyOp"]
                for o in e.pops:
                    o.steps = sorted((k for k in kids.get(o.key, []) if k.type == "ProxyStep"),
                                     key=lambda k: int(k.f["step"]))
                check((r, s) not in self.coll, "rank %d has two Colls with seqNumber %d" % (r, s))
                self.coll[(r, s)] = e

    def seqs(self, r):
        return sorted(s for (q, s) in self.coll if q == r)

    def get(self, r, s):
        return self.coll.get((r, s))


def open_ev(e):
    return not e.stopped


def check_done(job, ranks, seqs, what):
    """every KernelCh, ProxyOp and ProxyStep of these ops stopped"""
    for r in ranks:
        for s in seqs:
            c = job.get(r, s)
            if not check(c is not None, "%s: rank %d has no Coll seqNumber %d" % (what, r, s)):
                continue
            for k in c.kch + c.pops + [st for o in c.pops for st in o.steps]:
                check(k.stopped, "%s: rank %d seq %d: %s %d still open" % (what, r, s, k.type,
                                                                           k.key[1]))


def check_kernel_open(job, r, s):
    c = job.get(r, s)
    if not check(c is not None, "rank %d has no Coll seqNumber %d" % (r, s)):
        return None
    check(c.stopped, "rank %d seq %d: the Coll (enqueue) did not stop" % (r, s))
    check(c.kch, "rank %d seq %d: no KernelCh started" % (r, s))
    check(c.kch and all(open_ev(k) for k in c.kch),
          "rank %d seq %d: a KernelCh stopped, but the op hung" % (r, s))
    check(all(k.expired for k in c.kch), "rank %d seq %d: open KernelCh not EXPIRED" % (r, s))
    return c


def stuck_op(job, r, s, is_send, peer):
    c = job.get(r, s)
    if not c:
        return None
    ops = [o for o in c.pops if o.f.get("isSend") == str(int(is_send)) and int(o.f["peer"]) == peer]
    check(ops, "rank %d seq %d: no %s ProxyOp with peer %d" % (r, s, "send" if is_send else "recv",
                                                                peer))
    for o in ops:
        check(open_ev(o), "rank %d seq %d: ProxyOp %d to/from peer %d stopped" % (r, s, o.key[1],
                                                                                  peer))
    return ops


def last_state(st):
    return st.states[-1] if st.states else None


def check_waiting_on(job, r, is_send, peer, how, open_steps):
    """Rank r's send (receive) ProxyOps of op SEQ to (from) the missing rank `peer` are stuck,
    their steps waiting for it: last state SendPeerWait (RecvWait); with open_steps, every step
    is there and still open. `how`: "missing" or "dead", for the messages."""
    want = "ProxyStepSendPeerWait" if is_send else "ProxyStepRecvWait"
    what = "send step %%s to the %s rank" if is_send else "receive step %%s from the %s rank"
    what %= how
    for o in stuck_op(job, r, SEQ, is_send, peer) or []:
        if open_steps:
            check(o.steps and all(open_ev(s) for s in o.steps),
                  "rank %d: a %s stopped" % (r, what % "(any)"))
        for s in o.steps:
            check(last_state(s) == want, "rank %d %s: last state %s, want %s" %
                  (r, what % s.f["step"], last_state(s), want[len("ProxyStep"):]))


def no_later(job, ranks, seq):
    for r in ranks:
        later = [s for s in job.seqs(r) if s > seq]
        check(not later, "rank %d issued Colls after the hung op: %s" % (r, later))


def expect_message(rc, err, want_rc, pattern):
    check(rc == want_rc, "exit status %d, want %d; stderr: %s" % (rc, want_rc, err.strip()[-500:]))
    check(re.search(pattern, err), "stderr lacks /%s/: %s" % (pattern, err.strip()[-500:]))


def report_json():
    p = subprocess.run([NCS, "report", "--json", os.path.join(WORK, "t")], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True)
    check(p.returncode == 0, "report exited %d" % p.returncode)
    # --wide: no wrapping, so that one finding is one line
    txt = subprocess.run([NCS, "report", "--wide", os.path.join(WORK, "t")], stdout=subprocess.PIPE,
                         text=True).stdout
    return json.loads(p.stdout), txt


SEQ = 3
OTHERS = lambda r: [q for q in range(RANKS) if q != r]

if CASE == "skip":
    R = 2
    rc, out, err = run_sim("--fault", "skip:%d:%d" % (R, SEQ))
    expect_message(rc, err, 3, r"nccl-sim: hang: ranks 0,1,3 hung in AllReduce seqNumber 3 "
                   r"\(op 3 on comm 0x[0-9a-f]+\) and aborted after 2 s without progress; rank 2 never called it "
                   r"\(fault skip:2:3\)")
    job = Job(load_events())
    check(job.seqs(R) == list(range(SEQ)), "skipping rank %d has Colls %s" % (R, job.seqs(R)))
    check_done(job, range(RANKS), range(SEQ), "before the fault")
    for r in OTHERS(R):
        check_kernel_open(job, r, SEQ)
    no_later(job, range(RANKS), SEQ)
    prev, nxt = (R - 1) % RANKS, (R + 1) % RANKS
    check_waiting_on(job, prev, True, R, "missing", True)
    check_waiting_on(job, nxt, False, R, "missing", True)
    # ProxyOps not involving the missing rank finish
    for r in OTHERS(R):
        for o in job.get(r, SEQ).pops if job.get(r, SEQ) else []:
            if int(o.f["peer"]) != R:
                check(o.stopped, "rank %d seq %d: ProxyOp with peer %s open" %
                      (r, SEQ, o.f["peer"]))
elif CASE == "stall":
    R = 1
    rc, out, err = run_sim("--fault", "stall:%d:%d" % (R, SEQ))
    expect_message(rc, err, 3, r"nccl-sim: hang: ranks 0-3 hung in AllReduce seqNumber 3 \(op 3 "
                   r"on comm 0x[0-9a-f]+\) and aborted after 2 s without progress; rank 1 stalled inside it "
                   r"\(fault stall:1:3\)")
    job = Job(load_events())
    check_done(job, range(RANKS), range(SEQ), "before the fault")
    for r in range(RANKS):
        check_kernel_open(job, r, SEQ)
    no_later(job, range(RANKS), SEQ)
    nxt = (R + 1) % RANKS
    for o in stuck_op(job, R, SEQ, True, nxt) or []:
        st = {int(s.f["step"]): s for s in o.steps}
        check(0 in st and st[0].stopped, "stalled rank: send step 0 not done")
        check(1 in st and open_ev(st[1]) and last_state(st[1]) == "ProxyStepSendWait",
              "stalled rank: send step 1 not open in SendWait: %s" %
              (last_state(st[1]) if 1 in st else "missing"))
    for o in stuck_op(job, nxt, SEQ, False, R) or []:
        st = {int(s.f["step"]): s for s in o.steps}
        check(0 in st and st[0].stopped, "rank %d: receive step 0 not done" % nxt)
        check(1 in st and open_ev(st[1]) and last_state(st[1]) == "ProxyStepRecvWait",
              "rank %d: receive step 1 not open in RecvWait: %s" %
              (nxt, last_state(st[1]) if 1 in st else "missing"))
    for r in OTHERS(R):
        c = job.get(r, SEQ)
        for o in c.pops if c else []:
            if not (r == nxt and o.f.get("isSend") == "0"):
                check(o.stopped, "rank %d seq %d: ProxyOp peer %s isSend %s open" %
                      (r, SEQ, o.f["peer"], o.f.get("isSend")))
elif CASE == "kill":
    R = 3
    rc, out, err = run_sim("--fault", "kill:%d:%d" % (R, SEQ))
    if PROCS == 1:  # the only process dies: nobody is left to hang
        expect_message(rc, err, 4, r"nccl-sim: killed: rank 3 killed process 0 \(pid \d+, ranks "
                       r"0-3\) before AllReduce seqNumber 3 \(op 3 on comm 0x[0-9a-f]+\) \(fault "
                       r"kill:3:3\); no rank left to hang")
        p = subprocess.run([NCS, "dump", "--stats", os.path.join(WORK, "t")],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        check(p.returncode in (0, 1), "dump --stats of the killed process's trace: %d" %
              p.returncode)
    else:
        expect_message(rc, err, 3, r"nccl-sim: hang: ranks 0-2 hung in AllReduce seqNumber 3 "
                       r"\(op 3 on comm 0x[0-9a-f]+\) and aborted after 2 s without progress; rank 3 killed "
                       r"process 3 \(pid \d+, ranks 3\) before it \(fault kill:3:3\)")
        job = Job(load_events())
        check(SEQ not in job.seqs(R), "killed rank %d has a Coll for seq %d" % (R, SEQ))
        check_done(job, OTHERS(R), range(SEQ), "before the fault")
        for r in OTHERS(R):
            check_kernel_open(job, r, SEQ)
        no_later(job, OTHERS(R), SEQ)
        prev, nxt = (R - 1) % RANKS, (R + 1) % RANKS
        check_waiting_on(job, prev, True, R, "dead", False)
        check_waiting_on(job, nxt, False, R, "dead", False)
elif CASE in ("mismatch", "mismatch-dtype"):
    R = 0 if CASE == "mismatch" else 3
    rc, out, err = run_sim("--fault", "%s:%d:%d" % (CASE, R, SEQ), env_events="default")
    expect_message(rc, err, 0, r"nccl-sim: fault %s:%d:3: rank %d calls AllReduce seqNumber 3 "
                   r"with count \d+ \w+ \(the other ranks: \d+ \w+\); the job goes on" %
                   (CASE, R, R))
    job = Job(load_events())
    check_done(job, range(RANKS), range(ITERS), "mismatch proceeds")
    odd, ref = job.get(R, SEQ), job.get((R + 1) % RANKS, SEQ)
    if odd and ref:
        if CASE == "mismatch":
            check(int(odd.f["count"]) == 2 * int(ref.f["count"]),
                  "rank %d count %s, others %s" % (R, odd.f["count"], ref.f["count"]))
        else:
            check(odd.f["datatype"] != ref.f["datatype"], "rank %d datatype %s, others %s" %
                  (R, odd.f["datatype"], ref.f["datatype"]))
    rep, txt = report_json()
    col = rep["collectives"]
    check(col["mismatched"] == 1, "report: %d mismatched instances, want 1" % col["mismatched"])
    m = col["mismatches"][0] if col["mismatches"] else {}
    check(m.get("seq") == SEQ and m.get("rank_a") == R and m.get("rank_b") != R,
          "report mismatch does not name rank %d first: %s" % (R, m))
    check(re.search(r"AllReduce seq 3 on c0 0x[0-9a-f]+: rank %d differs from " % R, txt),
          "report text does not name rank %d: %s" %
          (R, [l for l in txt.splitlines() if "differ" in l]))
elif CASE == "usage":
    def bad(args, pattern):
        p = subprocess.run([SIM, "--plugin", "none"] + args, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, timeout=30)
        check(p.returncode == 2, "%s: exit %d, want 2" % (args, p.returncode))
        check(re.search(pattern, p.stderr), "%s: stderr lacks /%s/: %s" % (args, pattern,
                                                                          p.stderr.strip()))
    bad(["--fault", "skip:1"], r"bad --fault 'skip:1'")
    bad(["--fault", "hang:1:2"], r"bad --fault 'hang:1:2'")
    bad(["--fault", "skip:1:x"], r"bad --fault")
    bad(["--fault", "skip:-1:0"], r"bad --fault")
    bad(["--fault", "skip:4:0", "--ranks", "4"], r"rank 4 out of range")
    bad(["--fault", "skip:1:0", "--scenario", "sendrecv"], r"--fault works with the scenarios")
    bad(["--fault", "skip:1:0", "--couple", "off"], r"--fault needs --couple on")
    bad(["--fault", "skip:0:0", "--ranks", "1"], r"at least 2 ranks")
    bad(["--hang-s", "0"], r"bad value for --hang-s")
    # a fault past the last op never fires: a warning, and the job completes
    p = subprocess.run([SIM, "--plugin", "none", "--iters", "2", "--fault", "skip:1:5,stall:0:9"],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=60)
    check(p.returncode == 0, "unreached fault: exit %d" % p.returncode)
    check("fault skip:1:5 never fired" in p.stderr and "fault stall:0:9 never fired" in p.stderr,
          "unreached fault: %s" % p.stderr.strip())
else:
    print("unknown case " + CASE)
    sys.exit(2)

if fails:
    for f in fails[:40]:
        print("FAIL: " + f)
    sys.exit(1)
print("fault check %s: ok" % CASE)
