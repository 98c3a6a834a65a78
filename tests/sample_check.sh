#!/bin/sh
# sample_check.sh SIM PLUGIN NCCLSCOPE WORKDIR EMPTY - group sampling (NCCLSCOPE_SAMPLE,
# docs/config.md "Sampling").
# 1. N=8, 64 AllReduces per rank, one process per rank: both ranks record the same K groups in
#    full (the first, then those whose number hashes to 0 mod 8) and nothing of the others but
#    the counters; every recorded operation has its GPU times; no handle is reported bad, stale or
#    NULL (the unsampled groups' GroupApi handles are the plugin's own hook handles).
# 2. NCCLSCOPE_UNSAMPLED_EVENTS=api,group,coll,p2p,launch: the other groups keep their operation
#    records (flag unsampled, completed at once), and the report uses them for arrivals only.
# 3. The defaults: a full trace samples 1 in 64; flight mode records every operation.
# 4. Sampling stops for good at the first Send/Recv (NCCL 2.28 hangs at communicator destroy
#    when KernelCh is toggled between groups with send/recv) and says why through NCCL's logger.
# 5. The empty plugin (EMPTY, the overhead benchmark's floor) samples the same way: the same
#    number of KernelCh and Coll calls from nccl-sim as ncclscope, fewer than without sampling,
#    and none saved on send/recv.
set -u
SIM=$1 PLUGIN=$2 NS=$3 W=$4 EMPTY=$5
rm -rf "$W" && mkdir -p "$W"
fail() { echo "sample check: FAILED: $*"; exit 1; }
unset NCCLSCOPE_MODE NCCLSCOPE_EVENTS NCCLSCOPE_CAPTURE NCCLSCOPE_KERNEL_SAMPLE NCCLSCOPE_SAMPLE \
  NCCLSCOPE_UNSAMPLED_EVENTS
# run NAME ITERS [VAR=value ...]: record nccl-sim's allreduce on 2 ranks in 2 processes
run() {
  n=$1 it=$2; shift 2
  env "$@" NCCLSCOPE_DIR="$W/$n" "$SIM" --plugin "$PLUGIN" --scenario allreduce --ranks 2 --procs 2 \
    --iters "$it" >"$W/$n.sim" 2>&1 || fail "nccl-sim ($n): $(tail -2 "$W/$n.sim")"
  "$NS" dump --stats "$W/$n" >"$W/$n.stats" 2>&1 || fail "dump --stats ($n)"
  "$NS" report --json "$W/$n" >"$W/$n.json" 2>&1 || fail "report ($n)"
}
# field NAME KEY: an integer of the report's "collectives" object
field() { grep -o "\"$2\":[0-9]*" "$W/$1.json" | head -1 | cut -d: -f2; }
# the job-wide "sampling:" line of dump --stats: prints "groups recorded unsampled"
sampling() {
  awk '/^== job/ {j = 1} j && $1 == "sampling:" {print $2, $4, $8; exit}' "$W/$1.stats"
}
# sampled NAME ITERS: checks a group-sampled run and prints K, the sampled groups per rank
sampled() {
  n=$1 it=$2
  s=$(sampling "$n")
  [ -n "$s" ] || fail "$n: no sampling line: $(grep -i sampl "$W/$n.stats" | head -2)"
  set -- $s
  [ "$1" = $((2 * it)) ] || fail "$n: $1 groups counted, expected $((2 * it))"
  [ $(($2 + $3)) = "$1" ] || fail "$n: $2 recorded + $3 unsampled != $1"
  [ $(($2 % 2)) = 0 ] || fail "$n: odd number of recorded groups $2: ranks sampled different groups"
  k=$(($2 / 2))
  grep -q "completions $2 (kernel $2, proxy 0, revised 0, forced 0, no children 0" "$W/$n.stats" ||
    fail "$n: completions: $(grep completions "$W/$n.stats" | tail -1) (expected $2, all by kernel)"
  grep -q "handles: bad 0, stale 0, NULL 0;" "$W/$n.stats" ||
    fail "$n: $(grep 'handles:' "$W/$n.stats" | tail -1)"
  [ "$(field "$n" instances)" = "$k" ] && [ "$(field "$n" incomplete)" = 0 ] ||
    fail "$n: instances $(field "$n" instances), incomplete $(field "$n" incomplete) (expected $k, 0)"
  m=$(grep -o '"count":[0-9]*,"bytes":[0-9]*,"timing":{"kernel_gpu":[0-9]*' "$W/$n.json" |
      awk -F'[:,]' '{c += $2; g += $NF} END {print c "/" g}')
  [ "$m" = "$k/$k" ] || fail "$n: bucket instances/kernel-timed: $m (expected $k/$k)"
  echo "$k"
}

# 1. N=8
run n8 64 NCCLSCOPE_SAMPLE=8
k8=$(sampled n8 64) || { echo "$k8"; exit 1; }
# 1 + about 63/8: a hash, so not exactly; but never all, never only the first
[ "$k8" -ge 3 ] && [ "$k8" -le 20 ] || fail "N=8: $k8 of 64 groups sampled"
# the older name still works, with the same groups
run old8 64 NCCLSCOPE_KERNEL_SAMPLE=8
[ "$(sampling old8)" = "$(sampling n8)" ] || fail "NCCLSCOPE_KERNEL_SAMPLE=8: $(sampling old8) vs $(sampling n8)"

# without the API events in NCCLSCOPE_EVENTS: NCCL still starts GroupApi, and the same groups are
# sampled (the GroupApi is not recorded, but its stop still picks the next group's mask)
run noapi 64 NCCLSCOPE_SAMPLE=8 NCCLSCOPE_EVENTS=coll,kernel
[ "$(sampling noapi)" = "$(sampling n8)" ] || fail "NCCLSCOPE_EVENTS=coll,kernel: $(sampling noapi) vs $(sampling n8)"
grep -q "completions $((2 * k8)) (kernel $((2 * k8)), proxy 0, revised 0, forced 0, no children 0" "$W/noapi.stats" ||
  fail "noapi: $(grep completions "$W/noapi.stats" | tail -1)"
# ncclscope record --sample sets it too
NCCLSCOPE_PLUGIN="$PLUGIN" "$NS" record --sample 8 -o "$W/rec8" -- "$SIM" --scenario allreduce --ranks 2 \
  --procs 2 --iters 64 >"$W/rec8.sim" 2>&1 || fail "record --sample 8: $(tail -2 "$W/rec8.sim")"
"$NS" dump --stats "$W/rec8" >"$W/rec8.stats" 2>&1 || fail "dump --stats (rec8)"
[ "$(sampling rec8)" = "$(sampling n8)" ] || fail "record --sample 8: $(sampling rec8) vs $(sampling n8)"

# 2. unsampled groups that keep their operation records
run keep8 64 NCCLSCOPE_SAMPLE=8 NCCLSCOPE_UNSAMPLED_EVENTS=api,group,coll,p2p,launch
grep -q "completions 128 (kernel $((2 * k8)), proxy 0, revised 0, forced 0, no children $((128 - 2 * k8))" \
  "$W/keep8.stats" || fail "keep8: $(grep completions "$W/keep8.stats" | tail -1) (K=$k8)"
[ "$(field keep8 unsampled)" = $((64 - k8)) ] && [ "$(field keep8 instances)" = 64 ] ||
  fail "keep8: instances $(field keep8 instances), unsampled $(field keep8 unsampled) (expected 64, $((64 - k8)))"
"$NS" report "$W/keep8" >"$W/keep8.txt" 2>&1 || fail "report text"
grep -q "$((64 - k8)) instances have no GPU times" "$W/keep8.txt" ||
  fail "keep8: no unsampled line: $(head -4 "$W/keep8.txt")"

# 3. the defaults
run dflt 512
k=$(sampled dflt 512) || { echo "$k"; exit 1; }
[ "$k" -ge 3 ] && [ "$k" -le 24 ] || fail "default: $k of 512 groups sampled (1 in 64 expected)"
run flight 64 NCCLSCOPE_MODE=flight
grep -q "completions 128 (kernel 128, proxy 0, revised 0, forced 0, no children 0" "$W/flight.stats" ||
  fail "flight default: $(grep completions "$W/flight.stats" | tail -1)"
grep -q "sampling:" "$W/flight.stats" && fail "flight mode sampled: $(grep sampling: "$W/flight.stats" | tail -1)"

# 4. send/recv stops sampling
NCCLSCOPE_SAMPLE=8 NCCLSCOPE_DIR="$W/p2p" "$SIM" --plugin "$PLUGIN" --scenario sendrecv --ranks 2 \
  --iters 64 --verbose >"$W/p2p.sim" 2>&1 || fail "nccl-sim (sendrecv): $(tail -2 "$W/p2p.sim")"
grep -q "sampling (NCCLSCOPE_SAMPLE=8) stopped at the first send/recv" "$W/p2p.sim" ||
  fail "sendrecv: no message that sampling stopped"
"$NS" dump --stats "$W/p2p" >"$W/p2p.stats" 2>&1 || fail "dump --stats (sendrecv)"
grep -q "no children 0," "$W/p2p.stats" || fail "sendrecv: unsampled operations: $(grep completions "$W/p2p.stats" | tail -1)"
[ "$(sampling p2p | cut -d' ' -f3)" = 0 ] || fail "sendrecv: unsampled groups: $(sampling p2p)"

# 5. the empty plugin: nccl-sim's counts of KernelCh and Coll starts
starts() { # PLUGIN SCENARIO TYPE [VAR=value ...]
  p=$1 sc=$2 ty=$3; shift 3
  env "$@" "$SIM" --plugin "$p" --scenario "$sc" --ranks 2 --procs 2 --iters 64 2>&1 |
    sed -n "s/.* $ty=\\([0-9]*\\),.*/\\1/p" | awk '{s += $1} END {print s + 0}'
}
e8=$(starts "$EMPTY" allreduce KernelCh NCS_EMPTY_EVENTS=default NCS_EMPTY_SAMPLE=8)
e1=$(starts "$EMPTY" allreduce KernelCh NCS_EMPTY_EVENTS=default NCS_EMPTY_SAMPLE=1)
n8=$(starts "$PLUGIN" allreduce KernelCh NCCLSCOPE_DIR="$W/kc" NCCLSCOPE_SAMPLE=8)
c8=$(starts "$EMPTY" allreduce Coll NCS_EMPTY_EVENTS=default NCS_EMPTY_SAMPLE=8)
[ "$e8" -gt 0 ] && [ "$e8" -lt "$e1" ] || fail "empty plugin: allreduce KernelCh $e8 sampled vs $e1"
[ "$e8" = "$n8" ] || fail "empty plugin: $e8 KernelCh calls sampled, ncclscope $n8"
[ "$c8" = $((2 * k8)) ] || fail "empty plugin: $c8 Coll calls sampled, ncclscope records $((2 * k8))"
p8=$(starts "$EMPTY" sendrecv KernelCh NCS_EMPTY_EVENTS=default NCS_EMPTY_SAMPLE=8)
p1=$(starts "$EMPTY" sendrecv KernelCh NCS_EMPTY_EVENTS=default NCS_EMPTY_SAMPLE=1)
[ -n "$p8" ] && [ "$p8" = "$p1" ] || fail "empty plugin: sendrecv KernelCh $p8 sampled vs $p1 (sampling must stop)"
echo "sample check: ok (N=8: $k8 of 64 groups; default: $k of 512)"
