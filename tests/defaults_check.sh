#!/bin/sh
# defaults_check.sh NCCLSCOPE SIM PLUGIN WORKDIR - every operation, always: the reproducers of the
# sampled default (docs/config.md "Sampling"), run as a user would, with the default settings.
# 1. A full trace of 4 ranks x 500 AllReduces keeps every group: 2000 operations, 500 instances,
#    all complete, all with GPU times.
# 2. A hidden hang (rank 2 never calls AllReduce #10) is a HANG naming rank 2, never "OK".
# 3. Several ranks per process (8 ranks, 2 processes): no send/recv size mismatch and no
#    incomplete instance that does not exist, with the defaults and with NCCLSCOPE_SAMPLE=64
#    (GPU times sampled, every operation still recorded).
# nccl-sim runs in model time (--clock model, docs/nccl-sim.md): what is checked does not depend on
# how loaded the machine is.
set -u
NS=$1 SIM=$2 PLUGIN=$3 W=$4
rm -rf "$W" && mkdir -p "$W"
fail() { echo "defaults check: FAILED: $*"; exit 1; }
unset NCCLSCOPE_MODE NCCLSCOPE_EVENTS NCCLSCOPE_CAPTURE NCCLSCOPE_KERNEL_SAMPLE NCCLSCOPE_SAMPLE \
  NCCLSCOPE_UNSAMPLED_EVENTS
export NCCLSCOPE_PLUGIN="$PLUGIN"
num() { grep -o "\"$2\":[0-9]*" "$1" | head -1 | cut -d: -f2; }

# 1
"$NS" record -o "$W/r1" -- "$SIM" --clock model --scenario allreduce --ranks 4 --iters 500 >"$W/r1.log" 2>&1 ||
  fail "record r1: $(tail -2 "$W/r1.log")"
"$NS" report --json "$W/r1" >"$W/r1.json" 2>"$W/r1.err" || fail "report r1: $(tail -2 "$W/r1.err")"
[ "$(num "$W/r1.json" instances)" = 500 ] && [ "$(num "$W/r1.json" rank_ops)" = 2000 ] &&
  [ "$(num "$W/r1.json" incomplete)" = 0 ] && [ "$(num "$W/r1.json" unsampled)" = 0 ] ||
  fail "r1: instances $(num "$W/r1.json" instances), ops $(num "$W/r1.json" rank_ops), incomplete $(num "$W/r1.json" incomplete), unsampled $(num "$W/r1.json" unsampled) (expected 500, 2000, 0, 0)"
"$NS" dump --stats "$W/r1" >"$W/r1.stats" 2>&1 || fail "dump --stats r1"
grep -q "completions 2000 (kernel 2000," "$W/r1.stats" || fail "r1: $(grep completions "$W/r1.stats" | tail -1)"
grep -q "sampling:" "$W/r1.stats" && fail "r1: sampled: $(grep sampling: "$W/r1.stats" | tail -1)"

# 2
"$NS" record -o "$W/hang" -- "$SIM" --clock model --scenario allreduce --ranks 4 --procs 4 --iters 20 \
  --fault skip:2:10 --hang-s 2 >"$W/hang.log" 2>&1
grep -q "rank 2 never called it" "$W/hang.log" || fail "the fault did not hang the job: $(tail -3 "$W/hang.log")"
"$NS" diagnose "$W/hang" >"$W/hang.txt" 2>&1
rc=$?
[ "$rc" != 0 ] || fail "diagnose said nothing is wrong (exit 0): $(head -5 "$W/hang.txt")"
grep -q "^OK" "$W/hang.txt" && fail "diagnose answered OK: $(head -5 "$W/hang.txt")"
grep -q "^HANG   rank 2 never entered AllReduce #10" "$W/hang.txt" || fail "no HANG naming rank 2: $(head -5 "$W/hang.txt")"

# 3
for v in "" NCCLSCOPE_SAMPLE=64; do
  n=mixed${v:+-sampled}
  env $v NCCLSCOPE_DIR="$W/$n" "$SIM" --plugin "$PLUGIN" --clock model --scenario mixed --ranks 8 --procs 2 --iters 100 \
    >"$W/$n.log" 2>&1 || fail "$n: $(tail -2 "$W/$n.log")"
  "$NS" report --json "$W/$n" >"$W/$n.json" 2>"$W/$n.err" || fail "report $n: $(tail -2 "$W/$n.err")"
  [ "$(num "$W/$n.json" bytes_mismatch)" = 0 ] && [ "$(num "$W/$n.json" incomplete)" = 0 ] ||
    fail "$n: bytes_mismatch $(num "$W/$n.json" bytes_mismatch), incomplete $(num "$W/$n.json" incomplete)"
  env $v NCCLSCOPE_DIR="$W/$n-ar" "$SIM" --plugin "$PLUGIN" --clock model --scenario allreduce --ranks 8 --procs 2 --iters 100 \
    >"$W/$n-ar.log" 2>&1 || fail "$n-ar: $(tail -2 "$W/$n-ar.log")"
  "$NS" report --json "$W/$n-ar" >"$W/$n-ar.json" 2>/dev/null || fail "report $n-ar"
  [ "$(num "$W/$n-ar.json" instances)" = 100 ] && [ "$(num "$W/$n-ar.json" incomplete)" = 0 ] ||
    fail "$n-ar: instances $(num "$W/$n-ar.json" instances), incomplete $(num "$W/$n-ar.json" incomplete) (expected 100, 0)"
done
echo "defaults check: ok"
