#!/bin/sh
# diagnose_check.sh NCCLSCOPE GEN SIM PLUGIN WORKDIR CASE - `ncclscope diagnose` (docs/diagnose.md).
# Prints "diagnose check CASE: ok" on success. CASE:
#   gen-KIND-MODE   crafted recordings (tests/diagnose_gen.c): KIND healthy skip stall mismatch kill
#                   gone (trace only: a killed process that wrote no operation; issue 32)
#                   kernel (KernelCh only: cannot tell) nokernel (one rank's kernel never started) p2p, lost (a stall whose rank dropped records: cannot tell), orphan (a
#                   completion lost, later ones complete: not a hang), cupti (the stall with CUPTI:
#                   its evidence for and against); MODE trace or flight (dumps
#                   of one incident + live files)
#   sim-KIND-MODE   nccl-sim --fault KIND with the plugin: 4 ranks in 4 processes; MODE flight
#                   (NCCLSCOPE_WATCHDOG_S=1: the watchdog makes every process dump) or trace;
#                   KIND healthy: no fault; neverstop: that scenario, healthy (no false hang)
#   sweep-MODE-EV   issue 31: nccl-sim --fault stall on rank positions 0-3 or 4-7 (8 ranks), MODE
#                   trace or flight, EV default or all (bench/diagnose_rate.sh): the right rank or,
#                   with the default events, CANNOT TELL; never a wrong rank, never nothing
#   usage           exit statuses for bad command lines (2) and unreadable input (3)
#   incidents       two incidents of dumps: the first by default, --latest, --incident N
#   heartbeat       a flight header with a heartbeat at 2^63 ns
#   repro-NAME      the reproducers of issues 14, 15, 24, 32 with nccl-sim (see each case)
#   filter-comm     --comm: a hang in one of two communicators; the other judged alone is OK
#   filter-rank     --rank: the cause of a hang outside the list is named as such
#   filter-to       --to: before a hang began no HANG, well after it HANG; flight refused
#   filter-healthy  --to: a healthy job with a straggler, cut mid-run at several times: no HANG
#   filter-from     --from: a desync before the time is not checked, after it is
#   filter-range    --range, --tag: the span of a step or tag before a hang is OK, the one the
#                   hang is in is HANG; a desync in a later step is not seen from an earlier one;
#                   with --from/--to, an unknown name or an empty selection: 2; flight: said
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
  "$NS" diagnose --wide "$@" "$d" >"$W/out.txt" 2>&1
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
    grep -q "^HANG   every rank of communicator c[0-9]* 0x[0-9a-f]* entered .* rank $3 is stuck inside it: send step [0-9]* on channel [0-9]* to rank [0-9]* in Send" \
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
  gone)
    # issue 32: its records are missing (peers completed collectives it has no record of): DEAD or
    # CANNOT TELL, never "never entered ... outside NCCL"
    py "assert v['kind'] in ('cannot_tell','dead') and v['rank']==$3, v
assert r['status'] in ('cannot_tell','dead'), r['status']
assert not [x for x in r['verdicts'] if x['kind'] in ('not_entered','stuck_inside')], r['verdicts']" "gone: rank $3's records are missing"
    grep -q "rank $3 recorded no AllReduce, yet rank [013] completed AllReduce #4, which needs every rank" "$W/out.txt" ||
      fail "gone: the proof of missing records is not said"
    ! grep -q "^HANG" "$W/out.txt" || fail "gone: a HANG verdict: $(grep '^HANG' "$W/out.txt")"
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
    # KernelCh only, every rank's kernel started (the stalled rank's last): nothing singles out a
    # rank, so no rank may be named; the verdict says what to record to tell
    expect_rc $rc 1
    py "assert v['kind']=='cannot_tell' and v['rank']==-1 and r['status']=='cannot_tell' and r['problem'], v
assert v['func']=='AllReduce' and v['seq']==5, v
assert not [x for x in r['verdicts'] if x['kind'] in ('stuck_inside','not_entered')], r['verdicts']" "kernel: cannot tell"
    grep -q "^CANNOT TELL cannot tell which rank communicator c0 0x[0-9a-f]* waits for: every rank entered AllReduce #5 and none completed it; the kernels' start order singles out no rank: to tell, record the proxy steps (\`ncclscope record --events all\`)" \
      "$W/out.txt" || fail "kernel text"
    grep -q "the kernels started within 2.99 ms of each other (rank 0 first, rank 1 last): the order in which the ranks arrived" \
      "$W/out.txt" || fail "kernel: start order evidence"
    ;;
  nokernel)
    # KernelCh only; the stalled rank entered, but its kernel never started while the others' did
    expect_rc $rc 1
    py "assert v['kind']=='stuck_inside' and v['rank']==$3 and r['status']=='hang' and v['state']=='no_kernel', v" "nokernel: rank $3"
    grep -q "^HANG   every rank of communicator c0 0x[0-9a-f]* entered AllReduce #5; rank $3 is stuck inside it, no progress for [^(]*(its kernel never started while every other rank's did" \
      "$W/out.txt" || fail "nokernel text"
    grep -q "^ *- rank $3 (node1-100$3): last progress .*; its kernel never started" "$W/out.txt" || fail "nokernel evidence"
    ;;
  lost)
    # the stalled rank's plugin dropped records after the hung operation started: which rank
    # the others wait for cannot be told; no HANG may name anyone
    expect_rc $rc 1
    py "assert v['kind']=='cannot_tell' and v['rank']==$3 and r['status']=='cannot_tell', v
assert not [x for x in r['verdicts'] if x['kind'] in ('stuck_inside','not_entered','nothing_stuck')], r['verdicts']
assert all(x['comm_id'] for x in r['verdicts']), r['verdicts']" "lost: cannot tell, rank $3"
    grep -q "^CANNOT TELL cannot tell which rank communicator c[0-9]* 0x[0-9a-f]* waits for" "$W/out.txt" || fail "lost text"
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
  case $kind in skip | kill | gone) fr=2 ;; stall | kernel | nokernel | lost | cupti) fr=1 ;; mismatch) fr=3 ;; *) fr=-1 ;; esac
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
sweep-*)
  # issue 31: a stall inside NCCL (nccl-sim --fault stall:R:10, 8 ranks in 8 processes, model
  # time) on every rank position, through bench/diagnose_rate.sh. With the default events the
  # verdict names R or is CANNOT TELL saying what to record; with --events all it names R. Never
  # another rank, never nothing. Each (mode, events) runs half the positions, so that every
  # position is run in both modes and with both event sets; the bench runs them all.
  set -- ${CASE#sweep-}
  mode=${1%-*} ev=${1#*-}
  case $mode-$ev in trace-default | flight-all) pos="0 1 2 3" ;; *) pos="4 5 6 7" ;; esac
  here=$(cd "$(dirname "$0")" && pwd)
  bdir=$(dirname "$NS")
  SCENARIOS=allreduce MODES=$mode EVENTS=$ev POSITIONS=$pos VERBOSE=1 \
    bash "$here/../bench/diagnose_rate.sh" "$bdir" >"$W/out.txt" 2>&1 || fail "diagnose_rate.sh failed"
  line=$(grep "^diagnose_rate: new allreduce $mode $ev runs=" "$W/out.txt") || fail "no result line"
  echo "$line"
  case $line in *" runs=4 "*" wrong=0 missed=0") ;; *) fail "a wrong culprit or a missed hang: $line" ;; esac
  if [ "$ev" = all ]; then
    case $line in *" correct=4 "*) ;; *) fail "--events all: not every stall named: $line" ;; esac
  else
    # a CANNOT TELL says why and what to record
    grep "^job new .*: cannot_tell: " "$W/out.txt" | grep -v "none completed it; .*: to tell, record the proxy steps (\`ncclscope record --events all\`)" &&
      fail "a CANNOT TELL that does not say what to record"
  fi
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
  for o in --comm --rank --from --to --range; do grep -q -- "^ *$o[ ,]" "$W/out.txt" || fail "help: no $o"; done
  # the filters: bad values (the range and tag selections: case filter-range)
  for a in "--comm c4x" "--comm 0xzz" "--rank x" "--rank 3-1" "--to 1h" "--from -1" "--from 2 --to 1" \
           "--range step:0" "--range step:3-1" "--tag x" "--tag 5-2"; do
    "$NS" diagnose $a "$W/empty" >"$W/out.txt" 2>&1
    expect_rc $? 2
  done
  "$NS" diagnose --range step "$W/empty" >"$W/out.txt" 2>&1
  expect_rc $? 3
  "$GEN" "$W/rec" healthy trace || fail "generator"
  "$NS" diagnose --incident 2 "$W/rec" >"$W/out.txt" 2>&1
  expect_rc $? 3
  grep -q "no incident 2" "$W/out.txt" || fail "no incident message"
  # one file cannot be read: the others are diagnosed, the verdict says it cannot tell
  printf 'NCSTRACE garbage' >"$W/rec/zz-bad.nstrace"
  "$NS" diagnose --wide "$W/rec" >"$W/out.txt" 2>&1
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
repro-cut-first)
  # issue 32: a healthy job in 2 processes, the second's file cut before its first EVENTS chunk
  # (the process died before it wrote any): the other ranks completed everything, so the verdict
  # is CANNOT TELL about the missing records, with no rank waiting (4); none of their completions
  # is taken back as impossible (the cut file proves nothing). The whole recording: OK (0).
  # Rank 0 pauses 2 s once (--pause), so the cut file's records always end more than the dead
  # rule's 1.5 s before the other process's clean end, whatever the machine's load: the peers'
  # completions after that prove the process lived on, so it is not called dead.
  NCCLSCOPE_DIR="$W/rec" "$SIM" --plugin "$PLUGIN" --scenario mixed --ranks 4 --procs 2 --iters 30 --pause 0:20:2000 \
    >"$W/sim.out" 2>&1 || fail "nccl-sim: $(tail -2 "$W/sim.out")"
  diag "$W/rec"
  expect_rc $rc 0
  py "assert r['status']=='ok' and [x['kind'] for x in r['verdicts']]==['nothing_stuck'], r['verdicts']" "whole: OK"
  DMG=$(dirname "$GEN")/ncs-damage
  f=$(ls "$W/rec"/*.nstrace | sed -n 2p)
  k=$("$DMG" "$f" list | awk '$3 == 7 { print $2; exit }')
  [ -n "$k" ] || fail "no EVENTS chunk in $f"
  "$DMG" "$f" "$W/cut" cut "$k" && mv "$W/cut" "$f" || fail "ncs-damage"
  diag "$W/rec"
  expect_rc $rc 4
  py "k=[x['kind'] for x in r['verdicts']]; assert k and all(x=='cannot_tell' for x in k), r['verdicts']
assert not r['problem'], r['verdicts']" "cut: cannot tell, no one waits"
  grep -q "records are missing" "$W/out.txt" || fail "cut: the missing records not said"
  grep -q "it was alive .* after its recording ends" "$W/out.txt" || fail "cut: its life after its records not said"
  ! grep -q "^DEAD" "$W/out.txt" || fail "cut: called dead"
  ! grep -q "taken back" "$W/out.txt" || fail "cut: completions taken back"
  ;;
filter-comm)
  # two communicators; rank 2 skips AllReduce #10 of the first one: the second stays healthy
  NCCLSCOPE_DIR="$W/rec" "$SIM" --plugin "$PLUGIN" --scenario allreduce --ranks 4 --procs 4 --comms 2 \
    --iters 40 --fault skip:2:10 --hang-s 2 >"$W/sim.txt" 2>&1
  [ $? -eq 3 ] || fail "nccl-sim did not hang: $(tail -2 "$W/sim.txt")"
  diag "$W/rec"
  expect_rc $rc 1
  py "assert v['kind']=='not_entered' and v['rank']==2 and r['filter'] is None, v
assert len(r['communicators'])==2 and r['communicators'][0]['stuck'], r['communicators']
assert r['communicators'][1]['stuck'] is None" "unfiltered: the hang in the first communicator"
  c0=$(python3 -c "import json; print(json.load(open('$W/out.json'))['communicators'][0]['comm_id'])")
  c1=$(python3 -c "import json; print(json.load(open('$W/out.json'))['communicators'][1]['comm_id'])")
  # the healthy communicator alone: OK (exit 0), the hung one listed as not judged
  diag "$W/rec" --comm "$c1"
  expect_rc $rc 0
  py "assert r['status']=='ok' and not r['problem'] and [x['kind'] for x in r['verdicts']]==['nothing_stuck'], r['verdicts']
f=r['filter']; assert f['comm_id']=='$c1' and f['comms_not_judged']==1, f
assert [x['comm_id'] for x in f['not_judged']]==['$c0'] and f['not_judged'][0]['nranks']==4, f
assert [c['comm_id'] for c in r['communicators']]==['$c1'], r['communicators']
assert all(x['comm_id'] in (None,'$c1') for x in r['verdicts']), r['verdicts']" "--comm healthy one"
  grep -q "^  --comm: 1 communicator not judged: c0 $c0 \"sim-comm-0\" (4 ranks)" "$W/out.txt" || fail "not-judged line"
  grep -q "^  note: not everything was judged: a hang or desync outside the filter is not shown" "$W/out.txt" ||
    fail "no note that a hang outside the filter is not shown"
  ! grep -q "^HANG\|^communicator c[0-9]* $c0" "$W/out.txt" || fail "the communicator left out is judged or shown"
  # the hung one alone: the same hang, the other listed as not judged
  diag "$W/rec" --comm "$c0"
  expect_rc $rc 1
  py "assert v['kind']=='not_entered' and v['rank']==2 and v['comm_id']=='$c0', v
assert r['filter']['comms_not_judged']==1 and r['filter']['not_judged'][0]['comm_id']=='$c1', r['filter']
assert [c['comm_id'] for c in r['communicators']]==['$c0']" "--comm hung one"
  # a commId the recordings do not hold: usage error, naming the ones they hold
  "$NS" diagnose --comm 0x00000000deadbeef "$W/rec" >"$W/out.txt" 2>&1
  expect_rc $? 2
  grep -q "no such communicator in the job (c0 $c0, c1 $c1)" "$W/out.txt" || fail "unknown comm message"
  # a label or an index names the same communicator as its commId
  for l in c0 0; do
    diag "$W/rec" --comm "$l"
    expect_rc $rc 1
    py "assert r['filter']['comm_id']=='$c0' and [c['comm_id'] for c in r['communicators']]==['$c0']" "--comm $l"
  done
  # a dead process is reported whatever --comm says: rank 2's process is killed before AllReduce #10
  # of the first communicator; the second one, judged alone, still gets the DEAD verdict
  rm -rf "$W/kill"
  NCCLSCOPE_DIR="$W/kill" "$SIM" --plugin "$PLUGIN" --scenario allreduce --ranks 4 --procs 4 --comms 2 \
    --iters 40 --fault kill:2:10 --hang-s 2 >"$W/sim.txt" 2>&1
  [ $? -eq 3 ] || fail "nccl-sim (kill) did not hang: $(tail -2 "$W/sim.txt")"
  diag "$W/kill" --comm "$c1"
  expect_rc $rc 1
  py "assert r['status']=='dead' and v['kind']=='dead' and v['rank']==2 and v['comm_id']=='$c1', v
assert r['filter']['comms_not_judged']==1" "--comm: a dead process is still reported"
  ;;
filter-rank)
  NCCLSCOPE_DIR="$W/rec" "$SIM" --plugin "$PLUGIN" --scenario allreduce --ranks 4 --procs 4 --iters 20 \
    --fault skip:2:10 --hang-s 2 >"$W/sim.txt" 2>&1
  [ $? -eq 3 ] || fail "nccl-sim did not hang: $(tail -2 "$W/sim.txt")"
  # the cause, rank 2, is outside the list: judged all the same, and said so
  diag "$W/rec" --rank 0,1
  expect_rc $rc 1
  py "assert v['kind']=='not_entered' and v['rank']==2 and v['outside_filter']==[2], v
c=r['communicators'][0]; assert [x['rank'] for x in c['ranks']]==[0,1] and c['ranks_left_out']==2, c
assert r['filter']['ranks']==[0,1] and r['filter']['ranks_left_out']==2, r['filter']" "--rank 0,1"
  grep -q "^HANG   rank 2 never entered AllReduce #10" "$W/out.txt" || fail "--rank: the hang is not the same"
  grep -q "^         - rank 2, named by this verdict, is outside --rank 0-1: judged from every rank, it is not in the tables below" \
    "$W/out.txt" || fail "--rank: the cause outside the list is not said"
  grep -q "^  --rank 0-1: verdicts are judged from every rank; the tables show these ranks only (2 rows left out)" \
    "$W/out.txt" || fail "--rank header"
  ! grep -q "^  [23]  " "$W/out.txt" || fail "--rank: rows of ranks 2,3 shown"
  grep -q "^  0  .*waiting" "$W/out.txt" && grep -q "^  1  .*waiting" "$W/out.txt" || fail "--rank: rows 0,1 missing"
  # no false "outside": a list with the cause in it
  diag "$W/rec" --rank 1-2
  expect_rc $rc 1
  py "assert v['kind']=='not_entered' and v['rank']==2 and v['outside_filter']==[], v
assert all(not x['outside_filter'] for x in r['verdicts']), r['verdicts']
assert [x['rank'] for x in r['communicators'][0]['ranks']]==[1,2]" "--rank 1-2"
  ! grep -q "outside --rank" "$W/out.txt" || fail "--rank 1-2: a rank in the list called outside"
  "$NS" diagnose --rank 9 "$W/rec" >"$W/out.txt" 2>&1
  expect_rc $? 2
  grep -q -- "--rank: no communicator has such a rank" "$W/out.txt" || fail "--rank 9 message"
  ;;
filter-to)
  # rank 0 spends 0.1 s before each collective, so AllReduce #10, which rank 2 skips, is entered
  # no earlier than 0.9 s after the job's first event; the hang lasts 3 s. Model time (--clock
  # model): those times are the model's, however the machine ran the job
  NCCLSCOPE_EVENTS=default,proxy NCCLSCOPE_DIR="$W/rec" "$SIM" --plugin "$PLUGIN" --clock model --scenario allreduce --ranks 4 \
    --procs 4 --iters 20 --slow-rank 0 --slow-us 100000 --fault skip:2:10 --hang-s 3 >"$W/sim.txt" 2>&1
  [ $? -eq 3 ] || fail "nccl-sim did not hang: $(tail -2 "$W/sim.txt")"
  wall=$("$NS" report --json "$W/rec" 2>/dev/null | python3 -c "import json,sys; print(json.load(sys.stdin)['wall_ns'])") ||
    fail "report --json: no wall_ns"
  # before the hang began: operations in flight, nothing stuck
  for t in 0.2 0.5; do
    diag "$W/rec" --to $t
    expect_rc $rc 0
    py "assert r['status']=='ok' and v['kind']=='nothing_stuck', r['verdicts']
assert r['filter']['to_ns']==int($t*1e9) and not r['filter']['cut_past_end'], r['filter']" "--to $t: before the hang"
    grep -q "^OK     nothing stuck at the --to time" "$W/out.txt" || fail "--to $t: OK text"
    grep -q "^  --to .*: the job as it was at .* UTC, .* after its first event: records after it are ignored" \
      "$W/out.txt" || fail "--to $t: the cut is not said"
  done
  # a second before the end: rank 2 was outside NCCL (alive; it exits only at the abort, after the
  # cut) while ranks 0,1,3 had waited about 2 s in AllReduce #10
  late=$(python3 -c "print(($wall - 1000000000) / 1e9)")
  diag "$W/rec" --to "$late"
  expect_rc $rc 1
  py "assert r['status']=='hang' and v['kind']=='not_entered' and v['rank']==2 and v['seq']==10, v
assert v['where']=='outside', v['where']
assert [p['state'] for p in r['processes']]==['trace_cut']*4, r['processes']" "--to $late: the hang"
  grep -q "its process is alive (its trace goes on after the --to time)" "$W/out.txt" || fail "--to: alive at the cut"
  # --from leaves hang judgement alone
  diag "$W/rec" --from "$late"
  expect_rc $rc 1
  py "assert v['kind']=='not_entered' and v['rank']==2" "--from: hang judged whatever its time"
  # past the end: the whole recording, as without --to
  diag "$W/rec" --to 1000
  expect_rc $rc 1
  py "assert r['filter']['cut_past_end'] and v['kind']=='not_entered' and v['where'] in ('exited','outside'), v
assert 'trace_cut' not in [p['state'] for p in r['processes']], r['processes']" "--to past the end"
  grep -q "at or after the end of every recording: the whole recording is judged" "$W/out.txt" || fail "past-end text"
  # flight recordings keep only their last operations: --to is refused
  "$GEN" "$W/fl" skip flight || fail "generator"
  "$NS" diagnose --to 1 "$W/fl" >"$W/out.txt" 2>&1
  expect_rc $? 2
  grep -q -- "--to judges the job as it was at an earlier time, which needs full traces" "$W/out.txt" || fail "flight refusal"
  "$NS" diagnose --from 0.001 "$W/fl" >"$W/out.txt" 2>&1
  expect_rc $? 1
  ;;
filter-healthy)
  # A healthy job whose rank 2 spends 0.8 s before each collective: the others wait for it in
  # every collective (coupled), without progress for longer than a hang needs. Cut at any time,
  # those waits are in progress (the recording shows them completing): never HANG. Model time.
  NCCLSCOPE_EVENTS=default,proxy NCCLSCOPE_DIR="$W/rec" "$SIM" --plugin "$PLUGIN" --clock model --scenario allreduce --ranks 4 \
    --procs 4 --iters 4 --couple on --slow-rank 2 --slow-us 800000 >"$W/sim.txt" 2>&1 || fail "nccl-sim: $(tail -2 "$W/sim.txt")"
  wall=$("$NS" report --json "$W/rec" 2>/dev/null | python3 -c "import json,sys; print(json.load(sys.stdin)['wall_ns'])") ||
    fail "report --json: no wall_ns"
  diag "$W/rec"
  expect_rc $rc 0
  waits=0
  for pct in 10 25 40 55 70 85 95; do
    t=$(python3 -c "print($wall * $pct / 100 / 1e9)")
    diag "$W/rec" --to "$t"
    [ $rc -eq 0 ] || fail "--to $t ($pct% of the run): exit $rc"
    py "assert r['status']=='ok' and not r['problem'], r['verdicts']
assert not [x for x in r['verdicts'] if x['kind'] in ('stuck_inside','not_entered','dead','cannot_tell')], r['verdicts']
assert r['filter']['to_ns'] and not r['filter']['cut_past_end'], r['filter']" "--to $t ($pct%): no hang"
    ! grep -q "^HANG\|^CANNOT" "$W/out.txt" || fail "--to $t: $(grep '^HANG\|^CANNOT' "$W/out.txt")"
    n=$(python3 -c "import json; print(json.load(open('$W/out.json'))['filter']['later_completed'])")
    [ "$n" -gt 0 ] && waits=$((waits + 1))
  done
  # the rule was needed: at some cuts operations had waited longer than a hang needs
  [ $waits -gt 0 ] || fail "no cut saw an operation wait longer than a hang needs: the test proves nothing"
  grep -q "completed later in the recording: in progress, not stuck" "$W/out.txt" || fail "later-completed evidence"
  ;;
filter-from)
  # rank 3 calls AllReduce #10 with twice the count; rank 0 spends 0.1 s before each collective,
  # so #10 is entered no earlier than 0.9 s after the first event, about half way through the run
  # (model time)
  NCCLSCOPE_DIR="$W/rec" "$SIM" --plugin "$PLUGIN" --clock model --scenario allreduce --ranks 4 --procs 4 --iters 20 \
    --slow-rank 0 --slow-us 100000 --fault mismatch:3:10 >"$W/sim.txt" 2>&1 || fail "nccl-sim: $(tail -2 "$W/sim.txt")"
  wall=$("$NS" report --json "$W/rec" 2>/dev/null | python3 -c "import json,sys; print(json.load(sys.stdin)['wall_ns'])") ||
    fail "report --json: no wall_ns"
  diag "$W/rec" --from 0.5
  expect_rc $rc 1
  py "assert r['status']=='desync' and v['kind']=='mismatch' and v['rank']==3 and v['seq']==10, v
n=r['filter']['collectives_not_checked']; assert 1<=n<=10, n" "--from 0.5: the desync after it"
  after=$(python3 -c "print($wall * 0.85 / 1e9)")
  diag "$W/rec" --from "$after"
  expect_rc $rc 0
  py "assert r['status']=='ok' and [x['kind'] for x in r['verdicts']]==['nothing_stuck'], r['verdicts']
assert r['filter']['collectives_not_checked']>=11, r['filter']" "--from $after: the desync before it not checked"
  grep -q "^  --from .*: mismatched collectives (desync) are looked for only among those entered from .* after the job's first event on ([0-9]* collectives entered before it not checked)" \
    "$W/out.txt" || fail "--from text"
  grep -q "^  note: not everything was judged" "$W/out.txt" || fail "--from: no note"
  ! grep -q "^DESYNC" "$W/out.txt" || fail "--from: a desync before it reported"
  ;;
filter-range)
  # nccl-sim runs iteration i inside user range "step" (the (i+1)-th on its thread) with userTag
  # 1 + i/5; rank 2 skips AllReduce #10 (the 11th step, tag 3), the others hang there for 2 s
  NCCLSCOPE_EVENTS=default,proxy NCCLSCOPE_DIR="$W/rec" "$SIM" --plugin "$PLUGIN" --scenario allreduce --ranks 4 \
    --procs 4 --iters 20 --ranges --user-tags 5 --fault skip:2:10 --hang-s 2 >"$W/sim.txt" 2>&1
  [ $? -eq 3 ] || fail "nccl-sim did not hang: $(tail -2 "$W/sim.txt")"
  # steps and tags that completed before the hang: judged as at their end, nothing stuck
  for sel in "--range step:3" "--range step:1-10" "--tag 1" "--tag 1-2" "--range step:7 --tag 2"; do
    # shellcheck disable=SC2086
    diag "$W/rec" $sel
    expect_rc $rc 0
    py "f=r['filter']
assert r['status']=='ok' and [x['kind'] for x in r['verdicts']]==['nothing_stuck'], r['verdicts']
assert f['window_open'] is None and f['to_ns'] is not None and f['selected_open']==0, f
n={'--range step:3':4,'--range step:1-10':40,'--tag 1':20,'--tag 1-2':40,'--range step:7 --tag 2':4}['$sel']
assert f['selected_ops']==n, (f['selected_ops'], n)" "$sel: before the hang"
    grep -q "^  --[a-z, -]*: the window is the span of the [0-9]* operations selected, from .* to .* (the latest completion among them, and 1 ms)" \
      "$W/out.txt" || fail "$sel: the window is not said"
    grep -q "^  window end .*: the job as it was at" "$W/out.txt" || fail "$sel: the cut is not said"
    ! grep -q "^HANG" "$W/out.txt" || fail "$sel: HANG before the hang began"
  done
  # the step and tag the hang is in, and every step: the whole recording, HANG
  for sel in "--range step:11" "--range step" "--tag 3" "--range step:11-12"; do
    # shellcheck disable=SC2086
    diag "$W/rec" $sel
    expect_rc $rc 1
    py "f=r['filter']
assert r['status']=='hang' and v['kind']=='not_entered' and v['rank']==2 and v['seq']==10, v
assert f['window_open']=='operations_open' and f['to_ns'] is None and f['selected_open']>=1, f" "$sel: the hang"
    grep -q "never completed, lack a rank or lack their partner, so the whole recording is judged" "$W/out.txt" ||
      fail "$sel: why the window has no end is not said"
  done
  # usage errors
  for bad in "--range step:3 --to 1|the time window is the span of the operations selected" \
             "--tag 1 --from 0.1|the time window is the span" \
             "--range optimizer|no NCCL operation of the recordings was selected" \
             "--range nosuch|no user range of that name" "--tag 9|user tag"; do
    args=${bad%%|*} msg=${bad#*|}
    # shellcheck disable=SC2086
    "$NS" diagnose $args "$W/rec" >"$W/out.txt" 2>&1
    expect_rc $? 2
    grep -q -- "$msg" "$W/out.txt" || fail "$args: does not say '$msg'"
  done
  # a desync in step 11 (rank 3 calls AllReduce #10 with twice the count): seen from step 11, not
  # from step 5, which ended before it
  NCCLSCOPE_DIR="$W/mm" "$SIM" --plugin "$PLUGIN" --scenario allreduce --ranks 4 --procs 4 --iters 20 \
    --ranges --fault mismatch:3:10 >"$W/sim.txt" 2>&1 || fail "nccl-sim: $(tail -2 "$W/sim.txt")"
  diag "$W/mm" --range step:11
  expect_rc $rc 1
  py "assert r['status']=='desync' and v['kind']=='mismatch' and v['rank']==3 and v['seq']==10, v" "step:11: the desync"
  diag "$W/mm" --range step:5
  expect_rc $rc 0
  py "assert r['status']=='ok', r['verdicts']" "step:5: no desync"
  ! grep -q "^DESYNC" "$W/out.txt" || fail "step:5: a desync after it reported"
  # flight recordings keep only their last operations: the window has no end, and it says so
  # (coupled, as NCCL's ranks are: an uncoupled rank completes before its peers entered, which
  # the model rejects, docs/diagnose.md "Completions that cannot be true")
  NCCLSCOPE_MODE=flight NCCLSCOPE_DIR="$W/fl" "$SIM" --plugin "$PLUGIN" --couple on --scenario allreduce --ranks 4 --procs 4 \
    --iters 20 --ranges >"$W/sim.txt" 2>&1 || fail "nccl-sim flight: $(tail -2 "$W/sim.txt")"
  diag "$W/fl" --range step:3
  expect_rc $rc 0
  py "f=r['filter']
assert r['status']=='ok' and f['window_open']=='flight' and f['to_ns'] is None, f" "flight: --range step:3"
  grep -q "the job as it was when the span ended cannot be rebuilt" "$W/out.txt" || fail "flight: not said"
  ;;
*)
  fail "unknown case"
  ;;
esac
echo "diagnose check $CASE: ok"
