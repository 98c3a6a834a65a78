#!/bin/sh
# outputs_check.sh NCCLSCOPE SIM PLUGIN LINT WORKDIR CASE - every output fails closed, one exit
# status table, record owns its process tree (docs/cli.md). Prints "outputs check CASE: ok".
# CASE:
#   full        writing to /dev/full fails with status 5 in every verb (and /dev/null passes)
#   special     a FIFO or a character device is written directly and stays what it was; a
#               socket, a directory, a block device and a dangling symlink are refused; a
#               symlink to a file is followed (the link stays)
#   inputs      -o naming an input, or a path inside an input directory, is refused
#   overwrite   an existing output is refused without --force (unchanged) and replaced with it
#               (permission bits kept), in export (3 formats), report --html and demo
#   killed      an export killed (SIGKILL, SIGTERM) while writing leaves nothing under the
#               final name, and no temporary file where it could avoid one
#   stdout      standard output closed or full: status 5; record passes its command's status
#   record-tree record with nccl-sim --procs 2 and a SIGTERM: no process of the job is left and
#               no trace file grows after record returned
#   record-wait record waits for a process the command left behind; after --grace it kills
#               processes that ignore SIGTERM (also outside the job's process group) and says so
#   record-usr1 SIGUSR1 to record reaches the processes that handle it (flight dumps of both
#               nccl-sim processes) and not the shell that launched them, which it would kill
#   record-exec a command that cannot be run: 127 / 126, a clear message, no "trace written",
#               no directory left behind
#   events      an event list that selects nothing is refused by the CLI and logged (default
#               used) by the plugin
#   couple      nccl-sim --couple on: a process killed from outside ends the job at once (6)
set -u
NCS=$1 SIM=$2 PLUGIN=$3 LINT=$4 W=$5 CASE=$6
rm -rf "$W" && mkdir -p "$W"
fail() {
  echo "outputs check $CASE: FAILED: $*"
  for f in "$W/err" "$W/out"; do [ -s "$f" ] && { echo "---- $f"; head -20 "$f"; }; done
  exit 1
}
# expect RC PATTERN CMD...: status RC, and PATTERN (extended regex, "" none) on stderr
expect() {
  want=$1 pat=$2
  shift 2
  "$@" >"$W/out" 2>"$W/err"
  rc=$?
  [ "$rc" = "$want" ] || fail "status $rc, want $want: $*"
  [ -z "$pat" ] || grep -Eq -- "$pat" "$W/err" || fail "stderr does not match '$pat': $*"
}
trace() { # DIR [ITERS]: a small job of 2 processes
  NCCLSCOPE_DIR="$1" NCCLSCOPE_EVENTS=all "$SIM" --plugin "$PLUGIN" --scenario mixed --ranks 2 \
    --procs 2 --iters "${2:-20}" >"$W/sim.out" 2>&1 || fail "nccl-sim exited $?"
}
# alive PID: the process exists and is not a zombie (an orphan's zombie may wait for init)
alive() { [ -e "/proc/$1" ] && ! grep -q '^[0-9]* (.*) Z' "/proc/$1/stat" 2>/dev/null; }
ext() { case $1 in perfetto) echo pftrace ;; chrome) echo json ;; sqlite) echo sqlite ;; esac; }
# valid FORMAT FILE: the file is a complete output of that format
valid() {
  case $1 in
  perfetto) "$LINT" "$2" >/dev/null 2>&1 || fail "$2 is not a valid .pftrace" ;;
  chrome) python3 -c "import json,sys; json.load(open(sys.argv[1]))" "$2" || fail "$2: bad JSON" ;;
  sqlite) python3 -c "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]);
assert c.execute('PRAGMA integrity_check').fetchone()[0]=='ok'
assert c.execute('SELECT COUNT(*) FROM operations').fetchone()[0]>0" "$2" || fail "$2: bad database" ;;
  html) grep -q '</html>' "$2" || fail "$2: no complete page" ;;
  esac
}
FORMATS="perfetto chrome sqlite"

case $CASE in
full)
  [ -w /dev/full ] && [ -c /dev/full ] || { echo "SKIP: no writable /dev/full"; exit 77; }
  # What a write to /dev/full fails with is the system's to say: Linux gives ENOSPC, some
  # sandboxes EIO. The message must carry that error, whichever it is.
  FULLERR=$(python3 -c "
import os
fd = os.open('/dev/full', os.O_WRONLY)
try:
    os.write(fd, b'x')
except OSError as e:
    print(e.strerror)")
  [ -n "$FULLERR" ] || { echo "SKIP: writing to /dev/full does not fail here"; exit 77; }
  trace "$W/t"
  for c in "report --json" "report" "dump" "dump --stats" "diagnose" "diagnose --json"; do
    # shellcheck disable=SC2086
    expect 5 "cannot write standard output: $FULLERR" sh -c "exec '$NCS' $c '$W/t' >/dev/full"
    # shellcheck disable=SC2086
    "$NCS" $c "$W/t" >/dev/null 2>"$W/err" || fail "$c to /dev/null: status $?"
  done
  expect 5 "cannot write /dev/full: $FULLERR" "$NCS" report --html /dev/full "$W/t"
  [ -s "$W/out" ] && fail "report printed although the page could not be written"
  for f in $FORMATS; do
    expect 5 "cannot write /dev/full: $FULLERR" "$NCS" export -q -f "$f" "$W/t" -o /dev/full
    expect 5 "cannot write /dev/full: $FULLERR" "$NCS" export -q -f "$f" --force "$W/t" -o /dev/full
    expect 5 "cannot write -: $FULLERR" sh -c "exec '$NCS' export -q -f $f '$W/t' -o - >/dev/full"
    expect 0 "" "$NCS" export -q -f "$f" "$W/t" -o /dev/null
  done
  [ -c /dev/full ] && [ -c /dev/null ] || fail "a device node was replaced"
  ;;
special)
  trace "$W/t"
  mkfifo "$W/fifo" || fail "mkfifo"
  for f in $FORMATS html; do
    cat "$W/fifo" >"$W/from-fifo.$f" &
    reader=$!
    if [ $f = html ]; then
      expect 0 "" "$NCS" report --html "$W/fifo" "$W/t"
    else
      expect 0 "" "$NCS" export -q -f $f "$W/t" -o "$W/fifo"
    fi
    wait $reader
    [ -p "$W/fifo" ] || fail "$f: the FIFO is no longer a FIFO"
    valid $f "$W/from-fifo.$f"
  done
  ls -A "$W" | grep -q tmp && fail "a temporary file was left: $(ls -A "$W")"
  python3 -c "import socket,sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])" "$W/sock" ||
    fail "cannot make a socket"
  mkdir "$W/dir"
  ln -s "$W/nowhere/x" "$W/dangling"
  for f in $FORMATS; do
    expect 5 "is a socket: refused" "$NCS" export -q -f $f --force "$W/t" -o "$W/sock"
    expect 5 "is a directory: refused" "$NCS" export -q -f $f --force "$W/t" -o "$W/dir"
    expect 5 "is a symbolic link to nothing: refused" "$NCS" export -q -f $f --force "$W/t" -o "$W/dangling"
  done
  expect 5 "is a socket: refused" "$NCS" report --html "$W/sock" "$W/t"
  [ -S "$W/sock" ] && [ -d "$W/dir" ] && [ -L "$W/dangling" ] && [ ! -e "$W/nowhere" ] ||
    fail "a refused target was changed"
  [ -z "$(ls -A "$W/dir")" ] || fail "something was written into the directory"
  # a block device (root, where mknod is allowed): refused, still a block device
  if mknod "$W/blk" b 7 250 2>/dev/null; then
    expect 5 "is a block device: refused" "$NCS" export -q --force "$W/t" -o "$W/blk"
    [ -b "$W/blk" ] || fail "the block device was replaced"
  else
    echo "note: cannot make a block device here (not root, or no CAP_MKNOD): not tested"
  fi
  # a symlink to a file is followed: the file is replaced (--force), the link stays a link
  for f in $FORMATS; do
    echo old >"$W/target.$f"
    ln -s "target.$f" "$W/link.$f"
    expect 5 "exists [(]use --force to replace it[)]" "$NCS" export -q -f $f "$W/t" -o "$W/link.$f"
    expect 0 "" "$NCS" export -q -f $f --force "$W/t" -o "$W/link.$f"
    [ -L "$W/link.$f" ] || fail "$f: the symlink was replaced by a file"
    valid $f "$W/target.$f"
  done
  ;;
inputs)
  trace "$W/t"
  one=$(ls "$W"/t/*.nstrace | head -1)
  sum=$(cat "$W"/t/*.nstrace | cksum)
  for f in $FORMATS; do
    expect 5 "is inside the input directory" "$NCS" export -q -f $f --force "$W/t" -o "$W/t/out.$(ext $f)"
    expect 5 "is an input" "$NCS" export -q -f $f --force "$one" -o "$one"
    expect 5 "is inside the input directory" "$NCS" export -q -f $f --force "$W/t" -o "$one"
  done
  expect 5 "is inside the input directory" "$NCS" report --html "$W/t/r.html" "$W/t"
  expect 5 "is inside the input directory" "$NCS" report --html "$one" --force "$W/t"
  # through a symlink, and a hard link to an input
  ln -s "$one" "$W/link.nstrace"
  ln "$one" "$W/hard.nstrace"
  expect 5 "is inside the input directory" "$NCS" export -q --force "$W/t" -o "$W/link.nstrace"
  expect 5 "is an input" "$NCS" export -q --force "$one" -o "$W/hard.nstrace"
  [ "$(cat "$W"/t/*.nstrace | cksum)" = "$sum" ] || fail "an input was changed"
  [ "$(ls "$W/t" | wc -l)" = 2 ] || fail "something was written into the input directory: $(ls -A "$W/t")"
  # and the same outputs beside the inputs are fine
  for f in $FORMATS; do
    expect 0 "" "$NCS" export -q -f $f "$W/t" -o "$W/beside.$(ext $f)"
  done
  expect 0 "" "$NCS" report --html "$W/beside.html" "$W/t"
  ;;
overwrite)
  trace "$W/t"
  for f in $FORMATS html; do
    o=$W/o.$f
    echo precious >"$o"
    chmod 640 "$o"
    if [ $f = html ]; then set -- report --html "$o" "$W/t"; else set -- export -q -f $f "$W/t" -o "$o"; fi
    expect 5 "exists [(]use --force to replace it[)]" "$NCS" "$@"
    [ "$(cat "$o")" = precious ] || fail "$f: the existing output was changed without --force"
    expect 0 "" "$NCS" "$@" --force
    valid $f "$o"
    [ "$(stat -c %a "$o")" = 640 ] || fail "$f: permission bits not kept: $(stat -c %a "$o")"
  done
  # a new file is created with the usual permissions (not mkstemp's 0600), anonymous temporary
  # file or named one (SQLite)
  for f in perfetto sqlite; do
    (umask 027 && "$NCS" export -q -f $f "$W/t" -o "$W/new.$f") || fail "new $f output"
    [ "$(stat -c %a "$W/new.$f")" = 640 ] || fail "new $f output: mode $(stat -c %a "$W/new.$f")"
  done
  # demo: its timeline DIR.pftrace follows the same rule
  # (and so does its report DIR.html)
  expect 0 "" "$NCS" demo -o "$W/demo" --ranks 2 --iters 3 --procs 1
  grep -q "[$]D[.]pftrace  timeline" "$W/out" && grep -q "[$]D[.]html  report" "$W/out" || fail "demo names no timeline or report"
  # a second run into the demo's own directory replaces its files (docs/cli.md, "ncclscope demo")
  expect 0 "" "$NCS" demo -o "$W/demo" --ranks 2 --iters 3 --procs 1
  # a timeline another command wrote where the demo would write its own: refused, then --force
  cp "$W/demo.pftrace" "$W/demo2.pftrace" && cksum "$W/demo2.pftrace" >"$W/sum2"
  expect 5 "exists [(]use --force to replace it[)]" "$NCS" demo -o "$W/demo2" --ranks 2 --iters 3 --procs 1
  cksum "$W/demo2.pftrace" | cmp -s - "$W/sum2" || fail "a refused demo changed another's timeline"
  expect 0 "" "$NCS" demo -o "$W/demo2" --ranks 2 --iters 3 --procs 1 --force
  grep -q "[$]D[.]pftrace  timeline" "$W/out" && grep -q "[$]D[.]html  report" "$W/out" || fail "demo --force names no timeline or report"
  ls -A "$W" | grep -q tmp && fail "a temporary file was left: $(ls -A "$W")"
  ;;
killed)
  python3 - "$NCS" "$SIM" "$PLUGIN" "$W" <<'PY' || fail "see above"
import os, shutil, signal, subprocess, sys, time
ncs, sim, plugin, w = sys.argv[1:5]
out, trace = os.path.join(w, "o"), os.path.join(w, "t")
os.mkdir(out)
def make_trace(iters):
    shutil.rmtree(trace, ignore_errors=True)
    env = dict(os.environ, NCCLSCOPE_DIR=trace, NCCLSCOPE_EVENTS="all")
    subprocess.run([sim, "--plugin", plugin, "--scenario", "mixed", "--ranks", "2", "--procs", "2",
                    "--iters", str(iters)], env=env, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, check=True)
def tmpfile_ok():  # can this file system make anonymous files (O_TMPFILE)?
    try:
        os.close(os.open(out, os.O_TMPFILE | os.O_WRONLY, 0o600))
        return True
    except OSError:
        return False
anon = tmpfile_ok()
def writing(pid):  # the export has an output file with data open in out/
    try:
        for fd in os.listdir("/proc/%d/fd" % pid):
            p = "/proc/%d/fd/%s" % (pid, fd)
            if os.readlink(p).startswith(out + "/") and os.stat(p).st_size > 0:
                return True
    except OSError:
        pass
    return False
def kill_while_writing(fmt, final, sig):  # True once it was killed while writing
    p = subprocess.Popen([ncs, "export", "-q", "--jobs", "1", "-f", fmt, trace, "-o", final],
                         stderr=subprocess.DEVNULL)
    caught = False
    while p.poll() is None:
        if writing(p.pid):
            os.kill(p.pid, sig)
            caught = True
            break
        time.sleep(0.002)
    p.wait()
    if caught and p.returncode != -sig:
        sys.exit("%s: status %d, not killed by %s" % (fmt, p.returncode, sig.name))
    if not caught and os.path.exists(final):
        os.unlink(final)
    return caught
iters = 400
make_trace(iters)
for fmt, ext in (("perfetto", "pftrace"), ("chrome", "json"), ("sqlite", "sqlite")):
    for sig in (signal.SIGKILL, signal.SIGTERM):
        final = os.path.join(out, "x." + ext)
        # on a fast machine the export may end before it is seen writing: a bigger trace
        while not kill_while_writing(fmt, final, sig):
            if iters >= 400 * 16:
                sys.exit("%s: every export ended before it could be killed while writing" % fmt)
            iters *= 2
            make_trace(iters)
        if os.path.exists(final):
            sys.exit("%s: %s left a file under the final name" % (fmt, sig.name))
        left = os.listdir(out)
        # SIGTERM: the temporary file is removed. SIGKILL: nothing can remove it; an anonymous
        # one (O_TMPFILE) has no name to leave, a named one (SQLite opens files by name) is hidden
        if sig == signal.SIGTERM or (anon and fmt != "sqlite"):
            if left:
                sys.exit("%s: %s left %s" % (fmt, sig.name, left))
        elif any(not (n.startswith(".") and ".tmp-" in n) for n in left):
            sys.exit("%s: %s left %s" % (fmt, sig.name, left))
        for n in left:
            os.unlink(os.path.join(out, n))
        print("%s %s: nothing under the final name, left %s" % (fmt, sig.name, left or "nothing"))
PY
  ;;
stdout)
  trace "$W/t"
  expect 5 "cannot write standard output: Bad file descriptor" sh -c "exec '$NCS' dump '$W/t' >&-"
  expect 5 "cannot write standard output" sh -c "exec '$NCS' report --json '$W/t' >&-"
  # record writes nothing to standard output itself: its command's status stands
  expect 3 "" sh -c "NCCLSCOPE_PLUGIN='$PLUGIN' exec '$NCS' record -o '$W/r' -- sh -c 'exit 3' >&-"
  ;;
record-tree)
  "$NCS" record -o "$W/r" -- "$SIM" --plugin "$PLUGIN" --scenario mixed --ranks 4 --procs 2 \
    --iters 100000000 >/dev/null 2>"$W/err" &
  rp=$!
  # both processes are recording (two trace files with data)
  i=0
  while [ "$(find "$W/r" -name '*.nstrace' -size +0 2>/dev/null | wc -l)" -lt 2 ]; do
    i=$((i + 1))
    [ $i -lt 600 ] || { kill -KILL $rp; fail "the job did not start recording within 60 s"; }
    sleep 0.1
  done
  leader=$(pgrep -P $rp)
  [ -n "$leader" ] || fail "no command under record"
  worker=$(pgrep -P "$leader")
  [ -n "$worker" ] || fail "nccl-sim --procs 2 has no second process"
  kill -TERM $rp
  wait $rp
  rc=$?
  [ $rc = 143 ] || fail "record status $rc, want 143 (the command died of SIGTERM)"
  for p in $leader $worker; do
    alive "$p" && fail "process $p of the job is still alive after record returned"
  done
  grep -q "trace written to $W/r (2 files)" "$W/err" || fail "no 'trace written'"
  s1=$(ls -l "$W"/r/*.nstrace | awk '{print $5}')
  sleep 1
  [ "$(ls -l "$W"/r/*.nstrace | awk '{print $5}')" = "$s1" ] || fail "a trace file grew after record returned"
  ;;
record-wait)
  # the command exits at once; what it started in the background ends 5 s later (record says it
# waits after 2 s)
  expect 0 "the command exited; waiting for [0-9]+ more process" env NCCLSCOPE_PLUGIN="$PLUGIN" \
    "$NCS" record -o "$W/r" -- sh -c "(sleep 5; echo done >'$W/late') & exit 0"
  [ -s "$W/late" ] || fail "record returned before the process the command left behind ended"
  # processes that ignore SIGTERM, one of them outside the job's process group (setsid): killed
  # after --grace, with a message that names them
  NCCLSCOPE_PLUGIN="$PLUGIN" "$NCS" record -o "$W/r2" --grace 1 -- sh -c \
    "trap '' TERM; setsid sh -c 'trap \"\" TERM; echo \$\$ >\"$W/escaped\"; while :; do sleep 0.2; done' &
     echo \$\$ >'$W/leader'; while :; do sleep 0.2; done" >/dev/null 2>"$W/err" &
  rp=$!
  i=0
  while [ ! -s "$W/escaped" ] || [ ! -s "$W/leader" ]; do
    i=$((i + 1))
    [ $i -lt 300 ] || { kill -KILL $rp; fail "the job did not start"; }
    sleep 0.1
  done
  [ "$(ps -o pgid= -p "$(cat "$W/escaped")" | tr -d ' ')" != "$(ps -o pgid= -p "$(cat "$W/leader")" | tr -d ' ')" ] ||
    fail "setsid did not leave the process group"
  t0=$(date +%s)
  kill -TERM $rp
  wait $rp
  rc=$?
  [ $rc = 137 ] || fail "record status $rc, want 137 (the command was killed)"
  [ $(($(date +%s) - t0)) -le 30 ] || fail "record took more than 30 s with --grace 1"
  grep -Eq "did not end within 1 s of SIGTERM .*$(cat "$W/escaped")" "$W/err" ||
    fail "no message naming the process that ignored SIGTERM"
  grep -q "it may be incomplete" "$W/err" || fail "the trace is not called incomplete"
  for p in $(cat "$W/escaped" "$W/leader"); do
    alive "$p" && fail "process $p is still alive after record returned"
  done
  ;;
record-usr1)
  NCCLSCOPE_PLUGIN="$PLUGIN" "$NCS" record -o "$W/r" --mode flight -- sh -c \
    "'$SIM' --plugin '$PLUGIN' --scenario mixed --ranks 2 --procs 2 --iters 100000000 >/dev/null" \
    2>"$W/err" &
  rp=$!
  i=0
  while [ "$(find "$W/r" -maxdepth 1 -name '*.nsflight' 2>/dev/null | wc -l)" -lt 2 ]; do
    i=$((i + 1))
    [ $i -lt 600 ] || { kill -KILL $rp; fail "the flight recorders did not start within 60 s"; }
    sleep 0.1
  done
  launcher=$(pgrep -P $rp)
  [ -n "$launcher" ] || fail "no command under record"
  sleep 0.5 # the handler is installed with the first communicator, just before the file
  kill -USR1 $rp
  i=0
  while [ "$(find "$W/r/dumps" -name '*.nsflight' 2>/dev/null | wc -l)" -lt 2 ]; do
    i=$((i + 1))
    [ $i -lt 300 ] || { kill -TERM $rp; fail "SIGUSR1 gave $(ls "$W/r/dumps" 2>/dev/null | wc -l) dumps, want 2"; }
    sleep 0.1
  done
  alive "$launcher" || fail "SIGUSR1 killed the launching shell"
  alive $rp || fail "record ended on SIGUSR1"
  kill -TERM $rp
  wait $rp
  [ "$(ls "$W/r/dumps" | wc -l)" = 2 ] || fail "$(ls "$W/r/dumps" | wc -l) dumps after one SIGUSR1, want 2"
  ;;
record-exec)
  expect 127 "record: error: cannot run /nonexistent/cmd: No such file or directory" \
    env NCCLSCOPE_PLUGIN="$PLUGIN" "$NCS" record -o "$W/r" -- /nonexistent/cmd
  grep -Eq "trace written|NCCL_DEBUG" "$W/err" && fail "a trace is claimed for a command that never ran"
  [ ! -e "$W/r" ] || fail "the empty trace directory was left behind"
  printf '#!/bin/sh\n' >"$W/noexec"
  chmod 644 "$W/noexec"
  expect 126 "record: error: cannot run $W/noexec: Permission denied" \
    env NCCLSCOPE_PLUGIN="$PLUGIN" "$NCS" record -o "$W/r" -- "$W/noexec"
  # a directory that already existed stays
  mkdir "$W/keep"
  expect 127 "cannot run" env NCCLSCOPE_PLUGIN="$PLUGIN" "$NCS" record -o "$W/keep" -- /nonexistent/cmd
  [ -d "$W/keep" ] || fail "record removed a directory it did not create"
  # a command that runs and exits 127 itself is the command's business: the trace is reported
  # (here that there is none: sh does not use NCCL), not "cannot run"
  expect 127 "no trace file was written to" env NCCLSCOPE_PLUGIN="$PLUGIN" "$NCS" record -o "$W/r" -- sh -c 'exit 127'
  ;;
events)
  expect 2 "--events '-1' selects no event type.*did you mean 'default,-1'" "$NCS" record -e -1 -- true
  expect 2 "--events 'none' selects no event type" "$NCS" record -e none -- true
  expect 2 "--events 'coll,-coll' selects no event type" "$NCS" record -e coll,-coll -- true
  expect 2 "NCCLSCOPE_EVENTS '-1' selects no event type" env NCCLSCOPE_EVENTS=-1 "$NCS" record -- true
  expect 2 "--events '-1' selects no event type" "$NCS" demo -e -1
  expect 2 "--events '-coll' selects no event type" "$NCS" export -e -coll /nonexistent
  expect 2 "--type '-1' selects no event type" "$NCS" dump --type -1 /nonexistent
  # lists that select something are still fine
  expect 3 "" "$NCS" dump --type all,-1 /nonexistent
  expect 0 "" env NCCLSCOPE_PLUGIN="$PLUGIN" "$NCS" record -o "$W/r0" -e default,-p2p -- true
  # the plugin: a logged configuration error, and the default list recorded
  NCCLSCOPE_EVENTS=-1 NCCLSCOPE_DIR="$W/p" "$SIM" --plugin "$PLUGIN" --scenario allreduce --ranks 2 \
    --iters 2 --verbose >/dev/null 2>"$W/err" || fail "nccl-sim exited $?"
  grep -q 'configuration: NCCLSCOPE_EVENTS="-1": selects no event type' "$W/err" ||
    fail "the plugin did not log the empty event list"
  "$NCS" dump "$W/p" >"$W/out" 2>&1 || fail "dump"
  grep -q "SEGMENT .*mask=0x[0-9a-f]*(group,coll,p2p,kernel,groupapi,collapi,p2papi,launch)" "$W/out" ||
    fail "the plugin did not record the default events"
  grep -q "START Coll" "$W/out" || fail "nothing was recorded"
  ;;
couple)
  "$SIM" --plugin "$PLUGIN" --scenario allreduce --ranks 4 --procs 4 --couple on \
    --iters 100000000 >/dev/null 2>"$W/err" &
  sp=$!
  sleep 2
  victim=$(pgrep -P $sp | sed -n 2p)
  [ -n "$victim" ] || { kill -KILL $sp; fail "nccl-sim has no child processes"; }
  kids=$(pgrep -P $sp)
  t0=$(date +%s)
  kill -KILL "$victim"
  wait $sp
  rc=$?
  dt=$(($(date +%s) - t0))
  [ $rc = 6 ] || fail "nccl-sim status $rc, want 6"
  [ $dt -le 20 ] || fail "nccl-sim took $dt s to stop after a peer died"
  grep -Eq "process [0-9]+ \(pid $victim, rank [0-9]+\) was killed by signal 9; coupled ranks cannot go on" "$W/err" ||
    fail "no message naming the dead process"
  for p in $kids; do
    i=0
    while alive "$p"; do # it ended by itself, or the parent killed it: reaping takes a moment
      i=$((i + 1))
      [ $i -lt 50 ] || fail "process $p is still alive"
      sleep 0.1
    done
  done
  # the parent killed: its children see it and stop
  "$SIM" --plugin "$PLUGIN" --scenario allreduce --ranks 4 --procs 4 --couple on \
    --iters 100000000 >/dev/null 2>"$W/err" &
  sp=$!
  sleep 2
  kids=$(pgrep -P $sp)
  kill -KILL $sp
  wait $sp
  i=0
  for p in $kids; do
    while alive "$p"; do
      i=$((i + 1))
      [ $i -lt 200 ] || fail "process $p still alive 20 s after its parent died"
      sleep 0.1
    done
  done
  grep -q "the parent process (pid $sp) died" "$W/err" || fail "no message about the dead parent"
  ;;
*)
  fail "unknown case"
  ;;
esac
echo "outputs check $CASE: ok"
