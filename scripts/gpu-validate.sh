#!/usr/bin/env bash
# gpu-validate.sh - the GPU checks of `ncclscope report` and `ncclscope diagnose` (docs/gpu.md):
#
#  busbw   ncs_perf AllReduce sweep (128 KiB .. 256 MiB, one process per GPU; timed on the GPU
#          back to back (--gpu-time), by the host's wall clock (eager), and as a CUDA graph)
#          recorded with ncclscope at its default events; the bus bandwidth ncs_perf measures is
#          set beside the p50 busbw `ncclscope report --json` gives for the same size
#          (table: busbw-<mode>.txt; for messages >= 1 MiB they should agree within 5%).
#  hang    ex_fork on every GPU, one process each; rank 1 sleeps before its 10th AllReduce while
#          the others wait inside it. Flight mode with a 4 s watchdog: the watchdog of a waiting
#          rank dumps and asks every process to dump; `ncclscope diagnose` must name rank 1.
#          Over NVLink (default events) and the socket transport (all events, proxy detail).
#
#  sample  the default group sampling (NCCLSCOPE_SAMPLE=64) on all five ops, eager and CUDA
#          graph, one process per GPU and one for all: ncs_perf must exit (no hang), and the
#          summary gives the sampled groups and the report's instances (incomplete: not
#          recorded by every rank) and kernel-timed operations.
#
# Environment: OUT (default ./gpu-validate-out), BUDGET_S (default 480), PARTS ("busbw hang";
# add "sample"), SAMPLE_ITERS (640), SAMPLE_TIMEOUT (150 s per run), SAMPLE_GRAPH ("0 1"),
# BUSBW_MODES ("gputime eager graph"), MIN_BYTES (131072: the sweep's first size, whose first operations are slower).
# Output: $OUT/summary.txt, $OUT/busbw-*.txt, $OUT/diagnose-*.txt, and everything else (logs,
# traces, dumps, JSON) in $OUT/gpu-validate.tgz.
set -uo pipefail
OUT=${OUT:-./gpu-validate-out}
BUDGET_S=${BUDGET_S:-480}
PARTS=${PARTS:-busbw hang}
mkdir -p "$OUT" && OUT=$(cd "$OUT" && pwd)
cd "$(dirname "$0")/.." || exit 1
W=$OUT/data
rm -rf "$W" && mkdir -p "$W/logs" "$W/traces"
GPU_TAG=gpu-validate
. scripts/gpu-common.sh
B=build-gpu
gpu_prepare "$B" "$W/build.log" || exit 1
PERF=$B/ncs_perf
NGPU=$(nvidia-smi -L 2>/dev/null | wc -l)
[ "$NGPU" -ge 2 ] || { gpu_say "needs 2 GPUs, found $NGPU"; exit 1; }
summary=$OUT/summary.txt
echo "gpu-validate $(date -u '+%F %T UTC'), $NGPU GPUs, NCCL ${NCCL_HOME:-system} (nccl.h $GPU_NCCL_HDR_VER)" >"$summary"
over() { [ $SECONDS -ge "$BUDGET_S" ]; }

# ---- busbw: ncs_perf's own figure vs the report's
busbw() { # mode: eager | graph
  local mode=$1 dir=$W/traces/busbw-$1 flags=()
  [ "$mode" = graph ] && flags=(--graph)
  [ "$mode" = gputime ] && flags=(--gpu-time)
  rm -rf "$dir"
  gpu_say "busbw $mode"
  NCCL_PROFILER_PLUGIN=$PLUGIN NCCLSCOPE_DIR=$dir timeout 240 "$PERF" --op allreduce --min "${MIN_BYTES:-131072}" \
    --max 268435456 --factor 2 --iters 100 --warmup 20 --procs --gpus "$NGPU" "${flags[@]}" \
    >"$W/logs/busbw-$mode.log" 2>&1 || { echo "busbw $mode: ncs_perf FAILED" >>"$summary"; return; }
  "$NCS" report --json "$dir" >"$W/busbw-$mode.json" 2>"$W/logs/busbw-$mode.report.log"
  python3 - "$W/logs/busbw-$mode.log" "$W/busbw-$mode.json" "$mode" >"$OUT/busbw-$mode.txt" <<'PY'
import json, math, re, sys
perf = {}
for line in open(sys.argv[1]):
    if line.startswith("perf:"):
        kv = dict(x.split("=", 1) for x in line.split()[1:] if "=" in x)
        if "bytes" not in kv or "busbw" not in kv:
            continue  # the header line
        perf[int(kv["bytes"])] = (float(kv["busbw"]), float(kv["time_us"]))
rep = json.load(open(sys.argv[2]))
buckets = {}
for b in rep.get("buckets", []):
    if b.get("func") == "AllReduce" and not b.get("p2p"):
        buckets[int(b["bytes_lo"])] = b
print(f"AllReduce, {sys.argv[3]}: ncs_perf busbw (its own timing: mean over the loop) vs ncclscope report "
      "throughput busbw p50 (kernel start to next kernel start) and kernel busbw p50 (transfer time)")
print("| bytes | ncs_perf us | ncs_perf busbw GB/s | report tput busbw p50 | diff | report kernel busbw p50 | samples |")
print("|---:|---:|---:|---:|---:|---:|---:|")
worst = 0.0
for size in sorted(perf):
    pb, pt = perf[size]
    b = buckets.get(1 << int(math.log2(size)))
    if not b:
        print(f"| {size} | {pt:.1f} | {pb:.2f} | - | no bucket | - | - |")
        continue
    tb = b.get("tput_busbw_p50_gbs")  # null: no throughput sample
    kb = b.get("busbw_p50_gbs")  # null: no operation of the size has a GPU time
    if tb is None:
        print(f"| {size} | {pt:.1f} | {pb:.2f} | - | no sample | {'-' if kb is None else f'{kb:.2f}'} | 0 |")
        continue
    d = (tb - pb) / pb * 100 if pb else float("nan")
    if size >= 1 << 20: worst = max(worst, abs(d))
    print(f"| {size} | {pt:.1f} | {pb:.2f} | {tb:.2f} | {d:+.1f}% | {'-' if kb is None else f'{kb:.2f}'} | {b.get('tput_samples', 0)} |")
print(f"worst |diff| at >= 1 MiB: {worst:.1f}%")
PY
  tail -1 "$OUT/busbw-$mode.txt" | sed "s/^/busbw $mode: /" >>"$summary"
}

# ---- hang: a stalled rank, watchdog dumps, diagnose
hang() { # transport
  local tr=$1 dir=$W/traces/hang-$1 envs=(NCCLSCOPE_EVENTS=default)
  [ "$tr" = socket ] && envs=(NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_NET=Socket NCCL_IB_DISABLE=1
                              NCCLSCOPE_EVENTS=all)
  rm -rf "$dir"
  gpu_say "hang $tr"
  local t0=$SECONDS
  env "${envs[@]}" NCCL_PROFILER_PLUGIN=$PLUGIN NCCLSCOPE_DIR=$dir NCCLSCOPE_MODE=flight \
    NCCLSCOPE_WATCHDOG_S=4 NCCLSCOPE_FLIGHT_SIZE=1M timeout 120 "$B/examples/ex_fork" \
    --ranks "$NGPU" --iters 20 --count 262144 --stall-rank 1 --stall-at 10 --stall-s 12 \
    --timeout 100 >"$W/logs/hang-$tr.log" 2>&1
  local rc=$?
  "$NCS" dump --stats "$dir/dumps" >"$W/hang-$tr.dumps.stats" 2>&1
  "$NCS" diagnose "$dir" >"$OUT/diagnose-$tr.txt" 2>&1
  local drc=$?
  "$NCS" diagnose --json "$dir" >"$W/diagnose-$tr.json" 2>&1
  local nd
  nd=$(ls "$dir"/dumps/*.nsflight 2>/dev/null | wc -l)
  echo "hang $tr: ex_fork rc=$rc in $((SECONDS - t0))s, $nd dumps, diagnose rc=$drc: $(head -3 "$OUT/diagnose-$tr.txt" | tr '\n' ' ')" >>"$summary"
}

# ---- sample: the default (group sampling, 1 in 64) on every op, eager and graph, one process per
# GPU and one for all: no hang (NCCL 2.28 hangs at destroy when KernelCh changes between groups
# with send/recv), every rank records the same groups, the sampled ones have GPU times
sample() { # procs(0|1) graph(0|1) ops
  local procs=$1 graph=$2 ops=$3 flags=() id
  [ "$procs" = 1 ] && flags+=(--procs)
  [ "$graph" = 1 ] && flags+=(--graph)
  id=sample-p$procs-g$graph-${ops//,/+}
  local dir=$W/traces/$id t0=$SECONDS
  rm -rf "$dir"
  gpu_say "$id"
  NCCL_PROFILER_PLUGIN=$PLUGIN NCCLSCOPE_DIR=$dir timeout "${SAMPLE_TIMEOUT:-150}" "$PERF" --op "$ops" --min 8 --max 1M \
    --factor 16 --iters "${SAMPLE_ITERS:-640}" --warmup 5 "${flags[@]}" >"$W/logs/$id.log" 2>&1
  local rc=$?
  "$NCS" dump --stats "$dir" >"$W/$id.stats" 2>&1
  "$NCS" report --json "$dir" >"$W/$id.json" 2>"$W/$id.report.err"
  local smp rep
  smp=$(grep -h "sampling:" "$W/$id.stats" | tail -1 | sed 's/^ *//')
  rep=$(python3 - "$W/$id.json" <<'PY' 2>&1
import json, sys
d = json.load(open(sys.argv[1]))
c, p = d["collectives"], d.get("p2p", {})
timed = sum(b.get("timing", {}).get("kernel_gpu", 0) for b in d.get("buckets", []))
print("collective instances %d (incomplete %d, unsampled %d, gpu_suspect %d), kernel-timed %d; p2p %s"
      % (c["instances"], c["incomplete"], c["unsampled"], c["gpu_suspect"], timed,
         {k: v for k, v in p.items() if isinstance(v, int)}))
PY
)
  echo "$id: ncs_perf rc=$rc in $((SECONDS - t0))s; $smp; $rep" >>"$summary"
}

for p in $PARTS; do
  case $p in
  busbw) for m in ${BUSBW_MODES:-gputime eager graph}; do over || busbw $m; done ;;
  hang) for t in nvlink socket; do over || hang $t; done ;;
  sample)
    for g in ${SAMPLE_GRAPH:-0 1}; do for pr in 1 0; do for ops in allreduce,allgather,reducescatter alltoall,sendrecv; do
      over || sample $pr $g $ops
    done; done; done ;;
  *) gpu_say "unknown part $p" ;;
  esac
done
over && echo "time budget of ${BUDGET_S}s reached; later parts skipped" >>"$summary"
cat "$summary"
tar -C "$OUT" -czf "$OUT/gpu-validate.tgz" data && rm -rf "$W"
