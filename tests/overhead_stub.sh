#!/bin/sh
# overhead_stub.sh - a stand-in for bench/ncs_perf (no GPU), for tests/overhead_check.sh: takes
# ncs_perf's options and prints its `perf:` lines with times from a model, so that every figure
# bench/overhead.sh prints can be checked exactly.
#
# Model: time_us = (BASE + bytes / 2000) x transport factor x (1 + noise) + ADD[level], where
#   BASE = 5, transport factor 3 when NCCL_P2P_DISABLE=1 and NCCL_SHM_DISABLE=1 (socket), else 1;
#   level (NCS_OVERHEAD_LEVEL, which overhead.sh sets, for its own levels; else guessed from the
#   environment): n none, ed/ef empty plugin with
#   NCS_EMPTY_EVENTS default (sampled)/all, efl default without NCS_EMPTY_SAMPLE, nd/nf/nfl
#   ncclscope default/NCCLSCOPE_EVENTS=all/flight;
#   ADD: n 0, ed 2, nd 2.5, ef 5, nf 6, efl 2.1, nfl 2.2 (us); graph: ADD halved;
#   noise = NOISE[(k + OFF[level]) % 4], NOISE = 0 .05 .01 .2, OFF: n 0, ed 1, nd 2, ef 3, nf 0,
#   efl 2, nfl 1, k = how many times this level ran before in this transport/mode/procs (a counter
#   per key in $NCS_STUB_STATE).
# It also loads the plugin for real when NCS_STUB_SIM names nccl-sim (so the empty plugin's
# announce line and ncclscope's trace files appear; else it fakes both), fails (exit 1) the first run of level
# $NCS_STUB_FAIL, sleeps $NCS_STUB_SLEEP seconds per run, and insists on NCCL_NVLS_ENABLE=0.
set -eu
ops=allreduce min=8 max=33554432 factor=2 graph=0 procs=0 iters=20
while [ $# -gt 0 ]; do
  case $1 in
  --graph) graph=1 ;;
  --procs) procs=1 ;;
  --check) ;;
  --op) ops=$2; shift ;;
  --min) min=$2; shift ;;
  --max) max=$2; shift ;;
  --factor) factor=$2; shift ;;
  --iters) iters=$2; shift ;;
  --warmup | --gpus) shift ;;
  --help) echo "usage: overhead_stub.sh [ncs_perf options]"; exit 0 ;;
  *) echo "overhead_stub: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
[ "${NCCL_NVLS_ENABLE:-}" = 0 ] || { echo "overhead_stub: NCCL_NVLS_ENABLE is not 0" >&2; exit 1; }
size() { awk -v s="$1" 'BEGIN { m = 1; u = substr(s, length(s)); if (u == "K") m = 1024; if (u == "M") m = 1048576;
  if (m > 1) s = substr(s, 1, length(s) - 1); printf "%d", s * m }'; }
min=$(size "$min") max=$(size "$max")

p=${NCCL_PROFILER_PLUGIN:-}
case $p in
"") lvl=n ;;
*empty*)
  lvl="ed"
  [ "${NCS_EMPTY_EVENTS:-}" = all ] && lvl="ef"
  [ "${NCS_EMPTY_EVENTS:-}" = default ] && [ -z "${NCS_EMPTY_SAMPLE:-}" ] && lvl="efl"
  ;;
*ncclscope*)
  lvl=nd
  [ "${NCCLSCOPE_EVENTS:-}" = all ] && lvl=nf
  [ "${NCCLSCOPE_MODE:-}" = flight ] && lvl=nfl
  ;;
*) echo "overhead_stub: unknown plugin $p" >&2; exit 1 ;;
esac
# the levels of overhead.sh's own table, by name (the default and flight floors set the same
# variables); added levels (--add-level, --sample) keep the guess above
case ${NCS_OVERHEAD_LEVEL:-} in
none) lvl=n ;; empty-default) lvl=ed ;; ncclscope-default) lvl=nd ;; empty-full) lvl=ef ;;
ncclscope-full) lvl=nf ;; empty-flight) lvl=efl ;; ncclscope-flight) lvl=nfl ;;
esac
tf=1
[ "${NCCL_P2P_DISABLE:-}" = 1 ] && [ "${NCCL_SHM_DISABLE:-}" = 1 ] && tf=3
key=$lvl-$tf-$graph-$procs
st=${NCS_STUB_STATE:?NCS_STUB_STATE: a directory for the run counters}
k=$(cat "$st/$key" 2>/dev/null || echo 0)
echo $((k + 1)) >"$st/$key"
if [ -n "$p" ] && [ -n "${NCS_STUB_SIM:-}" ]; then
  "$NCS_STUB_SIM" --plugin "$p" --scenario allreduce --ranks 2 --iters 2 >/dev/null
elif [ -n "$p" ]; then # what loading the plugin would leave behind, without loading it
  case $lvl in
  e*) echo "ncclscope-empty: abi=v6 mask=0x0 sample=1 (stub)" >&2 ;;
  *) mkdir -p "$NCCLSCOPE_DIR" && : >"$NCCLSCOPE_DIR/stub-$$.nstrace" ;;
  esac
fi
[ -n "${NCS_STUB_SLEEP:-}" ] && sleep "$NCS_STUB_SLEEP"
if [ "${NCS_STUB_FAIL:-}" = "$lvl" ] && [ "$k" = 0 ]; then
  echo "ncs_perf: stub failure for level $lvl" >&2
  exit 1
fi
echo "perf: nccl=22809 gpus=2 procs=$procs graph=$graph iters=$iters"
echo "$ops" | tr ',' '\n' | while read -r op; do
  awk -v op="$op" -v min="$min" -v max="$max" -v f="$factor" -v lvl="$lvl" -v k="$k" -v tf="$tf" \
      -v graph="$graph" -v procs="$procs" 'BEGIN {
    add["n"] = 0; add["ed"] = 2; add["nd"] = 2.5; add["ef"] = 5; add["nf"] = 6; add["nfl"] = 2.2
    add["efl"] = 2.1
    off["n"] = 0; off["ed"] = 1; off["nd"] = 2; off["ef"] = 3; off["nf"] = 0; off["nfl"] = 1
    off["efl"] = 2
    split("0 0.05 0.01 0.2", noise, " ")
    a = add[lvl] / (graph ? 2 : 1)
    for (b = min; b <= max; b = b * f) {
      nb = b - b % 8; if (nb < 8) nb = 8
      t = (5 + nb / 2000) * tf * (1 + noise[(k + off[lvl]) % 4 + 1]) + a
      printf "perf: op=%s bytes=%d time_us=%.2f algbw=%.3f busbw=%.3f graph=%d procs=%d ranks=2 ok=1\n",
             op, nb, t, nb / t / 1000, nb / t / 1000, graph, procs
    }
  }'
done
