#!/usr/bin/env python3
"""tty_check.py NCCLSCOPE NCCL-SIM WORK - the terminal manners of every verb (docs/cli.md,
"Terminal output"; docs/report.md, "The terminal report"; docs/timeline.md): on a terminal the
report is coloured and goes through a pager, --no-color and NO_COLOR turn colour off, --no-pager
the pager; off a terminal neither. On a pseudo-terminal of 80 and of 120 columns, every verb's
output (standard output and its messages) fits: record, dump (its event lines cut, --stats
wrapped), demo, export, report, diff, diagnose, trigger and every --help; --wide gives the full
lines. The report's size rows are sorted and its bandwidth columns carry units; its long tables
end in "N more rows". A long export draws one progress bar on a terminal and plain lines
elsewhere."""
import os, pty, re, select, subprocess, sys, time

ncs, sim, work = sys.argv[1:4]
os.makedirs(work, exist_ok=True)
ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")

def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)

def on_tty(args, env_extra=None, cols=100):
    """run args with stdout and stderr on a pseudo-terminal of `cols` columns; its output"""
    env = dict(os.environ, COLUMNS=str(cols), TERM="xterm")
    env.pop("NO_COLOR", None)
    env.update(env_extra or {})
    pid, fd = pty.fork()
    if pid == 0:
        import fcntl, struct, termios
        fcntl.ioctl(1, termios.TIOCSWINSZ, struct.pack("HHHH", 50, cols, 0, 0))
        os.execvpe(args[0], args, env)
    out = b""
    while True:
        r, _, _ = select.select([fd], [], [], 120)
        if not r:
            fail("no output for 120 s: %s" % args)
        try:
            chunk = os.read(fd, 65536)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
    _, st = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(st), out.decode("utf-8", "replace").replace("\r\n", "\n")

def rec(d, iters):
    env = dict(os.environ, NCCLSCOPE_DIR=d, NCCLSCOPE_EVENTS="all")
    subprocess.run([sim, "--scenario", "mixed", "--ranks", "4", "--procs", "4", "--iters",
                    str(iters), "--couple", "on"], env=dict(env, NCCL_PROFILER_PLUGIN=plugin),
                   check=True, stdout=subprocess.DEVNULL)

plugin = os.path.join(os.path.dirname(os.path.realpath(ncs)), "libnccl-profiler-ncclscope.so")
small = os.path.join(work, "small")
subprocess.run(["rm", "-rf", small], check=True)
rec(small, 100)

# colour and pager on a terminal
pager = {"PAGER": "sh -c 'echo PAGER-RAN; cat'"}
rc, out = on_tty([ncs, "report", small], pager)
if rc != 0: fail("report on a tty exited %d" % rc)
if "\x1b[1m" not in out: fail("no colour on a terminal")
if "PAGER-RAN" not in out: fail("no pager on a terminal")
rc, out = on_tty([ncs, "report", "--no-color", "--no-pager", small], pager)
if ANSI.search(out) or "PAGER-RAN" in out: fail("--no-color --no-pager still coloured or paged")
rc, out = on_tty([ncs, "report", small], dict(pager, NO_COLOR="1"))
if ANSI.search(out): fail("NO_COLOR still coloured")
# off a terminal: neither
p = subprocess.run([ncs, "report", small], env=dict(os.environ, **pager), capture_output=True, text=True)
if ANSI.search(p.stdout) or "PAGER-RAN" in p.stdout: fail("colour or pager into a pipe")

# width, order and units
for cols in (80, 100, 120):
    rc, out = on_tty([ncs, "report", "--no-pager", "--no-color", small], cols=cols)
    wide = max(len(l) for l in out.splitlines())
    if wide > cols: fail("%d columns: a line of %d" % (cols, wide))
out = subprocess.run([ncs, "report", small], capture_output=True, text=True,
                     env=dict(os.environ, COLUMNS="80")).stdout
if max(len(l) for l in out.splitlines()) > 80: fail("COLUMNS=80 off a terminal: too wide")
hdr = [i for i, l in enumerate(out.splitlines()) if l.lstrip().startswith("func ")]
if not hdr: fail("no size table")
lines = out.splitlines()
if "GB/s" not in lines[hdr[0] + 1]: fail("the bandwidth columns have no unit: %r" % lines[hdr[0] + 1])
units = {"B": 0, "KiB": 10, "MiB": 20, "GiB": 30}
prev = None
for l in lines[hdr[0] + 2:]:
    if not l.strip(): break
    m = re.match(r"  (\S+)\s+(\d+) (B|KiB|MiB|GiB)\s", l)
    if not m: prev = None; continue   # a communicator's heading
    key = (m.group(1).split("/")[0] if "/" in m.group(1) else m.group(1),)
    size = int(m.group(2)) << units[m.group(3)]
    if prev and prev[0] == key and prev[1] > size: fail("sizes not sorted: %r" % l)
    if prev and prev[0] == key and prev[1] == size and key[0] not in ("Send", "Recv"):
        fail("a row repeated: %r" % l)
    prev = (key, size)
w = subprocess.run([ncs, "report", "--wide", small], capture_output=True, text=True).stdout
if "busbw p99" not in w or "busbw p99" in out: fail("--wide does not add columns")

# every verb fits a terminal of 80 and of 120 columns (stdout and stderr on the pty); --wide does
# not fit (a line wider than 80 columns is there)
def widest(out):
    return max([len(ANSI.sub("", seg)) for line in out.split("\n") for seg in line.split("\r")] or [0])

hang = os.path.join(work, "hang")
subprocess.run(["rm", "-rf", hang], check=True)
env = dict(os.environ, NCCLSCOPE_DIR=hang, NCCLSCOPE_EVENTS="all", NCCL_PROFILER_PLUGIN=plugin)
subprocess.run([sim, "--scenario", "allreduce", "--ranks", "4", "--procs", "4", "--iters", "20",
                "--fault", "skip:2:5", "--hang-s", "1"], env=env, stdout=subprocess.DEVNULL,
               stderr=subprocess.DEVNULL)
small2 = os.path.join(work, "small2")
subprocess.run(["rm", "-rf", small2], check=True)
rec(small2, 60)
flight = os.path.join(work, "flightdir")
os.makedirs(flight, exist_ok=True)
verbs = {
    # the command's own output is not record's: nccl-sim writes its counters elsewhere
    "record": lambda c: [ncs, "record", "-o", os.path.join(work, "rec%d" % c), "--", "sh", "-c",
                         'exec "$0" --scenario allreduce --ranks 2 --iters 5 >/dev/null', sim],
    "dump": lambda c: [ncs, "dump", "--limit", "200", small],
    "dump --stats": lambda c: [ncs, "dump", "--stats", small],
    "report": lambda c: [ncs, "report", "--no-pager", "--no-color", "--top", "3", small],
    "diagnose": lambda c: [ncs, "diagnose", hang],
    "diff": lambda c: [ncs, "diff", small, small2],
    "export": lambda c: [ncs, "export", "--force", "-o", os.path.join(work, "e%d.pftrace" % c), small],
    "trigger": lambda c: [ncs, "trigger", "--wait", "0", flight],
    "demo": lambda c: [ncs, "demo", "-o", os.path.join(work, "demo%d" % c), "--ranks", "4", "--iters", "20",
                       "--scenario", "hang"],
}
for name, args in verbs.items():
    for cols in (80, 120):
        for d in ("rec%d" % cols, "demo%d" % cols):
            subprocess.run("rm -rf %s %s.*" % (os.path.join(work, d), os.path.join(work, d)), shell=True, check=True)
        rc, out = on_tty(args(cols), {"PAGER": "cat", "NCCLSCOPE_PROGRESS_AFTER_MS": "0"}, cols=cols)
        if rc not in (0, 1):
            fail("%s on a %d-column terminal exited %d: %s" % (name, cols, rc, out[-600:]))
        w = widest(out)
        if w > cols:
            bad = [l for l in out.split("\n") if len(ANSI.sub("", l)) > cols]
            fail("%s on a %d-column terminal: a line of %d columns: %r" % (name, cols, w, bad[:2]))
    rc, out = on_tty([a for a in args(80)] if name not in ("diagnose", "diff", "dump", "dump --stats", "report")
                     else args(80)[:2] + ["--wide"] + args(80)[2:], {"PAGER": "cat"}, cols=80)
    if name in ("diagnose", "diff", "dump", "report") and widest(out) <= 80:
        fail("%s --wide on an 80-column terminal has no line wider than 80 columns" % name)
for v in ("", "record", "dump", "demo", "export", "report", "diff", "diagnose", "trigger"):
    rc, out = on_tty([ncs] + ([v] if v else []) + ["--help"], cols=80)
    if widest(out) > 80: fail("ncclscope %s --help: wider than 80 columns" % v)
# dump on a terminal cuts its event lines and says so; into a pipe they are whole
rc, out = on_tty([ncs, "dump", "--limit", "50", small], cols=80)
if "~" not in out or "cut at 80 columns" not in out: fail("dump on a terminal: no cut line, or no note")
p = subprocess.run([ncs, "dump", "--limit", "50", small], capture_output=True, text=True)
if max(len(l) for l in p.stdout.splitlines()) <= 80: fail("dump into a pipe cut its lines")
# long tables: their first --top rows, then "N more rows"
rc, out = on_tty([ncs, "report", "--no-pager", "--top", "2", small], cols=100)
if not re.search(r"^  \.\.\. \d+ more rows \(--top N to see more, --csv --table links for all\)", out, re.M):
    fail("the links table of --top 2 does not end in 'N more rows'")

# progress: a bar on a terminal, plain lines elsewhere
big = os.path.join(work, "big")
subprocess.run(["rm", "-rf", big], check=True)
rec(big, 1500)
for f in ("x.pftrace", "x2.pftrace"):
    if os.path.exists(os.path.join(work, f)): os.unlink(os.path.join(work, f))
# at once (NCCLSCOPE_PROGRESS_AFTER_MS=0): a fast machine exports this in under the default 1 s
rc, out = on_tty([ncs, "export", "--jobs", "1", "-o", os.path.join(work, "x.pftrace"), big],
                 {"NCCLSCOPE_PROGRESS_AFTER_MS": "0"})
if rc != 0: fail("export on a tty exited %d: %s" % (rc, out[-500:]))
bars = re.findall(r"\r[^\n\r]*: \[[#-]{30}\]", out)
if not bars: fail("no progress bar on a terminal: %r" % out[:400])
p = subprocess.run([ncs, "export", "--jobs", "1", "-o", os.path.join(work, "x2.pftrace"), big],
                   capture_output=True, text=True, env=dict(os.environ, NCCLSCOPE_PROGRESS_AFTER_MS="0"))
if "\r" in p.stderr or "[#" in p.stderr: fail("a progress bar into a pipe")
# a large Chrome JSON export says so first, and its estimate holds
out_json = os.path.join(work, "x.json")
if os.path.exists(out_json): os.unlink(out_json)
p = subprocess.run([ncs, "export", "-f", "chrome", "-o", out_json, big], capture_output=True, text=True)
m = re.search(r"warning: the Chrome JSON file will be about (\d+) to (\d+) MB", p.stderr)
if not m: fail("no size warning before a %d MB Chrome JSON: %s" % (os.path.getsize(out_json) >> 20, p.stderr[:300]))
size = os.path.getsize(out_json) / 1e6
if not (int(m.group(1)) <= size + 1 and size - 1 <= int(m.group(2))):
    fail("estimated %s to %s MB, wrote %.0f MB" % (m.group(1), m.group(2), size))
os.unlink(out_json)
print("tty check: ok (%d progress redraws)" % len(bars))
