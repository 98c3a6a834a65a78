#!/usr/bin/env bash
# gpu-truth.sh - capture the real-job fixtures of "true GPU times" on this machine's GPUs
# (docs/gpu.md, "Real-job fixtures"): a PyTorch job (scripts/gpu-torch-job.py) healthy, with a
# straggler, with one 1 s stall and with a rank that never joins (trace and flight mode), the
# healthy job's twin under CUPTI (the reference for GPU times), and ncs_perf sweeps (eager and
# CUDA graph, 8 B to 256 MiB, each with its CUPTI twin; one over the socket transport with every
# event). Every run is recorded with ncclscope's defaults unless its row says otherwise.
#
# Usage: OUT=dir scripts/gpu-truth.sh [RUN...]        (default: every run of the table below)
# Environment (all optional):
#   OUT        output directory (default ./gpu-truth-out)
#   NGPU       processes (one per GPU; default: every GPU nvidia-smi lists)
#   NCCL_HOME  the NCCL to build and run with (scripts/gpu-common.sh); a torch job then gets it
#              through LD_PRELOAD, so PyTorch's process group runs on it
#   BUDGET_S   seconds for everything, build included (default 540); a run that would start
#              after BUDGET_S - its own estimate is SKIPPED (said in summary.txt)
#   ITERS      iterations of the PyTorch job (default 60); PERF_ITERS ncs_perf --iters (10);
#              TPUT_ITERS the iterations of the throughput sweep, 1 MiB to 256 MiB (40)
#   TAG        a name for this capture (default: <NGPU>gpu-nccl<version>), used in the packs
#   BUILD_DIR  the build directory (default build-gpu; another per NCCL_HOME)
# Output ($OUT): packs of at most 16 MiB each (the device tool brings back at most 8 files):
# <TAG>-torch.tar.xz, <TAG>-perf.tar.xz, <TAG>-perf2.tar.xz (traces/<run>/ with the trace files
# and the job's log), <TAG>-logs.tar.xz (logs/: every run's output, build.log, summary.txt,
# gpu.txt). The summary is printed at the end as well.
set -uo pipefail
START=$SECONDS
OUT=${OUT:-./gpu-truth-out}
mkdir -p "$OUT" || exit 1
OUT=$(cd "$OUT" && pwd)
cd "$(dirname "$0")/.." || exit 1
BUDGET_S=${BUDGET_S:-540}
ITERS=${ITERS:-60}
PERF_ITERS=${PERF_ITERS:-10}
W=$OUT/work
rm -rf "$W" && mkdir -p "$W/traces" "$W/logs"
summary=$W/logs/summary.txt
: >"$summary"
GPU_TAG=gpu-truth
. scripts/gpu-common.sh
B=${BUILD_DIR:-build-gpu}
gpu_prepare "$B" "$W/logs/build.log" || { tail -20 "$W/logs/build.log"; exit 1; }
NGPU=${NGPU:-$(nvidia-smi -L 2>/dev/null | wc -l)}
[ "$NGPU" -ge 2 ] || { gpu_say "needs 2 GPUs or more (NGPU=$NGPU): a one-rank communicator emits no collective events"; exit 1; }
NCCL_VER=$(python3 -c 'import torch; print(".".join(map(str, torch.cuda.nccl.version())))' 2>/dev/null || echo unknown)
[ -n "${NCCL_HOME:-}" ] && [ -f "$NCCL_HOME/include/nccl.h" ] && NCCL_VER=$GPU_NCCL_HDR_VER
TAG=${TAG:-${NGPU}gpu-nccl$NCCL_VER}
export NCCL_NVLS_ENABLE=0 TORCH_NCCL_ASYNC_ERROR_HANDLING=0 PYTHONUNBUFFERED=1
# a torch job on another NCCL than the wheel's: preload it (the wheel's libnccl is then unused)
PRE=()
[ -n "${NCCL_HOME:-}" ] && [ -e "$NCCL_HOME/lib/libnccl.so.2" ] && PRE=(env LD_PRELOAD="$NCCL_HOME/lib/libnccl.so.2")
gpu_say "TAG=$TAG NGPU=$NGPU built after $((SECONDS - START)) s"
nvidia-smi --query-gpu=index,name,pci.bus_id,clocks.sm,clocks.max.sm --format=csv >"$W/logs/gpu.txt" 2>&1
nvidia-smi topo -m >>"$W/logs/gpu.txt" 2>&1

left() { echo $((BUDGET_S - (SECONDS - START))); }
# run NAME ESTIMATE_S TIMEOUT_S [record options] -- CMD...: record CMD into traces/NAME
run() {
  local name=$1 est=$2 tmo=$3
  shift 3
  local ropts=()
  while [ $# -gt 0 ] && [ "$1" != -- ]; do ropts+=("$1"); shift; done
  shift
  if [ "$(left)" -lt "$est" ]; then
    echo "$name: SKIPPED (budget: $(left) s left, needs about $est)" | tee -a "$summary"
    return
  fi
  local d=$W/traces/$name t0=$SECONDS rc
  gpu_say "run $name"
  timeout -s INT "$tmo" "$B/ncclscope" record -o "$d" --grace 5 "${ropts[@]}" -- "$@" >"$W/logs/$name.log" 2>&1
  rc=$?
  cp "$W/logs/$name.log" "$d/job.log" 2>/dev/null
  "$B/ncclscope" report "$d" >"$W/logs/$name.report.txt" 2>&1
  "$B/ncclscope" diagnose "$d" >"$W/logs/$name.diagnose.txt" 2>&1
  local n sz
  n=$(ls "$d" 2>/dev/null | grep -c '\.ns\(trace\|flight\)$')
  sz=$(du -sk "$d" 2>/dev/null | cut -f1)
  echo "$name: rc=$rc in $((SECONDS - t0)) s, $n files, ${sz} KiB; diagnose: $(grep -m1 -E '^(OK|HANG|DEAD|DESYNC|CANNOT)' "$W/logs/$name.diagnose.txt")" | tee -a "$summary"
}

TORCH=("${PRE[@]}" torchrun --standalone --nproc-per-node "$NGPU" scripts/gpu-torch-job.py --iters "$ITERS")
PERF=("$B/ncs_perf" --procs --op all --min 8 --max 256M --factor 2 --iters "$PERF_ITERS" --warmup 2)
TPUT=("$B/ncs_perf" --procs --op allreduce,allgather,reducescatter --min 1M --max 256M --factor 2 --iters "${TPUT_ITERS:-40}" --warmup 5)
SOCK=(env NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_NET=Socket NCCL_IB_DISABLE=1)
want() { [ $# -eq 0 ] && return 0; local x; for x in "${SEL[@]}"; do [ "$x" = "$1" ] && return 0; done; return 1; }
SEL=("$@")
sel() { [ ${#SEL[@]} -eq 0 ] && return 0; want "$1"; }

# The runs, most needed first (the budget may end the list).
sel torch-healthy && run torch-healthy 40 120 -- "${TORCH[@]}" --scenario healthy
sel torch-healthy-cupti && run torch-healthy-cupti 40 120 --cupti on -- "${TORCH[@]}" --scenario healthy
sel perf-eager && run perf-eager 60 200 -- "${PERF[@]}"
sel perf-eager-cupti && run perf-eager-cupti 60 200 --cupti on -- "${PERF[@]}"
sel perf-tput && run perf-tput 40 200 -- "${TPUT[@]}"
sel torch-hang && run torch-hang 40 30 -- "${TORCH[@]}" --scenario hang --rank 1 --at 5
sel torch-stall && run torch-stall 40 120 -- "${TORCH[@]}" --scenario stall --rank 0 --at 20
sel torch-straggler && run torch-straggler 40 120 -- "${TORCH[@]}" --scenario straggler --rank 1 --sleep-ms 3
sel torch-hang-flight && NCCLSCOPE_WATCHDOG_S=4 NCCLSCOPE_FLIGHT_SIZE=2M run torch-hang-flight 40 30 --mode flight -- "${TORCH[@]}" --scenario hang --rank 1 --at 5
sel perf-graph && run perf-graph 60 200 -- "${PERF[@]}" --graph
sel perf-graph-cupti && run perf-graph-cupti 60 200 --cupti on -- "${PERF[@]}" --graph
sel perf-socket && run perf-socket 60 200 --events all -- "${SOCK[@]}" "$B/ncs_perf" --procs --op allreduce --min 1M --max 64M --factor 4 --iters 20 --warmup 2

# ---- packs: <= 16 MiB each (the device tool brings back at most 8 files of 16 MiB)
pack() { # NAME GLOB...
  local name=$1
  shift
  (cd "$W" && tar -cf - "$@" 2>/dev/null | xz -T0 -6 >"$OUT/$TAG-$name.tar.xz")
  local sz
  sz=$(stat -c %s "$OUT/$TAG-$name.tar.xz" 2>/dev/null || echo 0)
  echo "pack $TAG-$name.tar.xz: $((sz / 1024)) KiB" | tee -a "$summary"
}
# globs are expanded in $W
packg() { # NAME GLOB...
  local name=$1 l
  shift
  l=$(cd "$W" && for g in "$@"; do ls -d $g 2>/dev/null; done)
  [ -n "$l" ] && pack "$name" $l
}
packg torch 'traces/torch-*'
packg perf 'traces/perf-eager*' traces/perf-tput
packg perf2 'traces/perf-graph*' traces/perf-socket
pack logs logs
echo "total $((SECONDS - START)) s" | tee -a "$summary"
rm -rf "$W"
