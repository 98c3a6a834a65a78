#!/bin/sh
# diagnose_check.sh NCCLSCOPE GEN SIM PLUGIN WORKDIR CASE - `ncclscope diagnose` (docs/diagnose.md).
# Prints "diagnose check CASE: ok" on success. CASE:
#   gen-KIND-MODE   crafted recordings (tests/diagnose_gen.c): KIND healthy skip stall mismatch kill
#                   kernel p2p, lost (a stall whose rank dropped records: cannot tell), orphan (a
#                   completion lost, later ones complete: not a hang), cupti (the stall with CUPTI:
#                   its evidence for and against); MODE trace or flight (dumps
#                   of one incident + live files)
#   sim-KIND-MODE   nccl-sim --fault KIND with the plugin: 4 ranks in 4 processes; MODE flight
#                   (NCCLSCOPE_WATCHDOG_S=1: the watchdog makes every process dump) or trace;
#                   KIND healthy: no fault; neverstop: that scenario, healthy (no false hang)
#   usage           exit statuses for bad command lines (2) and unreadable input (3)
#   incidents       two incidents of dumps: the first by default, --latest, --incident N
#   heartbeat       a flight header with a heartbeat at 2^63 ns
#   repro-NAME      the reproducers of issues 14, 15, 24 with nccl-sim (see each case)
set -u
NS=$1 GEN=$2 SIM=$3 PLUGIN=$4 W=$5 CASE=$6
rm -rf "$W" && mkdir -p "$W"
fail() {
  echo "diagnose check $CASE: FAILED: $*"
  echo "---- diagnose output:"
  head -60 "$W/out.txt" 2>/dev/null
  exit 1
}
# diag DIR [ARGS]: text into out.txt, JSON into out.json; the exit status of both must agree
diag() {
  d=$1
  shift
  "$NS" diagnose "$@" "$d" >"$W/out.txt" 2>&1
  rc=$?
  "$NS" diagnose --json "$@" "$d" >"$W/out.json" 2>"$W/json.err"
  jrc=$?
  [ $rc -eq $jrc ] || fail "text exit $rc, json exit $jrc"
  python3 -c "import json; json.load(open('$W/out.json'))" 2>"$W/json.err" ||
    fail "--json does not parse: $(head -3 "$W/json.err")"
  return $rc
}
# py 'EXPR' 'what': assert over the JSON (r = the document, v = its first verdict)
py() {
  python3 -c "
import json,sys
r=json.load(open('$W/out.json'))
v=r['verdicts'][0]
$1" 2>"$W/py.err" || fail "$2: $(tail -2 "$W/py.err")"
}
expect_rc() { [ "$1" -eq "$2" ] || fail "exit status $1, expected $2"; }

# the verdict for each kind of fault (FAULT_RANK: the rank the fault hit)
check_verdict() { # KIND MODE FAULT_RANK
  case $1 in
  healthy)
    expect_rc $rc 0
    grep -q "nothing stuck: no open collective" "$W/out.txt" || fail "no 'nothing stuck'"
    py "assert not r['problem'] and r['status']=='ok' and v['kind']=='nothing_stuck', v" "healthy json"
    ;;
  skip)
    expect_rc $rc 1
    py "assert v['kind']=='not_entered' and v['rank']==$3, v
assert v['where'] in (('outside','exited') if '$2'=='trace' else ('outside',)), v['where']
assert r['status']=='hang'" "skip: rank $3 never entered, outside NCCL"
    grep -q "^HANG   rank $3 never entered .*outside NCCL" "$W/out.txt" || fail "skip text"
    ;;
  stall)
    expect_rc $rc 1
    py "assert v['kind']=='stuck_inside' and v['rank']==$3, v
assert v['is_send']==1 and v['state'] in ('SendWait','SendGPUWait'), v
assert v['step']>=0 and v['channel']>=0 and v['peer']>=0, v" "stall: rank $3 stuck inside at its send step"
    grep -q "^HANG   every rank of communicator 0x[0-9a-f]* entered .* rank $3 is stuck inside it: send step [0-9]* on channel [0-9]* to rank [0-9]* in Send" \
      "$W/out.txt" || fail "stall text"
    ;;
  mismatch)
    expect_rc $rc 1
    py "assert v['kind']=='mismatch' and v['rank']==$3 and v['ranks']==[$3], v
assert 'count' in v['what'], v" "mismatch: rank $3, count"
    grep -q "^DESYNC mismatched .*rank $3 called it with a different count" "$W/out.txt" || fail "mismatch text"
    ;;
  mismatch-dtype)
    expect_rc $rc 1
    py "assert v['kind']=='mismatch' and v['rank']==$3 and 'datatype' in v['what'], v" "mismatch-dtype"
    ;;
  kill)
    expect_rc $rc 1
    py "assert v['kind']=='dead' and v['rank']==$3 and v['where']=='dead', v
assert r['status']=='dead'
p=[x for x in r['processes'] if x['dead']]
assert len(p)==1, p" "kill: rank $3 process died"
    grep -q "^DEAD   rank $3 never entered .*its process died" "$W/out.txt" || fail "kill text"
    ;;
  kernel)
    expect_rc $rc 1
    py "assert v['kind']=='stuck_inside' and v['rank']==$3 and v['state']=='KernelCh', v" "kernel: rank $3"
    grep -q "kernels of all ranks are open; its kernel started last" "$W/out.txt" || fail "kernel text"
    ;;
  lost)
    # the stalled rank's plugin dropped records after the hung operation started: which rank
    # the others wait for cannot be told; no HANG may name anyone
    expect_rc $rc 1
    py "assert v['kind']=='cannot_tell' and v['rank']==$3 and r['status']=='cannot_tell', v
assert not [x for x in r['verdicts'] if x['kind'] in ('stuck_inside','not_entered','nothing_stuck')], r['verdicts']
assert all(x['comm_id'] for x in r['verdicts']), r['verdicts']" "lost: cannot tell, rank $3"
    grep -q "^CANNOT TELL cannot tell which rank communicator 0x[0-9a-f]* waits for" "$W/out.txt" || fail "lost text"
    grep -q "rank $3's AllReduce #5 is open, and its recording lost records (drops)" "$W/out.txt" || fail "lost evidence"
    ;;
  orphan)
    # rank 2's AllReduce #3 lost its completion records; the ones after it completed: not a hang
    expect_rc $rc 0
    py "assert v['kind']=='nothing_stuck' and r['status']=='ok', v" "orphan: nothing stuck"
    ;;
  cupti)
    # the stall, recorded with CUPTI: its evidence for (ranks 2 and 3: launched before the last
    # flush, never completed) and against (rank 0: its kernel completed; rank 1: launched after
    # the last flush, no evidence either way)
    check_verdict stall "$2" "$3"
    grep -q "rank 0: against a hang in its kernel: CUPTI saw the kernel of AllReduce #5 complete (245.0 us) although its host events are open" \
      "$W/out.txt" || fail "cupti: no evidence against from rank 0's completed kernel"
    # the last flush: 3 s after the launches at the end of a trace, 1 s (less 30-40 us) in a dump
    ago="3.00 s"
    [ "$2" = flight ] && ago="999.9[0-9] ms"
    for k in 2 3; do
      grep -q "rank $k (node1-100$k): CUPTI: the NCCL kernel of AllReduce #5 (KernelLaunch 553, stream 0x5a00000$k) was launched $ago before CUPTI's last flush and never completed" \
        "$W/out.txt" || fail "cupti: rank $k's launch without kernel"
    done
    grep -q "rank 1 (node1-1001): CUPTI: the NCCL kernel of AllReduce #5 was launched after CUPTI's last flush: not known" \
      "$W/out.txt" || fail "cupti: rank 1's launch after the flush"
    [ "$(grep -c 'CUPTI' "$W/out.txt")" = 4 ] || fail "cupti: other CUPTI lines: $(grep CUPTI "$W/out.txt")"
    ;;
  p2p)
    expect_rc $rc 1
    py "assert v['kind']=='not_entered' and v['rank']==1 and v['func']=='Send', v
c=r['communicators'][0]['stuck']; assert c['p2p'] and c['rank']==0 and c['peer']==1, c" "p2p"
    grep -q "rank 1 never posted the Recv from rank 0" "$W/out.txt" || fail "p2p text"
    ;;
  esac
}

case $CASE in
gen-*)
  kind=${CASE#gen-}
  mode=${kind##*-}
  kind=${kind%-*}
  "$GEN" "$W/rec" "$kind" "$mode" || fail "generator"
  diag "$W/rec"
  case $kind in skip | kill) fr=2 ;; stall | kernel | lost | cupti) fr=1 ;; mismatch) fr=3 ;; *) fr=-1 ;; esac
  check_verdict "$kind" "$mode" "$fr"
  if [ "$mode" = flight ] && [ "$kind" != healthy ] && [ "$kind" != orphan ]; then
    py "i=r['incident']; assert i and i['index']==1 and i['count']==1, i" "incident"
  fi
  if [ "$mode" = jobkill ]; then
    py "assert not any(p['dead'] for p in r['processes']), r['processes']
assert any('4 traces without footer' in n for n in r['notes']), r['notes']" "jobkill: nobody died alone"
  fi
  ;;
sim-*)
  kind=${CASE#sim-}
  mode=${kind##*-}
  kind=${kind%-*}
  case $kind in skip | kill) fr=2 ;; stall) fr=1 ;; mismatch | mismatch-dtype) fr=3 ;; *) fr=-1 ;; esac
  fault="" scen=allreduce
  case $kind in
  healthy) ;;
  neverstop) scen=neverstop ;; # CollNet/SHM-style ProxyOps that NCCL never stops: not a hang
  *) fault="--fault $kind:$fr:10 --hang-s 3" ;;
  esac
  unset NCCLSCOPE_MODE NCCLSCOPE_WATCHDOG_S NCCLSCOPE_FLIGHT_SIZE NCCLSCOPE_CAPTURE NCCLSCOPE_DISABLE
  if [ "$mode" = flight ]; then
    export NCCLSCOPE_MODE=flight NCCLSCOPE_WATCHDOG_S=1 NCCLSCOPE_FLIGHT_SIZE=1M
  fi
  # proxy steps: the stall verdict names the stuck step
  NCCLSCOPE_EVENTS=default,proxy NCCLSCOPE_DIR="$W/rec" "$SIM" --plugin "$PLUGIN" --scenario $scen \
    --ranks 4 --procs 4 --iters 20 $fault >"$W/sim.txt" 2>&1
  src=$?
  case $kind in healthy | neverstop | mismatch*) want=0 ;; *) want=3 ;; esac
  [ $src -eq $want ] || fail "nccl-sim exited $src, expected $want: $(tail -3 "$W/sim.txt")"
  if [ "$mode" = flight ] && [ $want -eq 3 ]; then
    ls "$W"/rec/dumps/*.nsflight >/dev/null 2>&1 || fail "the watchdog wrote no dumps"
  fi
  diag "$W/rec"
  [ "$kind" = neverstop ] && kind=healthy
  check_verdict "$kind" "$mode" "$fr"
  ;;
usage)
  "$NS" diagnose >"$W/out.txt" 2>&1
  expect_rc $? 2
  "$NS" diagnose "$W/none" >"$W/out.txt" 2>&1
  expect_rc $? 3
  mkdir -p "$W/empty"
  "$NS" diagnose "$W/empty" >"$W/out.txt" 2>&1
  expect_rc $? 3
  grep -q "no recordings" "$W/out.txt" || fail "empty dir message"
  "$NS" diagnose --bogus "$W/empty" >"$W/out.txt" 2>&1
  expect_rc $? 2
  "$NS" diagnose --incident 1 --latest "$W/empty" >"$W/out.txt" 2>&1
  expect_rc $? 2
  "$NS" diagnose --incident x "$W/empty" >"$W/out.txt" 2>&1
  expect_rc $? 2
  "$NS" diagnose --help >"$W/out.txt" 2>&1
  expect_rc $? 0
  grep -q -- "--latest" "$W/out.txt" || fail "help"
  "$GEN" "$W/rec" healthy trace || fail "generator"
  "$NS" diagnose --incident 2 "$W/rec" >"$W/out.txt" 2>&1
  expect_rc $? 3
  grep -q "no incident 2" "$W/out.txt" || fail "no incident message"
  # one file cannot be read: the others are diagnosed, the verdict says it cannot tell
  printf 'NCSTRACE garbage' >"$W/rec/zz-bad.nstrace"
  "$NS" diagnose "$W/rec" >"$W/out.txt" 2>&1
  expect_rc $? 4
  grep -q "^CANNOT TELL cannot tell what the process of zz-bad.nstrace did: the file could not be read" "$W/out.txt" ||
    fail "no cannot-tell verdict for the unreadable file: $(head -5 "$W/out.txt")"
  grep -q "zz-bad.nstrace  *could not be read" "$W/out.txt" || fail "unreadable file not listed"
  grep -q "4 ranks (4 recorded)" "$W/out.txt" || fail "the readable ranks are not diagnosed"
  ! grep -q "^HANG\|^DEAD" "$W/out.txt" || fail "a verdict on the healthy ranks: $(grep '^HANG\|^DEAD' "$W/out.txt")"
  ;;
incidents)
  # incident 1: the gen skip case; incident 2, a minute later: the same dumps without rank 2's
  "$GEN" "$W/rec" skip flight || fail "generator"
  for r in 0 1 3; do
    python3 - "$W/rec/dumps/node1-100$r-1.nsflight" "$W/rec/dumps/node1-100$r-2.nsflight" <<'PYEOF' || fail "patch"
import struct, sys
b = bytearray(open(sys.argv[1], 'rb').read())
for off in (120, 128):  # dump_real, trigger_real (offsetof in ncs_flight_hdr_t)
    v, = struct.unpack_from('<Q', b, off)
    struct.pack_into('<Q', b, off, v + 60 * 10**9)
struct.pack_into('<I', b, 136, 2)  # dump_index
open(sys.argv[2], 'wb').write(b)
PYEOF
  done
  diag "$W/rec"
  expect_rc $rc 1
  py "i=r['incident']; assert i['index']==1 and i['count']==2, i
assert v['kind']=='not_entered' and v['rank']==2 and v['where']=='outside', v" "default: incident 1"
  diag "$W/rec" --incident 1
  py "assert r['incident']['index']==1" "--incident 1"
  diag "$W/rec" --latest
  expect_rc $rc 1
  py "i=r['incident']; assert i['index']==2 and i['count']==2, i
assert v['kind']=='not_entered' and v['rank']==2 and v['where']=='exited', v
assert any('no dump in incident 2' in n for n in r['notes']), r['notes']
src=sorted(p['source'] for p in r['processes']); assert src==['dump','dump','dump','live'], src" "--latest"
  grep -q "note: node1-1002 has no dump in incident 2: its live file node1-1002.nsflight is used" "$W/out.txt" ||
    fail "live-file note"
  diag "$W/rec" --incident 2
  py "assert r['incident']['index']==2" "--incident 2"
  "$NS" diagnose --incident 3 "$W/rec" >"$W/out.txt" 2>&1
  expect_rc $? 3
  grep -q "no incident 3: .* holds 2 incidents" "$W/out.txt" || fail "incident 3 message"
  ;;
heartbeat)
  # a live flight file whose header says its last heartbeat was at 2^63 ns (a hostile or broken
  # file): no overflow (UBSan), no process called dead because of it, the header time not used
  "$GEN" "$W/rec" healthy flight || fail "generator"
  python3 - "$W/rec/node1-1001.nsflight" <<'PYEOF' || fail "patch"
import struct, sys
b = bytearray(open(sys.argv[1], 'rb').read())
struct.pack_into('<Q', b, 96, 1 << 63)  # heartbeat_real (offsetof in ncs_flight_hdr_t)
open(sys.argv[1], 'wb').write(b)
PYEOF
  diag "$W/rec"
  expect_rc $rc 0
  py "assert v['kind']=='nothing_stuck' and not any(p['dead'] for p in r['processes']), r
assert any('header' in n and 'contradicts' in n for n in r['notes']), r['notes']" "hostile heartbeat"
  ;;
repro-flightdrops)
  # issue 24: a 1 MiB flight buffer under every event drops records; the job ends well (exit 0):
  # no HANG, no rank blamed (before: "rank N is stuck inside it", another rank each run)
  NCCLSCOPE_MODE=flight NCCLSCOPE_DIR="$W/rec" NCCLSCOPE_EVENTS=all NCCLSCOPE_BUFFER_SIZE=1M \
    "$SIM" --plugin "$PLUGIN" --scenario mixed --ranks 4 --iters 300 >"$W/sim.out" 2>&1 || fail "nccl-sim"
  "$NS" dump --stats "$W/rec" | grep -q "^  drops [1-9]" || { echo "diagnose check $CASE: SKIP: no drops"; exit 77; }
  diag "$W/rec"
  py "assert not [x for x in r['verdicts'] if x['kind'] in ('stuck_inside','not_entered','dead')], r['verdicts']
assert r['status'] in ('ok','cannot_tell'), r['status']" "drops: no hang"
  ;;
abi3)
  # NCCL profiler ABI v3 passes no rank, size or commId: diagnose cannot match ranks and says so
  # (before: it ran out of memory on the size -1; then "OK nothing stuck" on nothing)
  NCCLSCOPE_DIR="$W/rec" "$SIM" --plugin "$PLUGIN" --scenario mixed --abi 3 --ranks 2 --procs 2 \
    --iters 3 >"$W/sim.out" 2>&1 || fail "nccl-sim"
  diag "$W/rec"
  expect_rc $rc 4
  py "assert r['status']=='cannot_tell' and not r['problem'], r
assert r['verdicts'] and all(x['kind']=='cannot_tell' for x in r['verdicts']), r['verdicts']" "abi 3: cannot tell"
  grep -q "recorded without its ranks and size" "$W/out.txt" || fail "abi 3 text"
  ;;
nocomp)
  # issue 14: a healthy job recorded without the events that show a completion (Coll only): no
  # all-clear and no hang, but CANNOT TELL (exit 4: nothing found in what could be seen); the same
  # job with the default events is OK
  NCCLSCOPE_EVENTS=coll NCCLSCOPE_DIR="$W/rec" "$SIM" --plugin "$PLUGIN" --scenario allreduce \
    --ranks 4 --iters 10 >"$W/sim.out" 2>&1 || fail "nccl-sim"
  diag "$W/rec"
  expect_rc $rc 4
  py "assert r['status']=='cannot_tell' and not r['problem'], r
assert [x['kind'] for x in r['verdicts']]==['cannot_tell'] and r['verdicts'][0]['comm_id'], r['verdicts']" \
    "no completions: cannot tell"
  grep -q "4 ranks' newest operation has no visible completion" "$W/out.txt" || fail "nocomp text"
  rm -rf "$W/rec"
  NCCLSCOPE_DIR="$W/rec" "$SIM" --plugin "$PLUGIN" --scenario allreduce --ranks 4 --iters 10 \
    >"$W/sim.out" 2>&1 || fail "nccl-sim"
  diag "$W/rec"
  expect_rc $rc 0
  py "assert r['status']=='ok' and [x['kind'] for x in r['verdicts']]==['nothing_stuck'], r" "default: ok"
  ;;
repro-sampled-hang)
  # issue 14: a hang recorded with GPU times sampled (opt-in NCCLSCOPE_SAMPLE=64): the operations
  # of unsampled groups show no completion, so diagnose must not answer OK (before: "OK nothing
  # stuck", exit 0)
  NCCLSCOPE_SAMPLE=64 NCCLSCOPE_DIR="$W/rec" "$SIM" --plugin "$PLUGIN" --scenario allreduce --ranks 4 \
    --procs 4 --iters 20 --fault skip:2:10 --hang-s 2 >"$W/sim.out" 2>&1
  [ $? -eq 3 ] || fail "nccl-sim did not hang"
  diag "$W/rec"
  expect_rc $rc 1
  py "assert r['status']!='ok' and not [x for x in r['verdicts'] if x['kind']=='nothing_stuck'], r['verdicts']" \
    "sampled hang: no all-clear"
  grep -q "rank 2 did not enter AllReduce #10\|rank 2 never entered AllReduce #10" "$W/out.txt" ||
    fail "the rank that did not enter is not named"
  ;;
repro-kill-mixed)
  # issue 15: after a kill in a flight-mode mixed job, the dead process is the verdict in every
  # communicator; no HANG contradicts it, and every verdict names its communicator
  NCCLSCOPE_MODE=flight NCCLSCOPE_DIR="$W/rec" NCCLSCOPE_WATCHDOG_S=1 "$SIM" --plugin "$PLUGIN" \
    --scenario mixed --ranks 8 --procs 8 --iters 20 --fault kill:5:6 --hang-s 3 >"$W/sim.out" 2>&1
  diag "$W/rec"
  expect_rc $rc 1
  py "k=[x['kind'] for x in r['verdicts']]; assert k and all(x=='dead' for x in k), r['verdicts']
assert all(x['comm_id'] for x in r['verdicts']), r['verdicts']
assert all(x['rank']==5 for x in r['verdicts']), r['verdicts']" "kill: dead only, with communicators"
  ;;
*)
  fail "unknown case"
  ;;
esac
echo "diagnose check $CASE: ok"
