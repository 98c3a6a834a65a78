#!/usr/bin/env python3
"""realjob_check.py - the real-GPU fixtures of "true GPU times" (tests/fixtures/real/README.md):
traces of real jobs on H200s, checked against CUPTI on the same operations, the benchmark's own
numbers and what is known of the job (docs/gpu.md, "Real-job fixtures").

usage: realjob_check.py NCCLSCOPE FIXTURES WORK CHECK CAPTURE [RUN...]
  gputimes CAP RUN    RUN recorded with --cupti on: KernelCh's GPU times (NCCLSCOPE_GPU_TIMES=kernelch)
                      against CUPTI's for the same operations; every GPU clock bounded; no launch
                      delay below minus its bound; the report's counts equal SQLite's
  twin CAP DEF CUP    the defaults' latency per (function, size) against the CUPTI twin (a
                      separate run): printed, and within the stated bound at >= 1 MiB
  clock CAP RUN       every GPU clock bounded; no launch delay below minus its bound; the report's
                      counts of the GPU-time check equal SQLite's (any run)
  hang CAP RUN        a rank that never joins: diagnose names it and the first operation it
                      never entered, and no rank completed an operation a member never entered
  tput CAP RUN        an ncs_perf sweep: the report's tput busbw against the benchmark's own
  queue CAP RUN       operations enqueued back to back (ncs_perf over sockets): the time they waited
                      behind earlier work is the queue, not launch (docs/report.md, "Breakdown")
  diff CAP A B        `ncclscope diff A B` of a healthy run and the same job with rank 1 a
                      straggler: rank 1 the only rank regression and a new straggler finding; no
                      bucket called no_change unless its interval lies within +-fail_above (a
                      bimodal bucket of 24 instances cannot tell), none slower or faster by chance
  findings CAP RUN    the report's headline findings against what the job did (docs/report.md,
                      "Findings"): torch-healthy none; torch-stall rank 0's 1 s sleep a stall, GPU-side,
                      its size about 1 s; torch-straggler rank 1 a straggler; no headline names
                      another rank
Prints "realjob CHECK CAP: ok" when every assertion holds, else the first failure and exits 1.
"""
import io
import json
import lzma
import os
import re
import sqlite3
import subprocess
import sys
import tarfile

NCS, FIX, WORK, CHECK, CAP = sys.argv[1:6]
RUNS = sys.argv[6:]
MIB = 1 << 20


def fail(msg):
    print("realjob %s %s: FAILED: %s" % (CHECK, CAP, msg))
    sys.exit(1)


def run_dir(run):
    """the fixture's trace files, unpacked once into WORK/CAP/RUN"""
    d = os.path.join(WORK, CAP, run)
    mark = os.path.join(d, ".unpacked")
    if not os.path.exists(mark):
        os.makedirs(d, exist_ok=True)
        raw = lzma.decompress(open(os.path.join(FIX, CAP, run + ".tar.xz"), "rb").read())
        with tarfile.open(fileobj=io.BytesIO(raw)) as t:
            for m in t.getmembers():
                if m.isdir() and m.name == "dumps":
                    continue
                parts = m.name.split("/")
                if not m.isfile() or ".." in parts or m.name.startswith((".", "/")) or len(parts) > 2 or \
                        (len(parts) == 2 and parts[0] != "dumps"):
                    fail("unexpected member %r in %s/%s" % (m.name, CAP, run))
                os.makedirs(os.path.dirname(os.path.join(d, m.name)), exist_ok=True)
                with open(os.path.join(d, m.name), "wb") as f:
                    f.write(t.extractfile(m).read())
        open(mark, "w").close()
    return d


def env(extra=None):
    e = dict(os.environ)
    for k in list(e):
        if k.startswith("NCCLSCOPE_"):
            del e[k]
    e.update(extra or {})
    return e


def report(d, extra=None):
    r = subprocess.run([NCS, "report", "--json", d], capture_output=True, text=True, env=env(extra))
    if r.returncode not in (0, 1):
        fail("report --json %s: exit %d: %s" % (d, r.returncode, r.stderr[-300:]))
    return json.loads(r.stdout)


def export(d, name, extra=None):
    out = os.path.join(WORK, CAP, name + ".sqlite")
    if os.path.exists(out):
        os.unlink(out)
    r = subprocess.run([NCS, "export", d, "--format", "sqlite", "-o", out], capture_output=True, text=True,
                       env=env(extra))
    if r.returncode != 0:
        fail("export %s: exit %d: %s" % (d, r.returncode, r.stderr[-300:]))
    return sqlite3.connect(out)


def ops(db):
    """(rank, func, seq) -> (duration_ns, gpu_source, bytes, arrival, kernel_start) of collectives"""
    q = ("select rank, func, seq, duration_ns, gpu_source, bytes, arrival_job_ns, kernel_start_job_ns "
         "from operations where type = 'Coll'")
    return {(r[0], r[1], r[2]): r[3:] for r in db.execute(q)}


def check_gputimes(run):
    d = run_dir(run)
    kch = ops(export(d, run + "-kch", {"NCCLSCOPE_GPU_TIMES": "kernelch"}))
    cup = ops(export(d, run + "-cupti"))
    big = []
    small = []
    nbig = 0
    for k, (dk, gk, by, _, _) in kch.items():
        if k not in cup or cup[k][1] != "cupti" or not cup[k][0]:
            continue
        nbig += by >= MIB
        if gk != "kernelch":
            continue
        (big if by >= MIB else small).append((dk - cup[k][0], cup[k][0], k))
    if not big:
        fail("no operation of 1 MiB or more has both GPU times")
    # KernelCh spans the channels' work; CUPTI the whole kernel, which is longer by its entry and exit
    # (2.4 to 4.6 us on H200s): the bound is 10% of CUPTI's or 5 us, whichever is larger, for 99% of
    # the operations, and 16 us for every one; KernelCh's span lies inside the kernel (+2 us)
    out = [x for x in big if abs(x[0]) > max(0.10 * x[1], 5000)]
    worst = max(big, key=lambda x: abs(x[0]))
    print("%s: %d of %d operations >= 1 MiB with KernelCh times; KernelCh - CUPTI min %.1f us, max %.1f us, "
          "beyond max(10%%, 5 us): %d" % (run, len(big), nbig, min(x[0] for x in big) / 1e3,
                                           max(x[0] for x in big) / 1e3, len(out)))
    if len(out) > len(big) // 100:
        fail("%d of %d operations >= 1 MiB beyond max(10%%, 5 us) of CUPTI's (worst %s: %.1f us vs %.1f us)"
             % (len(out), len(big), worst[2], (worst[0] + worst[1]) / 1e3, worst[1] / 1e3))
    if abs(worst[0]) > 16000 or max(x[0] for x in big) > 2000:
        fail("an operation >= 1 MiB is %.1f us off CUPTI's (%s)" % (worst[0] / 1e3, worst[2]))
    if len(big) < 0.75 * nbig:
        fail("only %d of %d operations >= 1 MiB have KernelCh GPU times" % (len(big), nbig))
    # below 1 MiB: the same, but for at most one operation or 1%: 8 us
    if small:
        far = [x for x in small if abs(x[0]) > 8000]
        print("%s: below 1 MiB %d operations, %d beyond 8 us of CUPTI (%s)" % (
            run, len(small), len(far), ", ".join("%s %.1f us" % (x[2], x[0] / 1e3) for x in far[:3])))
        if len(far) > max(1, len(small) // 100):
            fail("%d of %d operations below 1 MiB beyond 8 us of CUPTI's" % (len(far), len(small)))
    check_clock_and_counts(d, run)


def check_clock_and_counts(d, run):
    r = report(d)
    db = export(d, run + "-default")
    for p in r["processes"]:
        g, w = p["gpu_clock"], p["gpu_clock_windows"]
        if not w:
            fail("%s: no GPU clock map" % p["file"])
        # some window of each process is bounded within 200 us (a bound needs an operation launched on
        # an idle GPU: a job whose CPU runs far ahead has few, and a window without one states a loose
        # bound, 1.25 ms in a 4-GPU NCCL 2.30.7 job whose other windows agree within 14 us; the report
        # states every window's bound)
        known = [x for x in w if x["error_ns"] >= 0]
        main = min(known, key=lambda x: x["error_ns"]) if known else max(w, key=lambda x: x["samples"])
        if main["error_ns"] < 0 or main["error_ns"] > 200000:
            fail("%s: no GPU clock window bounded within 200 us (best %d ns)" % (p["file"], main["error_ns"]))
        print("%s pid %d: GPU clock = CLOCK_REALTIME %+.1f us, within +%.1f us (best window; %s)" % (
            run, p["pid"], main["offset_vs_realtime_ns"] / 1e3, main["error_ns"] / 1e3,
            ", ".join("%+.1f us +%s" % (x["offset_vs_realtime_ns"] / 1e3,
                                        "%.1f us" % (x["error_ns"] / 1e3) if x["error_ns"] >= 0 else "?")
                      for x in w[:8])))
    # no launch delay below minus the clock's bound (and the 2 us slack of the checks)
    bound = max(max(0, p["gpu_clock"]["error_known_ns"]) for p in r["processes"]) + 2000
    neg = db.execute("select count(*), min(kernel_start_job_ns - arrival_job_ns) from operations where "
                     "kernel_start_job_ns is not null and gpu_source = 'kernelch' and "
                     "kernel_start_job_ns - arrival_job_ns < ?", (-bound,)).fetchone()
    if neg[0]:
        fail("%d operations start on the GPU before their call, by up to %.1f us (bound %.1f us)" %
             (neg[0], -neg[1] / 1e3, bound / 1e3))
    # the report and SQLite say the same of the check
    for p in r["processes"]:
        row = db.execute("select gpu_check_ops, gpu_check_unknown, gpu_check_repaired from processes where "
                         "pid = ?", (p["pid"],)).fetchone()
        c = p["gpu_check"]
        if row != (c["ops"], c["unknown"], c["repaired"]):
            fail("pid %d: report %s, SQLite %s" % (p["pid"], c, row))
    unknown = sum(p["gpu_check"]["unknown"] for p in r["processes"])
    warned = [w for w in r["warnings"] if w["key"] == "gpu_check"]
    if bool(unknown) != bool(warned):
        fail("%d operations without GPU time, gpu_check warning %s" % (unknown, warned))


def check_twin(dflt, cupti):
    a, b = report(run_dir(dflt)), report(run_dir(cupti))
    key = lambda x: (x["comm"], x["func"], x["bytes_lo"], x["p2p"])
    bb = {key(x): x for x in b["buckets"]}
    worst = 0
    for x in sorted(a["buckets"], key=lambda x: (x["p2p"], x["func"], x["bytes_lo"])):
        y = bb.get(key(x))
        if not y or x["p2p"] or not x["count"] or not y["count"] or x["bytes_lo"] < MIB:
            continue
        rel = (x["lat_p50_ns"] - y["lat_p50_ns"]) / y["lat_p50_ns"]
        print("%-13s %10d  defaults %9.1f us  CUPTI twin %9.1f us  %+6.1f%%  (%d/%d operations timed)" % (
            x["func"], x["bytes_lo"], x["lat_p50_ns"] / 1e3, y["lat_p50_ns"] / 1e3, rel * 100, x["count"],
            x["count"] + x["no_gpu_time"]))
        if x["bytes_lo"] >= 32 * MIB:
            worst = max(worst, abs(rel))
    # Two runs of a job: the slowest rank's latency includes its waits for the others, which move
    # from run to run (CUPTI's own cost on the host moves the arrivals: a 16 MiB AllReduce of the
    # 4-GPU PyTorch job took 105 us in one run and 180 us in its twin, while KernelCh and CUPTI
    # agreed within 4 us on each run's own operations: gputimes; a 64 MiB AllGather 182 us against
    # 228 us). What this guards is the failure of issue 29, 30-50x; asserted from 32 MiB up, where
    # the transfer outweighs the waits: within 35%; below, printed.
    if worst > 0.35:
        fail("a bucket of 32 MiB or more is %.0f%% off the CUPTI twin's latency" % (worst * 100))
    check_clock_and_counts(run_dir(dflt), dflt)


def check_hang(run):
    d = run_dir(run)
    r = subprocess.run([NCS, "diagnose", "--json", d], capture_output=True, text=True, env=env())
    if r.returncode != 1:
        fail("diagnose exit %d (expected 1, a problem found): %s" % (r.returncode, r.stderr[-300:]))
    j = json.loads(r.stdout)
    v = [x for x in j["verdicts"] if x["kind"] == "not_entered"]  # the HANG of a rank that never entered
    if not v:
        fail("no not_entered (HANG) verdict: %s" % [x.get("summary") for x in j["verdicts"]])
    s = v[0]["summary"]
    print(run + ": " + s)
    # the job: rank 1 sleeps at the top of iteration 5; each iteration begins with the 16 MiB
    # all_reduce, after two warm-up all_reduces (seqNumbers 0 and 1): #12 is the first it never entered
    if not re.search(r"rank 1 never entered AllReduce #12\b", s):
        fail("the verdict does not name rank 1 and AllReduce #12: " + s)
    if v[0]["rank"] != 1 or v[0]["func"] != "AllReduce" or v[0]["seq"] != 12:
        fail("the verdict's fields: rank %s func %s seq %s" % (v[0]["rank"], v[0]["func"], v[0]["seq"]))
    n = 0
    for c in j["communicators"]:
        for rk in c.get("ranks", []):
            for f in rk.get("funcs", []):
                if f["func"] == "AllReduce":
                    n += 1
                    if f["completed"] > 11:
                        fail("rank %s completed AllReduce #%d, which rank 1 never entered" % (rk["rank"], f["completed"]))
    if not n:
        fail("no rank's AllReduce counts in the table")


def check_tput(run):
    d = run_dir(run)
    r = report(d)
    bench = {}
    for line in open(os.path.join(d, "job.log")):
        m = re.search(r"perf: op=(\w+) bytes=(\d+) time_us=([\d.]+) algbw=([\d.]+) busbw=([\d.]+)", line)
        if m:
            bench[(m.group(1), int(m.group(2)))] = float(m.group(5))
    names = {"allreduce": "AllReduce", "allgather": "AllGather", "reducescatter": "ReduceScatter"}
    bk = {(x["func"], x["bytes_lo"]): x for x in r["buckets"] if not x["p2p"]}
    rows = 0
    far = []
    untimed = []
    unknown = sum(p["gpu_check"]["unknown"] for p in r["processes"] if p.get("gpu_check"))
    for (op, by), bw in sorted(bench.items()):
        if op not in names or by < MIB:
            continue
        x = bk.get((names[op], by))
        if not x:
            fail("no bucket for %s %d" % (op, by))
        if not x["tput_samples"]:
            # allowed only where the report says why: no operation of the size has a GPU time (an
            # early-process GPU clock that steps by milliseconds between kernels), and never from 32 MiB
            if by >= 32 * MIB or x["count"] or not x["no_gpu_time"] or not unknown:
                fail("no tput for %s %d (%d timed, %d without GPU time)" % (op, by, x["count"], x["no_gpu_time"]))
            untimed.append("%s %d" % (op, by))
            continue
        rel = (x["tput_busbw_p50_gbs"] - bw) / bw
        rows += 1
        print("%-13s %10d  benchmark %8.2f GB/s  tput %8.2f GB/s (%d intervals)  %+6.1f%%" % (
            op, by, bw, x["tput_busbw_p50_gbs"], x["tput_samples"], rel * 100))
        if abs(rel) > 0.05:
            far.append("%s %d %+.0f%%" % (op, by, rel * 100))
        if by >= 32 * MIB and abs(rel) > 0.02:
            fail("%s %d: tput %.1f%% off the benchmark's own" % (op, by, rel * 100))
    if not rows:
        fail("no benchmark lines in job.log")
    # Held: within 2% from 32 MiB up. Below, not asserted (docs/gpu.md, "Real-job fixtures"): the
    # benchmark times 40 operations of one process on the host, and a hiccup there moves its own
    # number (67 GB/s for a 16 MiB AllReduce between 209 and 295 at its neighbours, 4 GPUs), while
    # the kernels' intervals of some small AllReduces disagree with it by half: printed
    print("sizes from 1 to 16 MiB beyond 5%% of the benchmark: %d of %d: %s" % (len(far), rows, ", ".join(far)))
    print("sizes with no GPU time (every operation's KernelCh times rejected): %d: %s" % (
        len(untimed), ", ".join(untimed) or "none"))


def check_queue(run):
    d = run_dir(run)
    r = report(d)
    db = export(d, run + "-queue")
    # the facts, from the operations' own times: per rank in call order, an operation's kernel
    # could not start before its predecessor's ended; the time from its arrival until then queued
    q = ("select rank, seq, arrival_job_ns, kernel_start_job_ns, kernel_stop_job_ns from operations "
         "where type = 'Coll' order by rank, seq")
    fact = {}
    prev = None
    for rank, seq, arr, ks, ke in db.execute(q):
        if prev and prev[0] == rank and prev[1] == seq - 1 and ks and prev[2] and arr:
            qd = max(0, min(prev[2], ks) - arr)
            fact.setdefault(rank, []).append((qd, ks - max(arr, min(prev[2], ks))))
        prev = (rank, seq, ke if ks else 0)
    for x in r["ranks"]:
        f = fact.get(x["rank"])
        if not f:
            fail("rank %d: no operation with its predecessor's kernel stop" % x["rank"])
        qd, ld = x["queue_delay_mean_ns"], x["launch_delay_mean_ns"]
        mq = sum(a for a, _ in f) / len(f)
        print("rank %d: queue avg %.2f ms, launch avg %.1f us; from the operations: queue %.2f ms over %d" % (
            x["rank"], qd / 1e6, ld / 1e3, mq / 1e6, len(f)))
        # the report's mean is over every operation with a kernel start (the first has no
        # predecessor): within 5% of the facts' mean, and far above the launch
        if mq < 1e6 or abs(qd - mq * len(f) / x["instances"]) > 0.05 * mq:
            fail("rank %d: queue avg %d ns, the operations say %d ns" % (x["rank"], qd, mq))
        if ld * 10 > qd:
            fail("rank %d: launch avg %d ns is not small beside the queue %d ns" % (x["rank"], ld, qd))
    big = [b for b in r["buckets"] if not b["p2p"] and b["bytes_lo"] >= 16 * MIB]
    if not big:
        fail("no bucket of 16 MiB or more")
    for b in big:
        bd = b["breakdown"]
        t = bd["queue_ns"] + bd["launch_ns"] + bd["span_ns"]
        lshare = bd["launch_ns"] / max(1, bd["launch_ns"] + bd["span_ns"])
        print("%s %d MiB: label %s, queue %.0f%% of queue + launch + proxy, launch %.0f%% of launch + proxy, "
              "queue unknown %d" % (b["func"], b["bytes_lo"] >> 20, bd["label"], 100 * bd["queue_ns"] / max(1, t),
                                   100 * lshare, bd["queue_unknown"]))
        if bd["label"] == "launch" or bd["labels"]["launch"] or lshare >= 0.5:
            fail("%d MiB called launch-dominated: %s" % (b["bytes_lo"] >> 20, bd))
        if bd["queue_ns"] < 0.5 * t or bd["queue_unknown"]:
            fail("%d MiB: the queue is not reported: %s" % (b["bytes_lo"] >> 20, bd))
def check_findings(run):
    r = report(run_dir(run))
    heads = [x for x in r["findings"] if x["headline"]]
    for x in r["findings"]:
        print("%-8s %-15s rank %2d  %5.1f%% of the job  %-5s  %s" % (
            "headline" if x["headline"] else "minor", x["kind"], x["rank"], 100 * x["size_share"],
            x["wait_side"] or "-", x["text"][:100]))
    for x in r["ranks"]:
        print("rank %d: waiting caused, host-side over every instance %.2f ms; GPU-side %.2f ms in %d instances,"
              " host-side %.2f ms in the %d without trusted GPU times" % (
                  x["rank"], x["wait_caused_ns"] / 1e6, x["caused_gpu_ns"] / 1e6, x["caused_gpu_instances"],
                  x["caused_host_ns"] / 1e6, x["caused_host_instances"]))
    if run.startswith("torch-healthy"):
        if heads:
            fail("a healthy job has headline findings: %s" % [x["text"] for x in heads])
        if not r["no_finding"].startswith("nothing stands out"):
            fail("no_finding: %r" % r["no_finding"])
        return
    want = {"torch-stall": (0, ("stall", "repeated_stalls")), "torch-straggler": (1, ("straggler",))}[run]
    named = [x for x in heads if x["kind"] in want[1]]
    if not named or any(x["rank"] != want[0] for x in named):
        fail("%s: the headlines name %s, not rank %d only" % (run, [(x["kind"], x["rank"]) for x in heads], want[0]))
    other = [x for x in heads if x["rank"] >= 0 and x["rank"] != want[0]]
    if other:
        fail("%s: headlines name other ranks: %s" % (run, [x["text"] for x in other]))
    # one rank waited (2 GPUs): its wait alone, not "each", "longest" and "in total" of one figure
    one = r["communicators"][0]["nranks"] == 2
    for x in [x for x in heads if x["kind"] in ("stall", "repeated_stalls", "straggler")]:
        if one and re.search(r" each\b|longest", x["text"]):
            fail("one rank waited, yet the text speaks of several: %s" % x["text"])
        if not one and x["kind"] in ("stall", "straggler") and not re.search(r" each[ ,]", x["text"]):
            fail("several ranks waited, yet the text gives no per-rank wait: %s" % x["text"])
    if run == "torch-stall":
        s = r["stalls"][0]
        if s["rank"] != 0 or s["wait_side"] != "gpu" or not 0.9e9 <= s["wait_ns"] <= 1.1e9 or not s["headline"]:
            fail("the largest stall is not rank 0's 1 s on the GPU: %s" % s)
        print("stall: rank 0 before %s seq %d, the others waited %.3f s each (GPU-side), %.1f%% of the job" % (
            s["func"], s["seq"], s["wait_ns"] / 1e9, 100 * s["size_share"]))


def check_diff(a, b):
    r = subprocess.run([NCS, "diff", "--json", run_dir(a), run_dir(b)], capture_output=True, text=True, env=env())
    if r.returncode != 1:
        fail("diff %s %s: exit %d (expected 1: regressions): %s" % (a, b, r.returncode, r.stderr[-300:]))
    d = json.loads(r.stdout)
    pct = d["fail_above_pct"]
    for x in d["buckets"]:
        ci = x.get("latency_ci")
        print("%-13s %-4s %10d  n %3d/%3d  %-11s %s" % (x["func"], "p2p" if x["p2p"] else "", x["bytes_lo"],
                                                        x["n_a"], x["n_b"], x["verdict"], ci))
        if x["verdict"] == "no_change" and not (-pct <= ci[0] and ci[1] <= pct):
            fail("no_change on an interval beyond +-%g%%: %s" % (pct, x))
        if x["verdict"] == "cannot_tell" and (-pct <= ci[0] and ci[1] <= pct or ci[0] > 0 or ci[1] < 0):
            fail("cannot_tell on an interval that tells: %s" % x)
    regs = [(x["rank"], x["verdict"]) for x in d["ranks"] if x["regression"]]
    if regs != [(1, "regression")]:
        fail("rank regressions %s, expected rank 1 alone" % regs)
    new = [(f["kind"], f["rank"]) for f in d["findings"] if f["change"] == "new"]
    if ("straggler", 1) not in new or any(k[1] not in (1, -1) for k in new):
        fail("new findings %s: expected a straggler, rank 1" % new)
    print("ranks regressed %s; new findings %s; %d regressions" % (regs, new, d["regressions"]))


if CHECK == "gputimes":
    check_gputimes(RUNS[0])
elif CHECK == "twin":
    check_twin(RUNS[0], RUNS[1])
elif CHECK == "clock":
    check_clock_and_counts(run_dir(RUNS[0]), RUNS[0])
elif CHECK == "hang":
    check_hang(RUNS[0])
elif CHECK == "tput":
    check_tput(RUNS[0])
elif CHECK == "queue":
    check_queue(RUNS[0])
elif CHECK == "diff":
    check_diff(RUNS[0], RUNS[1])
elif CHECK == "findings":
    check_findings(RUNS[0])
else:
    fail("unknown check " + CHECK)
print("realjob %s %s: ok" % (CHECK, CAP))
