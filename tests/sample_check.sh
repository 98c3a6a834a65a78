#!/bin/sh
# sample_check.sh SIM PLUGIN NCCLSCOPE WORKDIR EMPTY - every operation by default, and the
# optional group sampling of GPU times (NCCLSCOPE_SAMPLE, docs/config.md "Sampling").
# 1. The defaults: a full trace and flight mode record every operation with its GPU times; no
#    sampling line.
# 2. N=8, 64 AllReduces per rank, one process per rank: every operation is still recorded; both
#    ranks have KernelCh GPU times for the same K groups (the first, then those whose number
#    hashes to 0 mod 8); the others are flagged unsampled (completed at their enqueue), and the
#    report uses them for arrivals only and says so; no handle is reported bad, stale or NULL.
# 3. NCCLSCOPE_UNSAMPLED_EVENTS=none (asked for explicitly): the other groups are left out but for
#    the counters (the earlier default).
# 4. Sampling stops for good at the first Send/Recv (NCCL 2.28 hangs at communicator destroy
#    when KernelCh is toggled between groups with send/recv) and says why through NCCL's logger;
#    every send/recv keeps its KernelCh, however loaded the host.
# 5. The empty plugin (EMPTY, the overhead benchmark's floor) samples the same way: the same
#    number of KernelCh and Coll calls from nccl-sim as ncclscope, fewer KernelCh than without
#    sampling, and none saved on send/recv.
set -u
SIM=$1 PLUGIN=$2 NS=$3 W=$4 EMPTY=$5
rm -rf "$W" && mkdir -p "$W"
fail() { echo "sample check: FAILED: $*"; exit 1; }
unset NCCLSCOPE_MODE NCCLSCOPE_EVENTS NCCLSCOPE_CAPTURE NCCLSCOPE_KERNEL_SAMPLE NCCLSCOPE_SAMPLE \
  NCCLSCOPE_UNSAMPLED_EVENTS
# run NAME ITERS [VAR=value ...]: record nccl-sim's allreduce on 2 ranks in 2 processes, in model
# time (docs/nccl-sim.md) and coupled as NCCL's ranks are: the report's GPU-time checks see the
# model's times, not a loaded host's, and no rank completes an AllReduce its peer has not entered
run() {
  n=$1 it=$2; shift 2
  env "$@" NCCLSCOPE_DIR="$W/$n" "$SIM" --plugin "$PLUGIN" --clock model --couple on --scenario allreduce --ranks 2 --procs 2 \
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
# sampled NAME ITERS: checks a group-sampled run that left the other groups out (step 3) and
# prints K, the sampled groups per rank
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
# kept NAME ITERS: checks a run that sampled GPU times but kept every operation; prints K
kept() {
  n=$1 it=$2
  s=$(sampling "$n")
  [ -n "$s" ] || fail "$n: no sampling line: $(grep -i sampl "$W/$n.stats" | head -2)"
  set -- $s
  [ "$1" = $((2 * it)) ] && [ $(($2 + $3)) = "$1" ] && [ $(($2 % 2)) = 0 ] ||
    fail "$n: sampling line $s (2 ranks x $it groups, both ranks the same)"
  k=$(($2 / 2))
  grep -q "completions $((2 * it)) (kernel $((2 * k)), proxy 0, revised 0, forced 0, no children $((2 * it - 2 * k))" \
    "$W/$n.stats" || fail "$n: $(grep completions "$W/$n.stats" | tail -1) (K=$k)"
  grep -q "handles: bad 0, stale 0, NULL 0;" "$W/$n.stats" ||
    fail "$n: $(grep 'handles:' "$W/$n.stats" | tail -1)"
  [ "$(field "$n" unsampled)" = $((it - k)) ] && [ "$(field "$n" instances)" = "$it" ] &&
    [ "$(field "$n" incomplete)" = 0 ] ||
    fail "$n: instances $(field "$n" instances), unsampled $(field "$n" unsampled), incomplete $(field "$n" incomplete) (expected $it, $((it - k)), 0)"
  echo "$k"
}

# 1. the defaults: every operation, every GPU time
run dflt 512
[ -z "$(sampling dflt)" ] || fail "default: sampled: $(sampling dflt)"
grep -q "completions 1024 (kernel 1024, proxy 0, revised 0, forced 0, no children 0" "$W/dflt.stats" ||
  fail "default: $(grep completions "$W/dflt.stats" | tail -1)"
[ "$(field dflt instances)" = 512 ] && [ "$(field dflt unsampled)" = 0 ] && [ "$(field dflt incomplete)" = 0 ] ||
  fail "default: instances $(field dflt instances), unsampled $(field dflt unsampled), incomplete $(field dflt incomplete)"
run flight 64 NCCLSCOPE_MODE=flight
grep -q "completions 128 (kernel 128, proxy 0, revised 0, forced 0, no children 0" "$W/flight.stats" ||
  fail "flight default: $(grep completions "$W/flight.stats" | tail -1)"
grep -q "sampling:" "$W/flight.stats" && fail "flight mode sampled: $(grep sampling: "$W/flight.stats" | tail -1)"

# 2. N=8: GPU times for 1 group in 8, every operation kept
run n8 64 NCCLSCOPE_SAMPLE=8
k8=$(kept n8 64) || { echo "$k8"; exit 1; }
# 1 + about 63/8: a hash, so not exactly; but never all, never only the first
[ "$k8" -ge 3 ] && [ "$k8" -le 20 ] || fail "N=8: $k8 of 64 groups sampled"
"$NS" report "$W/n8" >"$W/n8.txt" 2>&1 || fail "report text"
grep -q "$((64 - k8)) instances have no GPU times" "$W/n8.txt" || fail "n8: no unsampled line: $(head -4 "$W/n8.txt")"
# per bucket: the instances with GPU times (count) and those without (unsampled), and the
# terminal row says both
python3 -c "
import json, sys
b = [x for x in json.load(open('$W/n8.json'))['buckets'] if not x['p2p']]
assert sum(x['count'] for x in b) == $k8 and sum(x['unsampled'] for x in b) == 64 - $k8, b
for x in b:
    assert (x['lat_p50_ci_ns'] is None) == (x['count'] < 6), x
    if x['lat_p50_ci_ns']: assert x['lat_p50_ci_ns'][0] <= x['lat_p50_ns'] <= x['lat_p50_ci_ns'][1], x
" || fail "n8: buckets' count/unsampled/interval"
[ "$(sed -n 's/^  AllReduce  *[0-9.]* [KM]iB  *\([0-9]*\) +\([0-9]*\) no GPU time .*/\1 \2/p' "$W/n8.txt" |
     awk '{c += $1; u += $2} END {print c, u}')" = "$k8 $((64 - k8))" ] ||
  fail "n8: the rows do not say $k8 with and $((64 - k8)) without GPU times: $(grep AllReduce "$W/n8.txt")"
# the older name still works, with the same groups
run old8 64 NCCLSCOPE_KERNEL_SAMPLE=8
[ "$(sampling old8)" = "$(sampling n8)" ] || fail "NCCLSCOPE_KERNEL_SAMPLE=8: $(sampling old8) vs $(sampling n8)"
# without the API events in NCCLSCOPE_EVENTS: NCCL still starts GroupApi, and the same groups are
# sampled (the GroupApi is not recorded, but its stop still picks the next group's mask)
run noapi 64 NCCLSCOPE_SAMPLE=8 NCCLSCOPE_EVENTS=coll,kernel
[ "$(sampling noapi)" = "$(sampling n8)" ] || fail "NCCLSCOPE_EVENTS=coll,kernel: $(sampling noapi) vs $(sampling n8)"
grep -q "completions 128 (kernel $((2 * k8)), proxy 0, revised 0, forced 0, no children $((128 - 2 * k8))" "$W/noapi.stats" ||
  fail "noapi: $(grep completions "$W/noapi.stats" | tail -1)"
# ncclscope record --sample sets it too
NCCLSCOPE_PLUGIN="$PLUGIN" "$NS" record --sample 8 -o "$W/rec8" -- "$SIM" --clock model --couple on --scenario allreduce --ranks 2 \
  --procs 2 --iters 64 >"$W/rec8.sim" 2>&1 || fail "record --sample 8: $(tail -2 "$W/rec8.sim")"
"$NS" dump --stats "$W/rec8" >"$W/rec8.stats" 2>&1 || fail "dump --stats (rec8)"
[ "$(sampling rec8)" = "$(sampling n8)" ] || fail "record --sample 8: $(sampling rec8) vs $(sampling n8)"

# 3. asked for explicitly: the other groups left out
run drop8 64 NCCLSCOPE_SAMPLE=8 NCCLSCOPE_UNSAMPLED_EVENTS=none
k=$(sampled drop8 64) || { echo "$k"; exit 1; }
[ "$(sampling drop8)" = "$(sampling n8)" ] || fail "UNSAMPLED_EVENTS=none: $(sampling drop8) vs $(sampling n8)"

# 4. send/recv stops sampling: every group is recorded in full (the plugin's reading of the mask at
# each GroupApi start), none is flagged unsampled, and every send/recv has its KernelCh: in model
# time nccl-sim's proxy is never a lap behind the GPU's work-counter ring, however loaded the host
# (docs/nccl-sim.md "KernelCh work counters")
NCCLSCOPE_SAMPLE=8 NCCLSCOPE_DIR="$W/p2p" "$SIM" --plugin "$PLUGIN" --clock model --couple on \
  --scenario sendrecv --ranks 2 --iters 64 --verbose >"$W/p2p.sim" 2>&1 || fail "nccl-sim (sendrecv): $(tail -2 "$W/p2p.sim")"
grep -q "sampling (NCCLSCOPE_SAMPLE=8) stopped at the first send/recv" "$W/p2p.sim" ||
  fail "sendrecv: no message that sampling stopped"
"$NS" dump --stats "$W/p2p" >"$W/p2p.stats" 2>&1 || fail "dump --stats (sendrecv)"
[ "$(sampling p2p)" = "128 128 0" ] || fail "sendrecv: sampling line (groups, in full, unsampled): $(sampling p2p)"
grep "completions" "$W/p2p.stats" | grep -qv "no children 0," &&
  fail "sendrecv: operations without KernelCh: $(grep completions "$W/p2p.stats" | tr '\n' ' ')"
"$NS" report --json "$W/p2p" >"$W/p2p.json" 2>&1 || fail "report (sendrecv)"
grep -q '"unsampled":0[,}]' "$W/p2p.json" || fail "sendrecv: operations flagged unsampled: $(grep -o '"unsampled":[0-9]*' "$W/p2p.json" | head -1)"

# 5. the empty plugin: nccl-sim's counts of KernelCh and Coll starts (model time, as in step 4)
starts() { # PLUGIN SCENARIO TYPE [VAR=value ...]
  p=$1 sc=$2 ty=$3; shift 3
  env "$@" "$SIM" --plugin "$p" --clock model --couple on --scenario "$sc" --ranks 2 --procs 2 --iters 64 2>&1 |
    sed -n "s/.* $ty=\\([0-9]*\\),.*/\\1/p" | awk '{s += $1} END {print s + 0}'
}
e8=$(starts "$EMPTY" allreduce KernelCh NCS_EMPTY_EVENTS=default NCS_EMPTY_SAMPLE=8)
e1=$(starts "$EMPTY" allreduce KernelCh NCS_EMPTY_EVENTS=default NCS_EMPTY_SAMPLE=1)
n8=$(starts "$PLUGIN" allreduce KernelCh NCCLSCOPE_DIR="$W/kc" NCCLSCOPE_SAMPLE=8)
c8=$(starts "$EMPTY" allreduce Coll NCS_EMPTY_EVENTS=default NCS_EMPTY_SAMPLE=8)
[ "$e8" -gt 0 ] && [ "$e8" -lt "$e1" ] || fail "empty plugin: allreduce KernelCh $e8 sampled vs $e1"
[ "$e8" = "$n8" ] || fail "empty plugin: $e8 KernelCh calls sampled, ncclscope $n8"
[ "$c8" = 128 ] || fail "empty plugin: $c8 Coll calls sampled, expected 128 (every operation)"
p8=$(starts "$EMPTY" sendrecv KernelCh NCS_EMPTY_EVENTS=default NCS_EMPTY_SAMPLE=8)
p1=$(starts "$EMPTY" sendrecv KernelCh NCS_EMPTY_EVENTS=default NCS_EMPTY_SAMPLE=1)
[ -n "$p8" ] && [ "$p8" = "$p1" ] || fail "empty plugin: sendrecv KernelCh $p8 sampled vs $p1 (sampling must stop)"
echo "sample check: ok (N=8: GPU times for $k8 of 64 groups)"
