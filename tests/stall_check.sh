#!/bin/sh
# stall_check.sh SIM PLUGIN NCCLSCOPE WORKDIR CASE SIZE - the report's stall findings and their
# sizes (docs/report.md, "Findings") on nccl-sim jobs of SIZE (RANKSxPROCS, --scenario allreduce
# --iters 100 --couple on) in model time (--clock model): every time is the model's, so each
# verdict is the same on an idle and on a loaded machine (docs/testing.md).
#   positions: each rank in turn pauses 20 ms once (--pause R:50:20): the report's largest stall is
#              that rank's, before collective 50 or the one after, measured GPU-side, 15 to 21 ms
#              each for the others, a headline; no headline names another rank
#   mixed:     the same in --scenario mixed (2 communicators, --iters 50, --pause R:25:20): the
#              ranks waiting for R on one communicator start their next kernel on the other late,
#              a knock-on that must not be named as another rank's stall
#   host:      the same with no GPU times recorded (NCCLSCOPE_EVENTS=api,group,coll): the stall is
#              found host-side and says so
#   minor:     a 2 ms pause in a job of 1000 collectives (about 80 ms): a stall, GPU-side, minor
#              (under NCS_FIND_MATERIAL of the job), and no headline at all
#   healthy:   10 seeds of allreduce and 3 of mixed: no stall and no headline
# Each case also checks that the SQLite export's findings table says what report --json says.
set -eu
SIM=$1 PLUGIN=$2 NCS=$3 W=$4 CASE=$5 SIZE=$6
R=${SIZE%x*} P=${SIZE#*x}
rm -rf "$W" && mkdir -p "$W"
. "$(dirname "$0")/findings_lib.sh"
py() { python3 -c "import json; r=json.load(open('$W/r.json')); heads=[x for x in r['findings'] if x['headline']]
$1" || fail "$2"; }
# stalled RANK SIDE: the largest stall is RANK's before collective 50 (or 51: a group's second
# half), 15 to 21 ms each, measured on SIDE, a headline, and no headline names another rank
stalled() {
  py "s=r['stalls'][0] if r['stalls'] else None
assert s and s['rank']==$1 and s['seq'] in (50, 51) and s['wait_side']=='$2', r['stalls'][:3]
assert 15e6 <= s['wait_ns'] <= 21e6 and s['headline'] and s['others']==$R-1, s
assert s['caused_ns'] >= s['wait_ns'] * ($R - 1) - ($R - 1), s
assert heads and all(x['rank']==$1 for x in heads), [x['text'] for x in heads]
assert any(x['kind']=='stall' and x['wait_side']=='$2' for x in heads), heads" \
    "rank $1's 20 ms pause is not the only headline, $2-side ($SIZE)"
  grep -q "^  - stall: rank $1 (pid [0-9]*) held up AllReduce seq 5[01] " "$W/r.txt" || fail "no text stall finding for rank $1"
  sq_same
}
case $CASE in
positions)
  for r in $(seq 0 $((R - 1))); do
    job allreduce 100 1 --pause "$r:50:20"
    stalled "$r" gpu
  done
  ;;
mixed)
  for r in $(seq 0 $((R - 1))); do
    job mixed 50 2 --pause "$r:25:20"
    py "s=[x for x in r['stalls'] if x['knock_on_of'] < 0]
assert s and s[0]['rank']==$r and s[0]['headline'] and 15e6 <= s[0]['wait_ns'] <= 21e6, r['stalls']
assert heads and all(x['rank']==$r for x in heads), [x['text'] for x in heads]
assert all(x['knock_on_of'] < 0 or r['stalls'][x['knock_on_of']]['rank']==$r for x in r['stalls']), r['stalls']" \
      "rank $r's 20 ms pause in a mixed job is not the only culprit ($SIZE)"
  done
  ;;
host)
  for r in 0 $((R - 1)); do
    NCCLSCOPE_EVENTS=api,group,coll job allreduce 100 2 --pause "$r:50:20"
    py "assert r['coverage']['timing']['kernel_gpu']==0, r['coverage']['timing']" "GPU times recorded"
    stalled "$r" host
    grep -q "host-side" "$W/r.txt" || fail "the text does not say host-side"
  done
  ;;
minor)
  job allreduce 1000 1 --pause 2:500:2
  py "s=r['stalls'][0] if r['stalls'] else None
assert s and s['rank']==2 and s['seq'] in (500, 501) and s['rule']=='outlier' and s['wait_side']=='gpu', r['stalls']
assert 1e6 <= s['wait_ns'] <= 2.1e6 and not s['headline'] and s['size_share'] < r['material_share'], s
assert not heads, [x['text'] for x in heads]
assert r['no_finding'].startswith('nothing stands out;') and 'minor' in r['no_finding'], r['no_finding']
m=[x for x in r['findings'] if x['kind']=='stall' and not x['headline']]
assert m and m[0]['rank']==2 and m[0]['size_ns']==s['wait_ns'], m" "a 2 ms pause is not a minor stall ($SIZE)"
  grep -q "^Minor findings" "$W/r.txt" || fail "no Minor findings section"
  sq_same
  ;;
healthy)
  for seed in $(seq 1 10); do
    job allreduce 100 "$seed"
    py "assert not r['stalls'] and not heads, (r['stalls'], [x['text'] for x in heads])" \
      "a stall or headline on healthy job $SIZE seed $seed"
    [ "$seed" != 1 ] || sq_same
  done
  for seed in 1 2 3; do
    job mixed 50 "$seed"
    py "assert not r['stalls'] and not heads, (r['stalls'], [x['text'] for x in heads])" \
      "a stall or headline on healthy mixed job $SIZE seed $seed"
  done
  ;;
*)
  fail "unknown case $CASE"
  ;;
esac
echo "stall check $CASE $SIZE: ok"
