#!/usr/bin/env bash
# gpu-scale.sh - ncclscope on every GPU of a bigger machine (4 or 8 GPUs), all events on:
#   examples   the example suite under `ncclscope record` (scripts/gpu-run.sh, NVLink)
#   algos      ncs_perf AllReduce, one process per GPU, ring and tree at 2 and 16 channels
#              (NCCL_ALGO, NCCL_MIN/MAX_NCHANNELS); report and Perfetto timeline of each job
#   hang       ex_fork on every GPU; rank 2 stalls before its 11th AllReduce; flight mode with a
#              4 s watchdog; `ncclscope diagnose`
#   overhead   bench/overhead.sh, one process per GPU, 8 B to 1 MiB
# Environment: OUT (default ./gpu-scale-out), BUDGET_S (default 500), PARTS.
# Output: $OUT/summary.txt, $OUT/report-*.txt (first job), $OUT/diagnose.txt, $OUT/overhead.md,
# and $OUT/gpu-scale.tgz with the rest.
set -uo pipefail
OUT=${OUT:-./gpu-scale-out}
BUDGET_S=${BUDGET_S:-500}
PARTS=${PARTS:-examples algos hang overhead}
mkdir -p "$OUT" && OUT=$(cd "$OUT" && pwd)
cd "$(dirname "$0")/.." || exit 1
W=$OUT/data
rm -rf "$W" && mkdir -p "$W/logs" "$W/traces"
GPU_TAG=gpu-scale
. scripts/gpu-common.sh
B=build-gpu
gpu_prepare "$B" "$W/build.log" || exit 1
N=$(nvidia-smi -L | wc -l)
S=$OUT/summary.txt
echo "gpu-scale $(date -u '+%F %T UTC'), $N GPUs, NCCL ${NCCL_HOME:-system} (nccl.h $GPU_NCCL_HDR_VER)" >"$S"
left() { echo $((BUDGET_S - SECONDS)); }

for p in $PARTS; do
  [ "$(left)" -gt 40 ] || { echo "$p: skipped (time budget)" >>"$S"; continue; }
  case $p in
  examples)
    OUT=$W/examples TRANSPORTS=nvlink ITERS=5 BUDGET_S=$(( $(left) / 3 )) PACK=0 \
      scripts/gpu-run.sh >"$W/logs/examples.log" 2>&1
    echo "examples: rc=$?" >>"$S"
    sed 's/^/  /' "$W/examples/summary.txt" >>"$S" 2>/dev/null
    ;;
  algos)
    for algo in Ring Tree; do
      for ch in 2 16; do
        d=$W/traces/perf-$algo-$ch
        NCCL_ALGO=$algo NCCL_MIN_NCHANNELS=$ch NCCL_MAX_NCHANNELS=$ch NCCL_PROFILER_PLUGIN=$PLUGIN \
          NCCLSCOPE_DIR=$d NCCLSCOPE_EVENTS=all timeout 120 "$B/ncs_perf" --op allreduce,allgather \
          --min 8 --max 64M --factor 8 --iters 20 --warmup 3 --procs --gpus "$N" \
          >"$W/logs/perf-$algo-$ch.log" 2>&1
        rc=$?
        "$NCS" report "$d" >"$W/report-$algo-$ch.txt" 2>&1
        "$NCS" export "$d" --format perfetto -o "$W/perf-$algo-$ch.pftrace" >/dev/null 2>&1
        algos_seen=$("$NCS" dump "$d" 2>/dev/null | grep -o "algo=[A-Z_]*" | sort | uniq -c | tr '\n' ' ')
        chans=$("$NCS" dump "$d" 2>/dev/null | grep -o " nChannels=[0-9]*" | sort | uniq -c | tr '\n' ' ')
        echo "algos $algo/$ch ch: ncs_perf rc=$rc; recorded: $algos_seen; $chans" >>"$S"
        grep -m1 "busbw" "$W/logs/perf-$algo-$ch.log" >/dev/null &&
          tail -1 "$W/logs/perf-$algo-$ch.log" | sed 's/^/  last: /' >>"$S"
      done
    done
    cp "$W/report-Ring-16.txt" "$OUT/report-ring16.txt" 2>/dev/null
    ;;
  hang)
    d=$W/traces/hang
    NCCL_PROFILER_PLUGIN=$PLUGIN NCCLSCOPE_DIR=$d NCCLSCOPE_MODE=flight NCCLSCOPE_WATCHDOG_S=4 \
      NCCLSCOPE_FLIGHT_SIZE=1M timeout 120 "$B/examples/ex_fork" --ranks "$N" --iters 20 \
      --count 262144 --stall-rank 2 --stall-at 10 --stall-s 12 --timeout 100 >"$W/logs/hang.log" 2>&1
    rc=$?
    "$NCS" diagnose "$d" >"$OUT/diagnose.txt" 2>&1
    drc=$?
    echo "hang: ex_fork rc=$rc, $(ls "$d"/dumps/*.nsflight 2>/dev/null | wc -l) dumps, diagnose rc=$drc: $(sed -n 4p "$OUT/diagnose.txt")" >>"$S"
    ;;
  overhead)
    bash bench/overhead.sh -b "$B" -o "$W/overhead" --transport nvlink --ops allreduce -r 4 \
      --min 8 --max 1M --factor 16 --iters 50 --procs on --budget $(( $(left) - 30 )) \
      >"$W/logs/overhead.log" 2>&1
    echo "overhead: rc=$?" >>"$S"
    cp "$W/overhead/summary.md" "$OUT/overhead.md" 2>/dev/null
    ;;
  esac
done
cat "$S"
tar -C "$OUT" -czf "$OUT/gpu-scale.tgz" data && rm -rf "$W"
