#!/bin/sh
# jobs_check.sh SIM PLUGIN NCCLSCOPE WORKDIR CASE - which files form the job (docs/model.md, "Jobs
# and duplicates"), through report, export (Perfetto, SQLite) and diagnose.
#   dup:   a copy of one trace file in the directory is read once, with a warning (before:
#          report counted twice the instances); a clean directory has no such warning
#   runs:  two runs recorded into one directory (nccl-sim's fixed commIds) are refused without
#          --run and never merged; --run 1 and --run 2 give each run's own report
#   loose: an ABI v3 job (no commIds; processes that need not overlap in time) stays one job
set -u
SIM=$1 PLUGIN=$2 NCS=$3 W=$4 CASE=$5
rm -rf "$W" && mkdir -p "$W"
fail() { echo "FAIL: $*"; exit 1; }
sim() { d=$1; shift; NCCLSCOPE_DIR="$d" "$SIM" --plugin "$PLUGIN" "$@" >"$W/sim.out" 2>&1 || fail "nccl-sim $*"; }
# js DIR [report options]: the report's JSON into $W/r.json, its status into $rc
js() { d=$1; shift; "$NCS" report --json "$@" "$d" >"$W/r.json" 2>"$W/r.err"; rc=$?; }
py() { python3 -c "import json; r=json.load(open('$W/r.json')); $1" || fail "$2"; }
inst() { python3 -c "import json; print(json.load(open('$W/r.json'))['collectives']['instances'])"; }
case $CASE in
dup)
  sim "$W/t" --scenario mixed --ranks 4 --procs 2 --iters 10 --couple on
  js "$W/t"
  [ $rc -eq 0 ] || fail "report of the clean directory exited $rc"
  py "c=r['coverage']; assert c['duplicates']==0 and c['jobs']==1 and c['files']==2, c
assert not [w for w in r['warnings'] if w['key'] in ('duplicate','other_jobs')], r['warnings']" "false warning"
  n=$(inst)
  f=$(ls "$W/t" | head -1)
  cp "$W/t/$f" "$W/t/copy-$f"
  js "$W/t"
  [ $rc -eq 0 ] || fail "report with a copy exited $rc: $(cat "$W/r.err")"
  [ "$(inst)" = "$n" ] || fail "instances $(inst) with a copy, $n without"
  py "c=r['coverage']; assert c['duplicates']==1 and c['files']==2, c
w=[x for x in r['warnings'] if x['key']=='duplicate']; assert len(w)==1 and 'copy-$f' in w[0]['text'], r['warnings']
assert len(r['processes'])==2, r['processes']" "duplicate not counted once"
  "$NCS" report "$W/t" | grep -q "! 1 file repeats another recording" || fail "no text warning"
  "$NCS" export -q -o "$W/t.json" -f chrome "$W/t" 2>"$W/e.err" || fail "export exited $?"
  grep -q "the same recording as" "$W/e.err" || fail "export: no duplicate warning"
  "$NCS" export -q -f sqlite -o "$W/t.sqlite" "$W/t" || fail "sqlite export exited $?"
  python3 - "$W/t.sqlite" "$n" <<'PYEOF' || fail "sqlite: duplicate rows"
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
m = dict(db.execute("select key, value from meta"))
assert m['duplicate_files'] == '1' and m['files'] == '2', m
assert int(m['instances']) == int(sys.argv[2]), m
assert db.execute("select count(*) from processes").fetchone()[0] == 2
assert 'warning_duplicate' in m, m
PYEOF
  "$NCS" diagnose "$W/t" >"$W/d.txt" 2>&1 || fail "diagnose exited $?: $(cat "$W/d.txt")"
  grep -q "1 recording repeats another" "$W/d.txt" || fail "diagnose: no note"
  grep -q "copy-$f *the same recording as\|$f *the same recording as" "$W/d.txt" || fail "diagnose: file not listed"
  ;;
runs)
  sim "$W/t" --scenario mixed --ranks 4 --procs 2 --iters 10 --couple on
  js "$W/t"
  n1=$(inst)
  sim "$W/u" --scenario allreduce --ranks 4 --procs 2 --iters 7 --couple on
  js "$W/u"
  n2=$(inst)
  cp "$W/u"/*.nstrace "$W/t/"
  for v in report diagnose "export -q -o $W/x.pftrace" "export -q -f sqlite -o $W/x.sqlite"; do
    $NCS $v "$W/t" >"$W/o.txt" 2>&1
    rc=$?
    [ $rc -eq 2 ] || fail "$v of two runs exited $rc, want 2"
    grep -q "the traces hold 2 runs" "$W/o.txt" || fail "$v: no list of runs: $(head -3 "$W/o.txt")"
    grep -q "^  run 2: 2 files" "$W/o.txt" || fail "$v: run 2 not listed"
  done
  [ ! -e "$W/x.pftrace" ] && [ ! -e "$W/x.sqlite" ] || fail "an output was left"
  js "$W/t" --run 1
  [ $rc -eq 0 ] && [ "$(inst)" = "$n1" ] || fail "--run 1: status $rc, $(inst) instances, want $n1"
  py "c=r['coverage']; assert c['jobs']==2 and c['job']==1 and c['other_job_files']==2 and c['files']==2, c
assert [w for w in r['warnings'] if w['key']=='other_jobs'], r['warnings']" "run 1 coverage"
  js "$W/t" --run 2
  [ $rc -eq 0 ] && [ "$(inst)" = "$n2" ] || fail "--run 2: status $rc, $(inst) instances, want $n2"
  js "$W/t" --run last
  [ "$(inst)" = "$n2" ] || fail "--run last is not run 2"
  js "$W/t" --run 3
  [ $rc -eq 2 ] && grep -q "no run 3" "$W/r.err" || fail "--run 3: status $rc"
  "$NCS" diagnose --run 2 "$W/t" >"$W/d.txt" 2>&1 || fail "diagnose --run 2 exited $?: $(head -5 "$W/d.txt")"
  grep -q "another run's: left out" "$W/d.txt" || fail "diagnose: other run not listed"
  "$NCS" export -q --run 1 -f sqlite -o "$W/x.sqlite" "$W/t" || fail "sqlite --run 1 exited $?"
  python3 -c "import sqlite3; m=dict(sqlite3.connect('$W/x.sqlite').execute('select key,value from meta'))
assert m['run']=='1' and m['runs']=='2' and m['instances']=='$n1', m" || fail "sqlite --run 1 meta"
  ;;
loose)
  # ABI v3 passes no commId: nothing ties the processes together, nor splits them
  sim "$W/t" --scenario mixed --abi 3 --ranks 4 --procs 4 --iters 10
  js "$W/t"
  [ $rc -eq 0 ] || fail "report exited $rc: $(cat "$W/r.err")"
  py "c=r['coverage']; assert c['jobs']==1 and c['files']==4 and c['other_job_files']==0, c" "abi 3 split"
  ;;
*) fail "unknown case $CASE" ;;
esac
echo "jobs check $CASE: ok"
