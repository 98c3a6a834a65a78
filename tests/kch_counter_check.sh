#!/bin/sh
# kch_counter_check.sh SIM PLUGIN EMPTY WORKDIR - nccl-sim's model of NCCL's KernelCh work
# counters (docs/nccl-sim.md "KernelCh work counters") and the sampling plugins' CUDA graph rule
# (docs/config.md "Sampling").
# 1. The hazard: with --toggle-kch 4 (KernelCh on for one group in 4, like a naive sampling
#    plugin) a graph whose captured group has no KernelCh is replayed, and later groups with
#    KernelCh wait for ring slots the GPU never writes: kch_stuck > 0, the message, exit 5. The
#    same job without toggling, and toggling between eager groups only, leave nothing stuck.
# 2. ncclscope's plugin, NCCLSCOPE_SAMPLE=4 and 64, the capture sampled (--capture-at 0, the
#    first group) and not sampled (--capture-at 1): nothing stuck, exit 0, and the plugin says
#    through NCCL's logger that sampling stopped at the capture, sampled or not as expected.
# 3. The empty plugin (NCS_EMPTY_EVENTS=default NCS_EMPTY_SAMPLE=4), both captures: nothing stuck.
set -u
SIM=$1 PLUGIN=$2 EMPTY=$3 W=$4
rm -rf "$W" && mkdir -p "$W"
fail() { echo "kch counter check: FAILED: $*"; exit 1; }
unset NCCLSCOPE_MODE NCCLSCOPE_EVENTS NCCLSCOPE_CAPTURE NCCLSCOPE_KERNEL_SAMPLE NCCLSCOPE_SAMPLE \
  NCCLSCOPE_UNSAMPLED_EVENTS NCS_EMPTY_EVENTS NCS_EMPTY_SAMPLE NCS_EMPTY_KERNEL_SAMPLE \
  NCS_EMPTY_UNSAMPLED_EVENTS
# sim NAME [VAR=value ...] -- ARGS: runs nccl-sim (2 ranks, one process each, so that every
# rank's groups are numbered alike), keeps its output in $W/NAME.out and its status in $rc
sim() {
  name=$1; shift
  (
    # shellcheck disable=SC2163 # "$1" is VAR=value
    while [ "$1" != "--" ]; do export "$1"; shift; done
    shift
    exec "$SIM" --ranks 2 --procs 2 --iters 20 "$@"
  ) >"$W/$name.out" 2>&1
  rc=$?
}
# key NAME KEY: a number of the "nccl-sim:" summary line
key() { sed -n "s/^nccl-sim: .* $2=\\([0-9]*\\) .*/\\1/p" "$W/$1.out"; }
# clean NAME: ran to the end, nothing stuck
clean() {
  [ "$rc" = 0 ] || fail "$1: exit status $rc: $(tail -3 "$W/$1.out")"
  [ "$(key "$1" kch_stuck)" = 0 ] || fail "$1: kch_stuck=$(key "$1" kch_stuck)"
  grep -q "would wait forever" "$W/$1.out" && fail "$1: stuck message"
  return 0
}

# 1. the hazard, and two jobs without it
sim naive -- --plugin none --scenario graph --toggle-kch 4 --capture-at 1
s=$(key naive kch_stuck)
[ -n "$s" ] || fail "naive: no summary: $(tail -3 "$W/naive.out")"
[ "$s" -gt 0 ] || fail "naive toggling around a graph: kch_stuck=$s (the model missed the hazard)"
[ "$rc" = 5 ] || fail "naive: exit status $rc, expected 5"
grep -q "^nccl-sim: $s KernelCh work items would wait forever (NCCL hangs at communicator destroy)" \
  "$W/naive.out" || fail "naive: no message: $(tail -2 "$W/naive.out")"
sim plain -- --plugin none --scenario graph --capture-at 1
clean plain
[ "$(key plain graph_colls)" -gt 0 ] || fail "plain: no graph replays"
sim eager -- --plugin none --scenario allreduce --toggle-kch 4
clean eager

# 2. ncclscope: the capture ends sampling, sampled (the first group) or not
for n in 4 64; do
  for at in 0 1; do
    c=ncs-$n-$at
    sim $c NCCLSCOPE_SAMPLE=$n NCCLSCOPE_DIR="$W/$c" -- --plugin "$PLUGIN" --scenario graph \
      --capture-at $at --verbose
    clean $c
    if [ $at = 0 ]; then how="which was sampled"; else how="which was not sampled"; fi
    grep -q "sampling (NCCLSCOPE_SAMPLE=$n) stopped at the first CUDA graph capture, $how" \
      "$W/$c.out" || fail "$c: no message that sampling stopped at a capture $how: \
$(grep -i 'sampling' "$W/$c.out" | head -2)"
    [ $at = 1 ] || [ "$(key $c graph_colls)" -gt 0 ] || fail "$c: no Coll of a graph replay"
  done
done

# 3. the empty plugin
for at in 0 1; do
  sim empty-$at NCS_EMPTY_EVENTS=default NCS_EMPTY_SAMPLE=4 -- --plugin "$EMPTY" --scenario graph \
    --capture-at $at
  clean empty-$at
done

# 3b. a communicator created after an unsampled capture (and three replays) must not bring
#     KernelCh back (an init that wrote the full mask left 2-4 items stuck here)
for at in 1 2; do
  sim late-$at NCCLSCOPE_SAMPLE=4 NCCLSCOPE_DIR="$W/late-$at" -- --plugin "$PLUGIN" --scenario graph \
    --capture-at $at --late-comm
  clean late-$at
  sim elate-$at NCS_EMPTY_EVENTS=default NCS_EMPTY_SAMPLE=4 -- --plugin "$EMPTY" --scenario graph \
    --capture-at $at --late-comm
  clean elate-$at
done

# 4. ABI v4 has no GroupApi and no graphCaptured: ncclscope and the empty plugin do not sample
#    there (toggling KernelCh per plan, as they once did, leaves items stuck with a late capture)
for at in 3 6; do
  sim v4-$at NCCLSCOPE_SAMPLE=4 NCCLSCOPE_DIR="$W/v4-$at" -- --plugin "$PLUGIN" --abi 4 \
    --scenario graph --capture-at $at --verbose
  clean v4-$at
  grep -q "sampling (NCCLSCOPE_SAMPLE=4) needs NCCL 2.28 or later" "$W/v4-$at.out" ||
    fail "v4-$at: no message that sampling needs ABI v5"
  sim ev4-$at NCS_EMPTY_EVENTS=default NCS_EMPTY_SAMPLE=4 -- --plugin "$EMPTY" --abi 4 \
    --scenario graph --capture-at $at
  clean ev4-$at
done
echo "kch counter check: ok (naive toggling: $s KernelCh work items stuck)"
