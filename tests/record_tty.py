#!/usr/bin/env python3
"""record_tty.py NCCLSCOPE WORKDIR - `ncclscope record` in a terminal (docs/cli.md, "Processes
and signals"). The command runs in a process group of its own, so record hands it the terminal:
it can read the terminal, Ctrl-C reaches it, and Ctrl-Z stops it and record like a shell job,
which then continue together. Each record runs in a new pseudo-terminal session where it is the
foreground process group, as under an interactive shell."""
import os
import pty
import select
import signal
import sys
import time

NCS, W = sys.argv[1], sys.argv[2]
os.makedirs(W, exist_ok=True)


class Term:
    def __init__(self, cmd):
        self.pid, self.fd = pty.fork()
        if self.pid == 0:
            os.environ["NCCLSCOPE_PLUGIN"] = "/bin/true"  # any readable file: no NCCL here
            os.execv(NCS, [NCS, "record", "-o", os.path.join(W, "rec"), "--"] + cmd)
        self.out = b""

    def pump(self, until=None, timeout=30.0):
        t0 = time.time()
        while time.time() - t0 < timeout:
            if until is not None and until.encode() in self.out:
                return True
            r, _, _ = select.select([self.fd], [], [], 0.05)
            if r:
                try:
                    d = os.read(self.fd, 4096)
                except OSError:
                    d = b""
                if not d:
                    break
                self.out += d
        return until is None or until.encode() in self.out

    def expect(self, text):
        if not self.pump(text):
            fail("no '%s' in the terminal" % text)

    def finish(self):
        self.pump(timeout=10.0)
        for _ in range(200):
            w, st = os.waitpid(self.pid, os.WNOHANG)
            if w == self.pid:
                return os.waitstatus_to_exitcode(st)
            time.sleep(0.05)
        os.kill(self.pid, signal.SIGKILL)
        fail("record did not end")


def fail(why):
    print("record tty: FAILED: " + why)
    print("---- terminal:\n" + term.out.decode(errors="replace"))
    sys.exit(1)


# 1. the command reads the terminal (a background process group would be stopped by SIGTTIN)
term = Term(["sh", "-c", "echo ready; read x; echo got:$x"])
term.expect("ready")
os.write(term.fd, b"hello\n")
term.expect("got:hello")
rc = term.finish()
if rc != 0:
    fail("status %d" % rc)

# 2. Ctrl-C reaches the command (once: its trap runs once), record returns its status
term = Term(["sh", "-c", "trap 'echo INT; exit 7' INT; echo ready; while :; do sleep 0.1; done"])
term.expect("ready")
os.write(term.fd, b"\x03")
term.expect("INT")
rc = term.finish()
if rc != 7:
    fail("Ctrl-C: status %d, want 7" % rc)
if term.out.count(b"INT") != 1:
    fail("the command got SIGINT %d times" % term.out.count(b"INT"))

# 3. Ctrl-Z stops the command and record; continued, the command owns the terminal again
term = Term(["sh", "-c", "echo ready; read x; echo got:$x"])
term.expect("ready")
os.write(term.fd, b"\x1a")
stopped = False
for _ in range(400):
    w, st = os.waitpid(term.pid, os.WUNTRACED | os.WNOHANG)
    if w == term.pid and os.WIFSTOPPED(st):
        stopped = True
        break
    term.pump(timeout=0.05)
if not stopped:
    fail("Ctrl-Z did not stop record")
os.kill(term.pid, signal.SIGCONT)
term.pump(timeout=0.5)
os.write(term.fd, b"again\n")
term.expect("got:again")
rc = term.finish()
if rc != 0:
    fail("after Ctrl-Z: status %d" % rc)
print("record tty: ok")
