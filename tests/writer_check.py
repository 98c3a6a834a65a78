#!/usr/bin/env python3
"""writer_check.py SIM PLUGIN NCCLSCOPE FAULTINJ WORKDIR CASE - the plugin's loss records and its
writer's I/O under failure, on nccl-sim (tests/writer.cmake). Prints "writer check CASE: ok".

Loss records (docs/trace-format.md "LOSS"):
  loss_flight        issue 24's reproducer: flight mode, 1 MiB buffer, every event type, a
                     4-rank mixed job that exits cleanly with many drops. The LOSS records (from
                     the flight header) add up to the footer's drops, type by type, lie inside the
                     segment, and are few; the header's count of operations open at the end is the
                     number the final flush had to close without a completion.
  loss_flight_kill9  a flight run dropping records is killed -9: the drops are all still there
                     (at least what a live read saw before the kill), exact, up to the heartbeat.
  loss_flight_clean  runs that lose nothing (one exits, one is killed -9) say "drops 0", not
                     "unknown", and have no LOSS record and no operation open at the end.
  loss_trace         trace mode, a full pool, then threads without a slot: the LOSS records
                     match the footer, and every record the writer handled is in the file.
Writes that fail (through libncs-faultinj.so, tests/faultinj.c):
  io_enospc          the disk fills mid-run (a short write, then ENOSPC) and is cleaned up later
  io_eio             a few writes fail with EIO
  io_full            the disk fills and never clears: the file still ends with a whole chunk
  io_torn            ENOSPC, and cutting the torn chunk off fails too until the disk clears
  flight_fallocate   flight mode cannot reserve its file: the log says why (not "File exists")
  flight_dump        a flight dump cannot be written: the log says why; no partial file is left
After a failure the file reads without damage, every chunk the writer handled is either in it or
in a LOSS record (records in the file + lost = handled), and NCCL's log (nccl-sim --verbose)
shows the first error once, at WARN, in a subsystem NCCL_DEBUG=WARN prints.
"""
import glob
import os
import re
import signal
import subprocess
import sys
import time

SIM, PLUGIN, NCS, FAULTINJ, WORK, CASE = sys.argv[1:7]
T = os.path.join(WORK, "t")
FAULT_LOG = os.path.join(WORK, "fault.log")  # one line per failure libncs-faultinj.so injected
fails = []

KINDS = ("START", "STOP", "STATE", "COMPLETE", "EXPIRED")
LINE = re.compile(r"^(\S+) seg=(\d+) t=(\S+) (\w+) ?(.*)$")
KV = re.compile(r"(\S+?)=(\S+)")


def check(cond, msg):
    if not cond:
        fails.append(msg)
    return cond


def finish():
    if fails:
        print("writer check %s: FAILED:\n  %s" % (CASE, "\n  ".join(fails)))
        sys.exit(1)
    print("writer check %s: ok" % CASE)
    sys.exit(0)


def env_for(fault=None, **extra):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("NCCLSCOPE_") and not k.startswith("NCS_FAULT_")}
    env["NCCLSCOPE_DIR"] = T
    env["NCCLSCOPE_SAMPLE"] = "1"
    if fault is not None:
        env["LD_PRELOAD"] = FAULTINJ
        # a sanitized nccl-sim wants its runtime first; the interposer must come before it
        env["ASAN_OPTIONS"] = (env.get("ASAN_OPTIONS", "") + ":verify_asan_link_order=0").lstrip(":")
        env["NCS_FAULT_LOG"] = FAULT_LOG
        env.update(fault)
    env.update(extra)
    return env


def start_sim(args, env):
    os.makedirs(WORK, exist_ok=True)
    return subprocess.Popen([SIM, "--plugin", PLUGIN, "--verbose"] + args, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def run_sim(args, env, timeout=150):
    p = start_sim(args, env)
    out, err = p.communicate(timeout=timeout)
    return p.returncode, out, err


def ncs(*args):
    p = subprocess.run([NCS] + list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True, timeout=120)
    return p.returncode, p.stdout, p.stderr


class Trace:
    """What `ncclscope dump --abs` says about one directory."""

    def __init__(self, path, limit=None):
        self.rc, out, err = ncs("dump", "--abs", path, *(["--limit", str(limit)] if limit else []))
        # dump's note on a segment without a footer is no damage: the checks look at that apart
        notes = [l for l in err.splitlines() if "the last segment has no footer" in l]
        self.no_footer_note = bool(notes)
        self.err = "\n".join(l for l in err.splitlines() if l not in notes)
        self.records = 0
        self.by_kind = {}
        self.loss = []
        self.footer = None
        self.seg_start = None
        self.closed_ops = set()  # Coll/P2p expired or completed forced
        self.max_ts = 0
        for line in out.splitlines():
            m = LINE.match(line)
            if not m:
                continue
            t, what, rest = m.group(3), m.group(4), m.group(5)
            if what in KINDS:
                self.records += 1
                self.by_kind[what] = self.by_kind.get(what, 0) + 1
                typ, eid = rest.split()[0], rest.split()[1]
                if t != "-":
                    self.max_ts = max(self.max_ts, int(t))
                if typ in ("Coll", "P2p") and (
                        (what == "EXPIRED" and "reason=segment-end" in rest)
                        or (what == "COMPLETE" and "forced" in rest.split("flags=")[1].split()[0])):
                    self.closed_ops.add(eid)
            elif what == "LOSS":
                kv = dict(KV.findall(rest))
                types = {}
                for part in kv["types"].split(","):
                    if part:
                        k, v = part.rsplit(":", 1)
                        types[k] = int(v)
                self.loss.append({"reason": kv["reason"], "records": int(kv["records"]),
                                  "from": int(kv["from"]), "to": int(kv["to"]), "types": types})
            elif what == "FOOTER":
                self.footer = {k: int(v) for k, v in KV.findall(rest)}
            elif what == "SEGMENT":
                self.seg_start = int(dict(KV.findall(rest))["startMono"])

    def lost(self, reason):
        tot = {}
        for l in self.loss:
            if l["reason"] == reason:
                for k, v in l["types"].items():
                    tot[k] = tot.get(k, 0) + v
        return tot

    def footer_group(self, group):
        return {k.split(".", 1)[1]: v for k, v in self.footer.items()
                if k.startswith(group + ".") and v}

    def handled(self):
        """records the writer handled, by the footer: every START, STOP, STATE it processed, every
        EXPIRED and COMPLETE it derived"""
        f = self.footer
        return (sum(v for k, v in f.items() if k.split(".")[0] in ("starts", "stops", "states", "expired"))
                + f["completions"])


def stats(path):
    rc, out, err = ncs("dump", "--stats", path)
    return rc, out + err


def job_drops(text):
    """the job's drops line: (number or None, the line)"""
    block = text.split("== job:", 1)[-1]
    m = re.search(r"^\s*drops (.*)$", block, re.M)
    line = m.group(1) if m else ""
    n = re.match(r"(?:at least )?(\d+) ", line)
    return (int(n.group(1)) if n else None), line


def check_windows(tr, reason, end_ns):
    """windows of one reason: inside the segment, in order, and few (the rate bound)"""
    ws = sorted((l for l in tr.loss if l["reason"] == reason), key=lambda l: l["from"])
    for w in ws:
        check(w["from"] <= w["to"], "%s window %s..%s ends before it starts" % (reason, w["from"], w["to"]))
        check(tr.seg_start is not None and w["from"] >= tr.seg_start,
              "%s window from %d before the segment start %s" % (reason, w["from"], tr.seg_start))
        check(w["to"] <= end_ns, "%s window to %d after the end %d" % (reason, w["to"], end_ns))
        check(w["records"] == sum(w["types"].values()), "%s window: types do not add up" % reason)
    for a, b in zip(ws, ws[1:]):
        check(b["from"] >= a["from"] and b["to"] >= a["to"],
              "%s windows out of order: %s then %s" % (reason, a, b))
    if ws and tr.seg_start:
        # a window closes after 0.1 s without a loss or once it spans 1 s
        bound = 2 + (end_ns - tr.seg_start) / 0.1e9
        check(len(ws) <= bound, "%d %s windows in %.2f s (at most %d)"
              % (len(ws), reason, (end_ns - tr.seg_start) / 1e9, bound))
    return ws


def check_drops_match(tr):
    """the footer's per-type drops are the LOSS records' pool-full records, type by type"""
    fd = tr.footer_group("drops")
    ld = tr.lost("pool-full")
    check(fd == ld, "footer drops %s != LOSS pool-full %s" % (fd, ld))
    ns = sum(tr.lost("no-slot").values())
    check(tr.footer.get("no_thread_slot", 0) == ns,
          "footer no_thread_slot %s != LOSS no-slot %d" % (tr.footer.get("no_thread_slot"), ns))
    return sum(fd.values())


def plugin_log(err, pattern):
    """plugin log lines (nccl-sim --verbose) matching pattern, as (level, flags, text)"""
    out = []
    for m in re.finditer(r"plugin log level=(\d+) flags=(0x[0-9a-f]+) \S+ ncclscope: (.*)", err):
        if re.search(pattern, m.group(3)):
            out.append((int(m.group(1)), int(m.group(2), 16), m.group(3)))
    return out


def check_warn_once(err, pattern, what):
    lines = plugin_log(err, pattern)
    check(len(lines) == 1, "%s: %d log lines matching %r, want 1:\n%s" % (what, len(lines), pattern, err[-2000:]))
    for level, flags, text in lines:
        # NCCL_DEBUG=WARN prints level 2 (WARN) in the INIT subsystem (NCCL_DEBUG_SUBSYS default)
        check(level == 2 and flags & 1, "%s logged at level %d flags 0x%x: %s" % (what, level, flags, text))
    return lines


def faults():
    try:
        with open(FAULT_LOG) as f:
            return f.read().splitlines()
    except OSError:
        return []


def wait_for(cond, timeout):
    end = time.time() + timeout
    while time.time() < end:
        if cond():
            return True
        time.sleep(0.05)
    return False


def trace_file():
    files = glob.glob(os.path.join(T, "*.nstrace"))
    check(len(files) == 1, "%d trace files in %s" % (len(files), T))
    return files[0] if files else T


# ------------------------------------------------------------------ loss records


def loss_flight():
    env = env_for(NCCLSCOPE_MODE="flight", NCCLSCOPE_EVENTS="all", NCCLSCOPE_BUFFER_SIZE="1M")
    for iters in ("300", "3000"):  # the reproducer; a heavier run if this machine kept up
        subprocess.run(["rm", "-rf", WORK])
        rc, out, err = run_sim(["--scenario", "mixed", "--ranks", "4", "--iters", iters], env)
        check(rc == 0, "nccl-sim exited %d: %s" % (rc, err[-500:]))
        tr = Trace(T)
        if tr.footer and sum(tr.footer_group("drops").values()):
            break
    check(tr.rc == 0 and not tr.err, "dump: rc %d %s" % (tr.rc, tr.err))
    if not check(tr.footer is not None, "no footer after a clean exit"):
        return
    drops = check_drops_match(tr)
    check(drops > 0, "nothing was dropped: the test proves nothing")
    check_windows(tr, "pool-full", tr.footer["end_ns"])
    rc, text = stats(T)
    n, line = job_drops(text)
    check(n == drops and "at least" not in line and "unknown" not in line,
          "dump --stats says drops %r, the footer %d" % (line, drops))
    check(re.search(r"loss records: %d, %d records lost \(buffer pool full %d," % (len(tr.loss), drops, drops), text),
          "dump --stats does not total the LOSS records: %s" % re.findall(r".*loss records.*", text))
    # open at the end: what the final flush closed without a completion, no more, no less
    m = re.search(r"flight recorder: exited.* (\d+) operations without a completion at the end", text)
    if check(m, "no count of operations open at the end: %s" % re.findall(r".*flight recorder.*", text)):
        check(int(m.group(1)) == len(tr.closed_ops),
              "the header says %s operations open at the end; the final flush closed %d without a "
              "completion" % (m.group(1), len(tr.closed_ops)))


def loss_flight_kill9():
    subprocess.run(["rm", "-rf", WORK])
    env = env_for(NCCLSCOPE_MODE="flight", NCCLSCOPE_EVENTS="all", NCCLSCOPE_BUFFER_SIZE="1M")
    p = start_sim(["--scenario", "flood", "--duration", "60", "--threads", "2"], env)
    seen = [0]

    def dropping():  # the live file's drops grew between two reads: an overload in progress
        if not glob.glob(os.path.join(T, "*.nsflight")):
            return False
        n = job_drops(stats(T)[1])[0] or 0
        grew = seen[0] > 0 and n > seen[0]
        seen[0] = n
        return grew

    ok = wait_for(dropping, 40)
    p.send_signal(signal.SIGKILL)
    p.communicate()
    if not check(ok, "no drop seen in the live file within 40 s"):
        return
    rc, text = stats(T)
    check("flight recorder: running" in text, "state: %s" % re.findall(r".*flight recorder.*", text))
    n, line = job_drops(text)
    check(n is not None and n >= seen[0] and "unknown" not in line and "at least" not in line,
          "after kill -9: drops %r; %d were seen before the kill" % (line, seen[0]))
    check("drops from the flight header's loss records" in text, "drops not from the header: %s" % text[:1500])
    # a flight file's LOSS records come right after its SEGMENT: the first lines are enough (the
    # ring holds a million records)
    tr = Trace(T, limit=4 + 16 + 3)
    check(len(tr.loss) <= 3 + 16, "more LOSS records than the header keeps: %d" % len(tr.loss))
    pool = sum(tr.lost("pool-full").values())
    check(pool == n, "LOSS records hold %d drops, dump --stats %r" % (pool, line))
    hb = re.search(r"heartbeat mono ([0-9.]+) s", text)
    if check(hb and tr.loss, "no heartbeat or no LOSS record"):
        beat = int(float(hb.group(1)) * 1e9)
        ws = check_windows(tr, "pool-full", beat + 1000000)
        # the open window reached the header in the writer's last cycle, not only once closed
        # (every second): records were dropped until the kill
        check(ws and beat - ws[-1]["to"] < 300000000,
              "the newest loss window ends %.3f s before the heartbeat" % ((beat - ws[-1]["to"]) / 1e9))


def loss_flight_clean():
    # a run that loses nothing and exits: drops 0, no LOSS record, nothing open at the end
    subprocess.run(["rm", "-rf", WORK])
    env = env_for(NCCLSCOPE_MODE="flight", NCCLSCOPE_EVENTS="all")
    rc, out, err = run_sim(["--scenario", "mixed", "--ranks", "4", "--iters", "50"], env)
    check(rc == 0, "nccl-sim exited %d" % rc)
    rc, text = stats(T)
    n, line = job_drops(text)
    check(n == 0 and line.startswith("0 ("), "clean run: drops %r" % line)
    check("loss records:" not in text, "clean run has loss records")
    check("0 operations without a completion at the end" in text,
          "clean run: %s" % re.findall(r".*flight recorder.*", text))
    check(not Trace(T).loss, "clean run: LOSS items in dump")
    # a quiet run killed -9: drops 0, known
    subprocess.run(["rm", "-rf", WORK])
    p = start_sim(["--scenario", "flood", "--duration", "60", "--rate", "2000"], env)
    ok = wait_for(lambda: glob.glob(os.path.join(T, "*.nsflight")), 30)
    time.sleep(1.0)
    p.send_signal(signal.SIGKILL)
    p.communicate()
    if not check(ok, "no flight file"):
        return
    rc, text = stats(T)
    n, line = job_drops(text)
    check(n == 0 and line.startswith("0 (") and "drops unknown" not in text,
          "killed quiet run: drops %r (%s)" % (line, re.findall(r".*(?:unknown|counts computed).*", text)))
    check("loss records:" not in text, "killed quiet run has loss records")


def loss_trace_run(what, sim_args, **env_extra):
    subprocess.run(["rm", "-rf", WORK])
    rc, out, err = run_sim(sim_args, env_for(NCCLSCOPE_EVENTS="all", **env_extra))
    check(rc == 0, "%s: nccl-sim exited %d: %s" % (what, rc, err[-500:]))
    tr = Trace(trace_file())
    check(tr.rc == 0 and not tr.err, "%s: dump: rc %d %s" % (what, tr.rc, tr.err))
    if not check(tr.footer is not None, "%s: no footer" % what):
        return None, 0, 0
    drops = check_drops_match(tr)
    noslot = tr.footer.get("no_thread_slot", 0)
    check_windows(tr, "pool-full", tr.footer["end_ns"])
    check_windows(tr, "no-slot", tr.footer["end_ns"])
    check(tr.records == tr.handled(), "%s: %d records in the file, the writer handled %d"
          % (what, tr.records, tr.handled()))
    rc, text = stats(T)
    n, line = job_drops(text)
    check(n == drops + noslot and "no thread slot %d" % noslot in line,
          "%s: dump --stats: drops %r; footer %d + %d" % (what, line, drops, noslot))
    return tr, drops, noslot


def loss_trace():
    # a 1 MiB pool under two producers as fast as they go: records are dropped when it is full
    tr, drops, noslot = loss_trace_run("pool full", ["--scenario", "flood", "--threads", "2",
                                                     "--events", "600000"],
                                       NCCLSCOPE_BUFFER_SIZE="1M")
    check(drops > 0 and noslot == 0, "pool full: drops %d, no-slot %d" % (drops, noslot))
    # six producers running together for 1 s, four thread slots: two threads lose everything
    tr, drops, noslot = loss_trace_run("no slot", ["--scenario", "flood", "--threads", "6",
                                                   "--duration", "1", "--rate", "60000"],
                                       NCCLSCOPE_MAX_THREADS="4")
    check(noslot > 0 and drops == 0, "no slot: drops %d, no-slot %d" % (drops, noslot))


# ------------------------------------------------------------------ failing writes

FLOOD = ["--scenario", "flood", "--threads", "2", "--rate", "100000"]


def io_check_file(tr, err, clears):
    """the file after an outage: whole, conservative, with its losses said"""
    check(tr.rc == 0 and not tr.err, "the file does not read cleanly: rc %d %s" % (tr.rc, tr.err))
    lost = sum(sum(l["types"].values()) for l in tr.loss if l["reason"] == "write-error")
    if clears:
        if not check(tr.footer is not None, "no footer although writing works again"):
            return
        check(tr.footer["write_errors"] > 0, "footer write_errors 0")
        check(tr.footer["write_lost"] == lost and lost > 0,
              "footer write_lost %d, LOSS write-error records %d" % (tr.footer["write_lost"], lost))
        check(tr.records + lost == tr.handled(),
              "records in the file %d + lost %d != handled %d: records vanished"
              % (tr.records, lost, tr.handled()))
        ws = check_windows(tr, "write-error", tr.footer["end_ns"])
        # writing resumed: events after the last lost ones are in the file
        check(ws and tr.max_ts > ws[-1]["to"], "no event written after the outage")
        check_warn_once(err, r"works again after", "recovery")


def io_enospc():
    subprocess.run(["rm", "-rf", WORK])
    clear = os.path.join(WORK, "clear")
    env = env_for({"NCS_FAULT_DIR": T, "NCS_FAULT_AFTER_BYTES": "300000", "NCS_FAULT_UNTIL": clear},
                  NCCLSCOPE_EVENTS="all")
    p = start_sim(FLOOD + ["--duration", "4"], env)
    hit = wait_for(lambda: len(faults()) > 0, 60)
    time.sleep(0.5)
    open(clear, "w").close()
    out, err = p.communicate(timeout=150)
    check(p.returncode == 0, "nccl-sim exited %d: %s" % (p.returncode, err[-500:]))
    if not check(hit, "the fault never hit"):
        return
    check_warn_once(err, r"writing .* failed: No space left on device \(\w+ chunk, \d+ bytes\); "
                         r"the file was cut back to its last complete chunk", "first error")
    io_check_file(Trace(trace_file()), err, True)


def io_eio():
    subprocess.run(["rm", "-rf", WORK])
    env = env_for({"NCS_FAULT_DIR": T, "NCS_FAULT_ERRNO": "EIO", "NCS_FAULT_SKIP": "3",
                   "NCS_FAULT_COUNT": "4"}, NCCLSCOPE_EVENTS="all")
    rc, out, err = run_sim(FLOOD + ["--duration", "3"], env)
    check(rc == 0, "nccl-sim exited %d" % rc)
    check(len(faults()) == 4, "%d failures injected, want 4: %s" % (len(faults()), faults()))
    check_warn_once(err, r"writing .* failed: Input/output error", "first error")
    io_check_file(Trace(trace_file()), err, True)


def io_full():
    subprocess.run(["rm", "-rf", WORK])
    # room for the first events chunk whatever the pace (chunks are at most 1 MiB and a record),
    # not for the 4-5 MB the run writes
    limit = 1500000
    env = env_for({"NCS_FAULT_DIR": T, "NCS_FAULT_AFTER_BYTES": str(limit)}, NCCLSCOPE_EVENTS="all")
    rc, out, err = run_sim(FLOOD + ["--duration", "3"], env)
    check(rc == 0, "nccl-sim exited %d" % rc)
    f = trace_file()
    size = os.path.getsize(f)
    check(0 < size <= limit, "file of %d bytes under a %d-byte disk" % (size, limit))
    tr = Trace(f)
    check(tr.rc == 0 and not tr.err, "the file does not read to a whole chunk: rc %d %s" % (tr.rc, tr.err))
    check(tr.records > 0, "no record survived")
    check(tr.footer is None, "a footer on a full disk")
    check_warn_once(err, r"writing .* failed: No space left on device", "first error")
    end = check_warn_once(err, r"failed until the end \(No space left on device", "end of the outage")
    for _, _, text in end:
        check(re.search(r": [1-9]\d* chunks with [1-9]\d* event records could not be written, nor the end "
                        r"of the segment", text), "end message: %s" % text)
    check(not plugin_log(err, "works again after"), "recovered on a disk that never clears")


def io_torn():
    subprocess.run(["rm", "-rf", WORK])
    clear = os.path.join(WORK, "clear")
    env = env_for({"NCS_FAULT_DIR": T, "NCS_FAULT_AFTER_BYTES": "300000", "NCS_FAULT_UNTIL": clear,
                   "NCS_FAULT_CALLS": "write,ftruncate"}, NCCLSCOPE_EVENTS="all")
    p = start_sim(FLOOD + ["--duration", "4"], env)
    hit = wait_for(lambda: any(f.startswith("ftruncate ") for f in faults()), 60)
    time.sleep(0.5)
    open(clear, "w").close()
    out, err = p.communicate(timeout=150)
    check(p.returncode == 0, "nccl-sim exited %d" % p.returncode)
    if not check(hit, "ftruncate never failed"):
        return
    check_warn_once(err, r"failed: No space left on device .*the torn chunk could not be cut off yet",
                    "first error")
    io_check_file(Trace(trace_file()), err, True)


def flight_fallocate():
    subprocess.run(["rm", "-rf", WORK])
    env = env_for({"NCS_FAULT_DIR": T, "NCS_FAULT_CALLS": "fallocate"}, NCCLSCOPE_MODE="flight")
    rc, out, err = run_sim(["--scenario", "allreduce", "--ranks", "2", "--iters", "5"], env)
    check(rc == 0, "nccl-sim exited %d" % rc)
    # each communicator's init tries again (the disk may have room by then), and says so
    lines = plugin_log(err, r"flight recorder:")
    check(lines and all(re.fullmatch(r"flight recorder: cannot reserve the disk space of \S+\.nsflight: "
                                      r"No space left on device; profiling disabled", t) and l == 2 and f & 1
                        for l, f, t in lines), "fallocate failure: %s" % lines)
    check("File exists" not in err, "the log blames errno: %s" % err[-1000:])
    check(not glob.glob(os.path.join(T, "*.nsflight")), "a half-made flight file was left")


def flight_dump():
    subprocess.run(["rm", "-rf", WORK])
    env = env_for({"NCS_FAULT_DIR": os.path.join(T, "dumps"), "NCS_FAULT_CALLS": "write"},
                  NCCLSCOPE_MODE="flight")
    p = start_sim(["--scenario", "flood", "--duration", "4", "--rate", "20000"], env)
    ok = wait_for(lambda: glob.glob(os.path.join(T, "*.nsflight")), 30)
    time.sleep(0.5)
    p.send_signal(signal.SIGUSR1)
    out, err = p.communicate(timeout=150)
    check(ok and p.returncode == 0, "nccl-sim exited %d" % p.returncode)
    check_warn_once(err, r"flight recorder: writing \S+/dumps/\S+\.nsflight failed: No space left on "
                         r"device; no dump taken", "dump failure")
    left = glob.glob(os.path.join(T, "dumps", "*"))
    check(not left, "files left in dumps/: %s" % left)
    rc, text = stats(T)
    check(rc == 0 and "flight recorder: exited" in text, "the live file: %s" % text[:800])


CASES = {f.__name__: f for f in (loss_flight, loss_flight_kill9, loss_flight_clean, loss_trace, io_enospc,
                                 io_eio, io_full, io_torn, flight_fallocate, flight_dump)}
if CASE not in CASES:
    check(False, "unknown case")
else:
    CASES[CASE]()
finish()
