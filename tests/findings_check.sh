#!/bin/sh
# findings_check.sh SIM PLUGIN NCCLSCOPE WORKDIR CASE SIZE [U] - the report's straggler and
# slow-rank findings against chance (docs/report.md, "Findings") on nccl-sim jobs of SIZE
# (RANKSxPROCS, --couple on).
#   healthy: 20 jobs (--scenario mixed --iters 50 --seed 1..20): no job may have a finding (every
#            one would be false)
#   slowed:  3 jobs (--scenario allreduce --iters 20) with rank 1 slowed by U us: each names rank
#            1 a straggler, and no other rank
#   mixed:   issue 30's reproducer: --scenario mixed with rank 5 slowed by U us (30 ms), 3 seeds:
#            rank 5 is named, and no other rank
# The jobs run in model time (nccl-sim --clock model): arrivals differ by the model's jitter (up
# to 20 us per group, drawn per rank from the seed) and the injected delay, never by the machine's
# scheduling, so each verdict is the same on an idle and on a loaded machine (docs/testing.md).
# bench/findings_rate.sh measures the same live, at more sizes and delays (docs/benchmarks.md).
set -eu
SIM=$1 PLUGIN=$2 NCS=$3 W=$4 CASE=$5 SIZE=$6 U=${7:-0}
R=${SIZE%x*} P=${SIZE#*x}
rm -rf "$W" && mkdir -p "$W"
. "$(dirname "$0")/findings_lib.sh"
py() { python3 -c "import json; r=json.load(open('$W/r.json')); $1" || fail "$2"; }
case $CASE in
healthy)
  for seed in $(seq 1 20); do
    job mixed 50 "$seed"
    py "assert not r['stragglers'] and not r['slow_ranks'], (r['stragglers'], r['slow_ranks'])
assert r['no_finding'], r['no_finding']
assert sum(x['last_trials'] for x in r['ranks']) > 0, 'no trials: the test was not run'" \
      "a finding on healthy job $SIZE seed $seed"
    ! grep -q "arrived last in\|took longest in" "$W/r.txt" || fail "a finding in the text (seed $seed)"
  done
  ;;
slowed)
  for seed in 1 2 3; do
    job allreduce 20 "$seed" --slow-rank 1 --slow-us "$U"
    py "s=r['stragglers']; assert s and all(x['rank']==1 for x in s), s
assert all(x['p_value'] <= 0.01 / x['tests'] and x['p_value_rest'] <= 0.01 / x['tests'] for x in s), s" \
      "rank 1 slowed by $U us is not the only straggler ($SIZE seed $seed)"
    grep -q "^  - rank 1 (pid [0-9]*) arrived last in" "$W/r.txt" || fail "no text finding (seed $seed)"
  done
  ;;
mixed)
  for seed in 1 2 3; do
    job mixed 30 "$seed" --slow-rank 5 --slow-us "$U"
    py "s=r['stragglers']; assert s and all(x['rank']==5 for x in s), s
assert all(x['p_value'] <= 0.01 / x['tests'] and x['p_value_rest'] <= 0.01 / x['tests'] for x in s), s" \
      "rank 5 slowed by $U us is not the only straggler ($SIZE seed $seed)"
    grep -q "^  - rank 5 (pid [0-9]*) arrived last in" "$W/r.txt" || fail "no text finding (seed $seed)"
  done
  ;;
*)
  fail "unknown case $CASE"
  ;;
esac
echo "findings check $CASE $SIZE: ok"
