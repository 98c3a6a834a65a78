#!/bin/sh
# sample_check.sh SIM PLUGIN NCCLSCOPE WORKDIR EMPTY - KernelCh sampling (NCCLSCOPE_KERNEL_SAMPLE,
# docs/config.md).
# 1. N=8, 64 AllReduces per rank: every rank records KernelCh for the same K groups (the first,
#    then those whose number hashes to 0 mod 8); the other Coll complete at once (no children,
#    none forced or expired), and the report counts them as unsampled and takes latency and
#    bandwidth from the K sampled instances.
# 2. The defaults: a full trace samples (1 in 64: 512 AllReduces give a few sampled, most not);
#    flight mode records KernelCh for every operation.
# 3. Sampling stops for good at the first Send/Recv (NCCL 2.28 hangs at communicator destroy
#    when KernelCh is toggled between groups with send/recv): the sendrecv scenario then records
#    KernelCh for every operation, and the plugin says why through NCCL's logger. The empty
#    plugin (EMPTY, the overhead benchmark's floor) samples the same way and stops the same way.
set -u
SIM=$1 PLUGIN=$2 NS=$3 W=$4 EMPTY=$5
rm -rf "$W" && mkdir -p "$W"
fail() { echo "sample check: FAILED: $*"; exit 1; }
unset NCCLSCOPE_MODE NCCLSCOPE_EVENTS NCCLSCOPE_CAPTURE NCCLSCOPE_KERNEL_SAMPLE
# run NAME ITERS [VAR=value ...]: record nccl-sim's allreduce on 2 ranks in 2 processes
run() {
  n=$1 it=$2; shift 2
  env "$@" NCCLSCOPE_DIR="$W/$n" "$SIM" --plugin "$PLUGIN" --scenario allreduce --ranks 2 --procs 2 \
    --iters "$it" >"$W/$n.sim" 2>&1 || fail "nccl-sim ($n): $(tail -2 "$W/$n.sim")"
  "$NS" dump --stats "$W/$n" >"$W/$n.stats" 2>&1 || fail "dump --stats ($n)"
  "$NS" report --json "$W/$n" >"$W/$n.json" 2>&1 || fail "report ($n)"
}
# sampled N of ITERS: checks the run's consistency and prints K, the sampled groups per rank
check() {
  n=$1 it=$2
  c=$(grep "completions" "$W/$n.stats" | tail -1)
  kern=$(echo "$c" | sed -n 's/.*(kernel \([0-9]*\), proxy 0, revised 0, forced 0, no children \([0-9]*\).*/\1 \2/p')
  [ -n "$kern" ] || fail "$n: completions: $c"
  set -- $kern
  [ $(($1 + $2)) = $((2 * it)) ] || fail "$n: completions $1 + $2 != $((2 * it))"
  [ $(($1 % 2)) = 0 ] || fail "$n: odd kernel completions $1: ranks sampled different groups"
  k=$(($1 / 2))
  exp=$(awk '/^== job/ {j = 1} j && $1 == "KernelCh" {print $6; exit}' "$W/$n.stats")
  [ "${exp:-x}" = 0 ] || fail "$n: KernelCh expired: $exp"
  grep -q "\"unsampled\":$((it - k))[,}]" "$W/$n.json" ||
    fail "$n: unsampled: $(grep -o '"unsampled":[0-9]*' "$W/$n.json") (expected $((it - k)))"
  # the sampled groups are the same on both ranks: K complete instances with GPU times
  m=$(grep -o '"count":[0-9]*,"bytes":[0-9]*,"timing":{"kernel_gpu":[0-9]*' "$W/$n.json" |
      awk -F'[:,]' '{c += $2; g += $NF} END {print c "/" g}')
  [ "$m" = "$k/$k" ] || fail "$n: bucket instances/kernel-timed: $m (expected $k/$k)"
  echo "$k"
}
run n8 64 NCCLSCOPE_KERNEL_SAMPLE=8
k=$(check n8 64) || { echo "$k"; exit 1; }
# 1 + about 63/8: a hash, so not exactly; but never all, never only the first
[ "$k" -ge 3 ] && [ "$k" -le 20 ] || fail "N=8: $k of 64 groups sampled"
"$NS" report "$W/n8" >"$W/n8.txt" 2>&1 || fail "report text"
grep -q "$((64 - k)) instances have no GPU times" "$W/n8.txt" || fail "no unsampled line: $(head -4 "$W/n8.txt")"
run dflt 512
k=$(check dflt 512) || { echo "$k"; exit 1; }
[ "$k" -ge 3 ] && [ "$k" -le 24 ] || fail "default: $k of 512 groups sampled (1 in 64 expected)"
run flight 64 NCCLSCOPE_MODE=flight
grep -q "completions 128 (kernel 128, proxy 0, revised 0, forced 0, no children 0" "$W/flight.stats" ||
  fail "flight default: $(grep completions "$W/flight.stats" | tail -1)"
NCCLSCOPE_KERNEL_SAMPLE=8 NCCLSCOPE_DIR="$W/p2p" "$SIM" --plugin "$PLUGIN" --scenario sendrecv --ranks 2 \
  --iters 64 --verbose >"$W/p2p.sim" 2>&1 || fail "nccl-sim (sendrecv): $(tail -2 "$W/p2p.sim")"
grep -q "KernelCh sampling (NCCLSCOPE_KERNEL_SAMPLE=8) stopped at the first send/recv" "$W/p2p.sim" ||
  fail "sendrecv: no message that sampling stopped"
"$NS" dump --stats "$W/p2p" >"$W/p2p.stats" 2>&1 || fail "dump --stats (sendrecv)"
grep -q "no children 0," "$W/p2p.stats" || fail "sendrecv: unsampled operations: $(grep completions "$W/p2p.stats" | tail -1)"
# the empty plugin: nccl-sim's count of KernelCh starts, sampled (8) and not (1)
kch() { NCS_EMPTY_EVENTS=default NCS_EMPTY_KERNEL_SAMPLE=$2 "$SIM" --plugin "$EMPTY" --scenario "$1" \
          --ranks 2 --iters 64 2>&1 | sed -n 's/.* KernelCh=\([0-9]*\),.*/\1/p'; }
a8=$(kch allreduce 8) a1=$(kch allreduce 1) p8=$(kch sendrecv 8) p1=$(kch sendrecv 1)
[ -n "$a8" ] && [ "$a8" -gt 0 ] && [ "$a8" -lt "$a1" ] || fail "empty plugin: allreduce KernelCh $a8 sampled vs $a1"
[ -n "$p8" ] && [ "$p8" = "$p1" ] || fail "empty plugin: sendrecv KernelCh $p8 sampled vs $p1 (sampling must stop)"
echo "sample check: ok (N=8: $(check n8 64) of 64 groups; default: $k of 512)"
