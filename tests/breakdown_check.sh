#!/bin/sh
# breakdown_check.sh SIM PLUGIN NCCLSCOPE WORKDIR CASE - the breakdown's bottleneck labels and
# `ncclscope diff` on nccl-sim jobs (docs/report.md "Breakdown", docs/diff.md).
# CASE: healthy | slowlink | slowgpu | slowrank | queue | diff_same | diff_slow | diff_straggler |
#   diff_seeds | outputs.
#   outputs: SQLite (breakdown, links, net_qps, buckets.bd_*), the timeline's job slices and the
#   HTML page state the report's breakdown and labels, with and without proxy steps.
set -eu
SIM=$1 PLUGIN=$2 NCS=$3 W=$4 CASE=$5
rm -rf "$W" && mkdir -p "$W"
# --clock model: every time in the recording comes from nccl-sim's model (docs/nccl-sim.md "Model
# time"), so labels, latencies and diffs are the same on a loaded machine; --gpu-gbps: each
# kernel's time follows from its bytes; proxy events are on (NCCLSCOPE_EVENTS=all)
run() { d=$1; shift; NCCLSCOPE_DIR="$W/$d" NCCLSCOPE_EVENTS=all "$SIM" --plugin "$PLUGIN" --clock model \
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
  rm -rf "$W/t"; NCCLSCOPE_DIR="$W/t" "$SIM" --plugin "$PLUGIN" --clock model --scenario allreduce --ranks 4 \
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
  # 20 ms per receive step, 2 ranks on one channel: the slow consumer's link is one of 4, and the
  # other links' phases (about a scheduler tick per step on a loaded host) stay far below its wait
  # (measured with 4 such runs at once: 87-95% of the proxy time gpu_wait; 4 ranks on 2 channels,
  # one link of 16, gave 63-87%, and with 3 ms per step 14-20% under the full suite's load)
  run t --ranks 2 --channels 1 --slow-gpu 1 --slow-gpu-us 20000
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
queue)
  # Kernels of 0.2 GB/s (milliseconds each) enqueued every 50-70 us: each waits behind the
  # previous one on its communicator's stream. nccl-sim's model starts a queued kernel 300 ns
  # after the previous one ended, + 40 ns per channel (docs/nccl-sim.md, "Model time"): the
  # launch is under a microsecond, the rest of kernel start - arrival is the queue
  run t
  json t
  python3 -c "import json; r=json.load(open('$W/out.json'))
R=r['ranks']; assert len(R)==4, R
for x in R:
  assert x['queue_delay_mean_ns']>1e6 and 300<=x['launch_delay_mean_ns']<2000, x
B=[b for b in r['buckets'] if not b['p2p']]
assert all(b['breakdown']['label']!='launch' and b['breakdown']['queue_unknown']==0 for b in B), B
assert sum(b['breakdown']['queue_ns'] for b in B)>0, B" || fail "queued kernels: not told from launch"
  "$NCS" report "$W/t" | grep -q "queue avg" || fail "no queue avg column"
  # the outputs carry the same queue: SQLite's per instance sums to the report's per bucket
  "$NCS" export -q --format sqlite -o "$W/t.sqlite" "$W/t" || fail "export sqlite"
  python3 -c "import json, sqlite3; r=json.load(open('$W/out.json')); db=sqlite3.connect('$W/t.sqlite')
got=dict(((f, lo), q) for f, lo, q in db.execute('SELECT c.func, b2.bytes_lo, SUM(b.queue_ns) FROM breakdown b JOIN collectives c ON c.id=b.collective_id JOIN buckets b2 ON b2.comm=c.comm AND b2.func=c.func AND c.bytes>=b2.bytes_lo AND c.bytes<b2.bytes_hi AND NOT b2.p2p GROUP BY 1, 2'))
want={(b['func'], b['bytes_lo']): b['breakdown']['queue_ns'] for b in r['buckets'] if not b['p2p']}
assert got==want, (got, want)
q=dict(db.execute('SELECT rank, queue_delay_mean_ns FROM ranks'))
assert all(q[x['rank']]==x['queue_delay_mean_ns'] for x in r['ranks']), q" || fail "outputs disagree on the queue"
  # healthy seeds, kernels of microseconds: nothing queues, the whole delay is the launch
  rm -rf "$W/t"; NCCLSCOPE_DIR="$W/t" NCCLSCOPE_EVENTS=all "$SIM" --plugin "$PLUGIN" --clock model --scenario allreduce \
    --ranks 4 --iters 30 --seed 3 >"$W/sim.out" || fail "nccl-sim"
  json t
  python3 -c "import json; r=json.load(open('$W/out.json'))
for x in r['ranks']:
  assert x['queue_delay_mean_ns']==0 and 500<=x['launch_delay_mean_ns']<10000, x
assert all(b['breakdown']['queue_ns']==0 for b in r['buckets'] if not b['p2p']), r['buckets']" || fail "a queue without queueing"
  ;;
diff_same)
  run a; run b
  "$NCS" diff --json "$W/a" "$W/b" >"$W/out.json"; rc=$?
  [ $rc -eq 0 ] || fail "diff of same-seed runs exited $rc"
  python3 -c "import json; d=json.load(open('$W/out.json')); assert d['regressions']==0, d
assert all(b['verdict'] in ('no_change','too_few') for b in d['buckets']), d['buckets']
assert any(b['verdict']=='no_change' for b in d['buckets']), d['buckets']
assert all(f['change']=='not_significant' for f in d['findings']), d['findings']" || fail "same-seed diff found a change"
  ;;
diff_slow)
  # a slow link: slower buckets (a regression), network-bound or mixed (coupled, as NCCL's ranks
  # are, the peers' waiting for rank 1's data is part of it; in some runs it is most of an
  # instance's proxy time in 2 of 3 instances of a bucket: peer_wait), and rank 1 a new slow-rank
  # finding. Uncoupled, the other ranks completed collectives before rank 1's data could have
  # reached them, which the report rejects, and the finding came and went with those rejections
  run a --couple on; run b --couple on --slow-link 1 --slow-link-us 3000
  set +e; "$NCS" diff --json --fail-above 50 "$W/a" "$W/b" >"$W/out.json"; rc=$?; set -e
  [ $rc -eq 1 ] || fail "diff against a slowed run exited $rc, not 1"
  python3 -c "import json; d=json.load(open('$W/out.json')); assert d['regressions']>=1, d
s=[b for b in d['buckets'] if b['verdict']=='slower']; assert s, d['buckets']
assert all(b['latency_ci'][0]>50 for b in s if b['regression']), s
assert all(b['label_b'] in ('network', 'mixed', 'peer_wait') for b in s), s
assert any(f['change']=='new' and f['rank']==1 for f in d['findings']), d['findings']" || fail "slowed diff"
  # a slow GPU consumer on one of two ranks (one channel): the bottleneck moves to gpu_wait, and
  # diff says the label changed. --couple on: a rank's kernel ends only once its peer entered and
  # sent its data, as in NCCL; uncoupled, rank 0 would finish operations before the slowed rank 1
  # entered them, which the job model rightly takes back (docs/report.md, impossible completions),
  # leaving too few GPU times for a verdict. Coupled, the healthy run waits on its peer (peer_wait
  # or mixed) rather than on the network.
  run c --ranks 2 --channels 1 --couple on
  run g --ranks 2 --channels 1 --slow-gpu 1 --slow-gpu-us 20000 --couple on
  set +e; "$NCS" diff --json "$W/c" "$W/g" >"$W/out.json"; rc=$?; set -e
  [ $rc -eq 1 ] || fail "diff against a slowed GPU exited $rc, not 1"
  python3 -c "import json; d=json.load(open('$W/out.json'))
assert any(b['label_changed'] and b['label_a']!='gpu_wait' and b['label_b']=='gpu_wait' for b in d['buckets']), d['buckets']
assert any(b['verdict']=='slower' and b['label_b']=='gpu_wait' for b in d['buckets']), d['buckets']" ||
    fail "the label change is not in the diff"
  "$NCS" diff "$W/a" "$W/b" | grep -q "REGRESSION" || fail "text has no REGRESSION"
  "$NCS" diff "$W/a" >/dev/null 2>&1 && fail "one argument accepted"; [ $? -eq 2 ] || fail "usage status"
  ;;
diff_straggler)
  # issue 31's case: rank 3 enqueues 3 ms late; 10 iterations, so every bucket has too few
  # instances for a latency verdict. The new straggler and the waiting it causes are regressions
  sim() { d=$1; shift; NCCLSCOPE_DIR="$W/$d" NCCLSCOPE_EVENTS=all "$SIM" --plugin "$PLUGIN" --clock model \
    --couple on --gpu-gbps 50 "$@" >"$W/sim.out" || fail "nccl-sim $?"; }
  sim a; sim b --slow-rank 3 --slow-us 3000
  set +e; "$NCS" diff --json "$W/a" "$W/b" >"$W/out.json"; rc=$?; set -e
  [ $rc -eq 1 ] || fail "diff against a straggler exited $rc, not 1"
  "$NCS" report --json "$W/a" >"$W/ra.json" || fail "report a"
  python3 -c "import json; d=json.load(open('$W/out.json')); ra=json.load(open('$W/ra.json'))
assert d['schema']=='ncclscope-diff/2', d['schema']
assert any(f['change']=='new' and f['kind']=='straggler' and f['rank']==3 and f['regression'] for f in d['findings']), d['findings']
R={x['rank']: x for x in d['ranks']}; assert sorted(R)==[0,1,2,3], R
r3=R[3]; assert r3['regression'] and r3['last_changed'] and r3['wait_caused_ci'][0]>2.5e6, r3
assert all(R[k]['wait_suffered_ci'][0]>2.5e6 for k in (0,1,2)), R
# per rank, the means times the instances are the report's sums (the same analysis)
for x in ra['ranks']:
  y=R[x['rank']]; assert abs(y['wait_caused_a_ns']*y['n_a']-x['wait_caused_ns'])<=y['n_a'], (x, y)
  assert abs(y['wait_suffered_a_ns']*y['n_a']-x['wait_suffered_ns'])<=y['n_a'], (x, y)
# rows in size order
k=[(b['comm'], b['p2p'], b['func'], b['bytes_lo']) for b in d['buckets']]; assert k==sorted(k), k
assert d['regressions']==sum(b['regression'] for b in d['buckets'])+sum(x['regression'] for x in d['ranks'])+sum(f['regression'] for f in d['findings']), d" || fail "the straggler is not a regression"
  set +e; "$NCS" diff "$W/a" "$W/b" >"$W/out.txt"; rc=$?; set -e
  [ $rc -eq 1 ] || fail "text diff against a straggler exited $rc"
  grep -q "new straggler: c0 rank 3 (REGRESSION)" "$W/out.txt" || fail "text: no new straggler"
  # --fail-above high enough: the waits are no regression, the new straggler still is
  set +e; "$NCS" diff --json --fail-above 100000 "$W/a" "$W/b" >"$W/out.json"; rc=$?; set -e
  [ $rc -eq 1 ] || fail "a new straggler under --fail-above 100000 exited $rc"
  ;;
diff_seeds)
  # healthy runs of different seeds differ only by chance: no regression, no new finding, no
  # rank whose waiting or last arrivals changed beyond chance
  sim() { d=$1; shift; NCCLSCOPE_DIR="$W/$d" NCCLSCOPE_EVENTS=all "$SIM" --plugin "$PLUGIN" --clock model \
    --couple on --gpu-gbps 50 --iters 30 "$@" >"$W/sim.out" || fail "nccl-sim $?"; }
  sim s2 --seed 2
  for s in 3 4 5; do
    sim s$s --seed $s
    "$NCS" diff --json "$W/s2" "$W/s$s" >"$W/out.json" || fail "healthy seeds 2 and $s: diff exited $?"
    python3 -c "import json; d=json.load(open('$W/out.json')); assert d['regressions']==0, d
assert all(x['verdict'] in ('no_change','more','less','cannot_tell') and not x['regression'] and not x['last_changed'] for x in d['ranks']), d['ranks']
assert len(d['ranks'])==4 and not [f for f in d['findings'] if f['change']!='not_significant'], d" || fail "seeds 2 and $s"
  done
  # send/receive buckets are compared too (scenario mixed: same seed, no change)
  sim m1 --scenario mixed; sim m2 --scenario mixed
  "$NCS" diff --json "$W/m1" "$W/m2" >"$W/out.json" || fail "mixed: diff exited $?"
  python3 -c "import json; d=json.load(open('$W/out.json')); P=[b for b in d['buckets'] if b['p2p']]
C=[b for b in P if 'latency_ci' in b]  # compared: an interval (12 to 16 operations a bucket here)
assert C and all(b['verdict'] in ('no_change','cannot_tell') for b in C) and d['regressions']==0, P" || fail "send/receive buckets"
  ;;
outputs)
  run t --couple on --slow-link 1 --slow-link-us 3000
  rm -rf "$W/n"; NCCLSCOPE_DIR="$W/n" "$SIM" --plugin "$PLUGIN" --clock model --couple on --scenario allreduce --ranks 4 \
    --iters 10 >"$W/sim.out" || fail "nccl-sim"
  for d in t n; do
    "$NCS" report --json "$W/$d" >"$W/$d.json" || fail "report $d"
    "$NCS" report --html "$W/$d.html" "$W/$d" >/dev/null || fail "report --html $d"
    "$NCS" export -q --format sqlite -o "$W/$d.sqlite" "$W/$d" || fail "export sqlite $d"
    "$NCS" export -q --format chrome -o "$W/$d.chrome.json" "$W/$d" 2>/dev/null || fail "export chrome $d"
    "$NCS" export -q --format perfetto -o "$W/$d.pftrace" "$W/$d" 2>/dev/null || fail "export perfetto $d"
  done
  python3 - "$W" <<'PY' || fail "outputs disagree"
import collections, html, json, re, sqlite3, sys
w = sys.argv[1]
for d, proxy in (("t", True), ("n", False)):
    r = json.load(open("%s/%s.json" % (w, d)))
    L = r["breakdown"]["labels"]
    B = {(b["func"], b["bytes_lo"]): b["breakdown"] for b in r["buckets"] if not b["p2p"]}
    db = sqlite3.connect("%s/%s.sqlite" % (w, d))
    q = lambda s: db.execute(s).fetchall()
    # one breakdown row per collective instance, labels as the report counts them
    assert q("SELECT COUNT(*) FROM breakdown")[0][0] == q("SELECT COUNT(*) FROM collectives")[0][0] == sum(L.values())
    got = dict(q("SELECT label, COUNT(*) FROM breakdown GROUP BY label"))
    assert got == {k: v for k, v in L.items() if v}, (d, got, L)
    for func, lo, lab, reason, wr in q("SELECT func, bytes_lo, bd_label, bd_reason, bd_wait_rank FROM buckets WHERE NOT p2p"):
        b = B[(func, lo)]
        assert lab == b["label"] and (reason or "") == b["reason"] and (-1 if wr is None else wr) == b["wait_rank"], (d, func, lo, lab, reason, wr, b)
    # the timeline's job slices carry the same label and phase sums
    ev = json.load(open("%s/%s.chrome.json" % (w, d)))
    ev = ev["traceEvents"] if isinstance(ev, dict) else ev
    js = [e["args"] for e in ev if e.get("ph") in ("X", "B") and "bottleneck" in e.get("args", {})]
    assert collections.Counter(a["bottleneck"] for a in js) == collections.Counter({k: v for k, v in L.items() if v}), (d, js[:2])
    bd = {seq: row for seq, *row in q("SELECT c.seq, b.label, b.network_ns, b.gpu_wait_ns, b.network_bytes FROM breakdown b JOIN collectives c ON c.id = b.collective_id")}
    for a in js:
        row = bd[a["seqNumber"]]
        assert a["bottleneck"] == row[0], (a, row)
        if proxy:
            assert (a["network_ns"], a["gpu_wait_ns"], a["network_bytes"]) == tuple(row[1:]), (a, row)
        else:
            assert "network_ns" not in a and "proxystep" in a["bottleneck_reason"], a
    assert b"bottleneck" in open("%s/%s.pftrace" % (w, d), "rb").read(), "perfetto has no bottleneck"
    # the page's breakdown table: one row per collective bucket, its label
    page = open("%s/%s.html" % (w, d), encoding="utf-8").read()
    m = re.search(r'<table id="breakdown-table">(.*?)</table>', page, re.S)
    rows = re.findall(r'<tr data-label="([a-z_]+)">', m.group(1))
    assert sorted(rows) == sorted(b["label"] for b in B.values()), (d, rows)
    if proxy:
        # coupled (as NCCL's ranks are): the slow link's buckets are network-bound, or mixed where
        # the peers' waiting for rank 1's data outweighs it
        assert "network" in rows and set(rows) <= {"network", "mixed"}, rows
        # per collective: its links add up to its breakdown (bytes; the four phases together)
        bad = q("""SELECT b.collective_id FROM breakdown b JOIN (SELECT collective_id, SUM(bytes) AS by,
                   SUM(gpu_wait_ns + peer_wait_ns + network_ns + flush_ns) AS ph, COUNT(*) AS n
                   FROM links GROUP BY collective_id) l ON l.collective_id = b.collective_id
                   WHERE l.by != b.network_bytes OR l.ph != b.gpu_wait_ns + b.peer_wait_ns + b.network_ns + b.flush_ns
                   OR l.n != b.links""")
        assert not bad and q("SELECT COUNT(*) FROM links WHERE operation_id IS NULL")[0][0] == 0, bad
        assert q("SELECT COUNT(*) FROM links")[0][0] == q("SELECT SUM(links) FROM breakdown")[0][0] > 0
        nq = q("SELECT kind, SUM(events), SUM(bytes) FROM net_qps GROUP BY kind")
        assert nq and all(k in ("ib", "socket") and e > 0 for k, e, _ in nq), nq
    else:
        assert set(rows) == {"cannot_tell"} and "proxystep" in page, rows
        assert q("SELECT COUNT(*) FROM links")[0][0] == 0 and q("SELECT COUNT(*) FROM net_qps")[0][0] == 0
        assert q("SELECT COUNT(*) FROM breakdown WHERE reason LIKE '%proxystep%'")[0][0] == sum(L.values())
PY
  ;;
esac
echo PASS
