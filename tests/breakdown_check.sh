#!/bin/sh
# breakdown_check.sh SIM PLUGIN NCCLSCOPE WORKDIR CASE - the breakdown's bottleneck labels and
# `ncclscope diff` on nccl-sim jobs (docs/report.md "Breakdown", docs/diff.md).
# CASE: healthy | slowlink | slowgpu | slowrank | diff_same | diff_slow.
set -eu
SIM=$1 PLUGIN=$2 NCS=$3 W=$4 CASE=$5
rm -rf "$W" && mkdir -p "$W"
# --gpu-gbps: the fake GPU clock sets each kernel's time from its bytes, so a healthy run's
# latencies do not depend on the machine's load; proxy events are on (NCCLSCOPE_EVENTS=all)
run() { d=$1; shift; NCCLSCOPE_DIR="$W/$d" NCCLSCOPE_EVENTS=all "$SIM" --plugin "$PLUGIN" \
  --scenario allreduce --ranks 4 --iters 30 --gpu-gbps 0.2 "$@" >"$W/sim.out" || fail "nccl-sim $?"; }
fail() { echo "FAIL: $*"; cat "$W/out.json" 2>/dev/null | head -c 4000; exit 1; }
json() { "$NCS" report --json "$W/$1" >"$W/out.json" || fail "report exited $?"; }
py() { python3 -c "import json; r=json.load(open('$W/out.json')); L=r['breakdown']['labels']; n=sum(L.values())
B=[b['breakdown'] for b in r['buckets'] if not b['p2p']]
$1" || fail "$2"; }
case $CASE in
healthy)
  run t
  json t
  # no GPU or per-rank claim: nothing was slowed
  py "assert n==30, L; assert L['gpu_wait']==0 and L['cannot_tell']==0, L
assert all(b['wait_rank']==-1 for b in B), B; assert all(b['label']!='gpu_wait' for b in B), B" "false claim"
  "$NCS" report "$W/t" | grep -q "^Where the time goes" || fail "no breakdown section"
  # without proxy events the answer is cannot tell, with the reason
  rm -rf "$W/t"; NCCLSCOPE_DIR="$W/t" "$SIM" --plugin "$PLUGIN" --scenario allreduce --ranks 4 \
    --iters 10 >"$W/sim.out" || fail "nccl-sim"
  json t
  py "assert L['cannot_tell']==n==10, L; assert all(b['label']=='cannot_tell' and 'proxystep' in b['reason'] for b in B), B" \
     "not cannot_tell without proxystep"
  ;;
slowlink)
  run t --slow-link 1 --slow-link-us 3000
  json t
  py "assert L['network']*10>=n*8, L; assert all(b['label']=='network' for b in B), B" "not network"
  ;;
slowgpu)
  # 20 ms per receive step: the three healthy ranks' own phases (a few ms per instance, longer
  # when the host is loaded) stay far below the slow consumer's wait; with 3 ms a loaded host
  # pushed the GPU wait under half of some instances' time (mixed)
  run t --slow-gpu 3 --slow-gpu-us 20000
  json t
  # an instance whose healthy ranks' proxy threads were descheduled for long on a loaded host
  # really spent most of its recorded time elsewhere: at most a tenth of them may say so, and no
  # bucket may be labelled anything but gpu_wait (or mixed)
  py "assert L['gpu_wait']*3>=n*2, L; assert (L['network']+L['peer_wait']+L['flush'])*10<=n, L
assert all(b['label'] in ('gpu_wait','mixed') for b in B) and any(b['label']=='gpu_wait' for b in B), B" "not gpu_wait"
  ;;
slowrank)
  run t --slow-rank 2 --slow-us 10000 --couple on
  json t
  py "assert L['peer_wait']*10>=n*8, L; assert all(b['label']=='peer_wait' for b in B), B
assert all(b['wait_rank'] in (-1,2) for b in B) and any(b['wait_rank']==2 for b in B), B" "not peer_wait for rank 2"
  ;;
diff_same)
  run a; run b
  "$NCS" diff --json "$W/a" "$W/b" >"$W/out.json"; rc=$?
  [ $rc -eq 0 ] || fail "diff of same-seed runs exited $rc"
  python3 -c "import json; d=json.load(open('$W/out.json')); assert d['regressions']==0, d
assert all(b['verdict'] in ('no_change','too_few') for b in d['buckets']), d['buckets']
assert any(b['verdict']=='no_change' for b in d['buckets']), d['buckets']
assert not d['findings'], d['findings']" || fail "same-seed diff found a change"
  ;;
diff_slow)
  run a; run b --slow-link 1 --slow-link-us 3000
  set +e; "$NCS" diff --json --fail-above 50 "$W/a" "$W/b" >"$W/out.json"; rc=$?; set -e
  [ $rc -eq 1 ] || fail "diff against a slowed run exited $rc, not 1"
  python3 -c "import json; d=json.load(open('$W/out.json')); assert d['regressions']>=1, d
s=[b for b in d['buckets'] if b['verdict']=='slower']; assert s, d['buckets']
assert all(b['latency_ci'][0]>50 for b in s if b['regression']), s
assert any(b['label_changed'] and b['label_b']=='network' for b in d['buckets']), d['buckets']
assert any(f['change']=='new' and f['rank']==1 for f in d['findings']), d['findings']" || fail "slowed diff"
  "$NCS" diff "$W/a" "$W/b" | grep -q "REGRESSION" || fail "text has no REGRESSION"
  "$NCS" diff "$W/a" >/dev/null 2>&1 && fail "one argument accepted"; [ $? -eq 2 ] || fail "usage status"
  ;;
esac
echo PASS
