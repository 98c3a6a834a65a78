#!/usr/bin/env bash
# cost.sh - what the default costs a real NCCL job, side by side (issue 37; docs/benchmarks.md,
# "What the default costs"): ncs_perf over every level that matters, in one run, shuffled into
# balanced orders (bench/overhead.sh's Williams design), each level as often as the others:
#   none, none-again        no plugin, twice: the noise floor (two identical levels)
#   empty-default           bench/empty_plugin.c asking NCCL for ncclscope's default events: NCCL's
#                           own cost of those events, the floor of ncclscope's
#   ncclscope-default, ncclscope-flight   ncclscope's default, and flight mode
#   nvidia-example, nvidia-inspector      NVIDIA's example plugin (NCCL_PROFILE_EVENT_MASK set
#                           to ncclscope's default mask) and Inspector (NCCL_INSPECTOR_ENABLE=1),
#                           built from NCCL_PLUGIN_SRC when it is given
# It prints bench/overhead.sh's tables, then the paired differences in us per operation with
# their 95% bootstrap intervals: ncclscope's own cost over its floor, and the noise floor.
#
# Usage: bench/cost.sh [bench/overhead.sh options...]   (run on a machine with 2 or more GPUs)
# Environment:
#   BUILD            the build with ncs_perf and the plugins (default build-gpu)
#   OUT              output directory (default ./cost-out)
#   NCCL_PLUGIN_SRC  a directory holding ext-profiler/example and ext-profiler/inspector of the
#                    NCCL release that runs (git archive of NCCL's tag); unset: those levels are left out
#   CUDA_HOME        for the NVIDIA plugins' headers (default /usr/local/cuda)
#   SCRATCH          where the NVIDIA plugins write their dumps (default $OUT/scratch)
#   PIN              a CPU list for taskset (default: the CPUs of GPU 0's NUMA node when
#                    nvidia-smi says, else none)
#   REPS MIN MAX FACTOR ITERS   (default 8, 8, 16M, 8, 1000)
#   TORCH_REPS TORCH_ITERS NGPU  the PyTorch loop: rounds (default 3; 0 skips it), iterations per
#                    run (400), processes (every GPU)
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
BUILD=${BUILD:-build-gpu} OUT=${OUT:-./cost-out}
mkdir -p "$OUT/plugins" || exit 1
OUT=$(cd "$OUT" && pwd)
say() { echo "cost: $*"; }
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
SCRATCH=${SCRATCH:-$OUT/scratch} # the NVIDIA plugins' own dumps
mkdir -p "$SCRATCH" || exit 1
levels=()
if [ -n "${NCCL_PLUGIN_SRC:-}" ]; then
  ex=$NCCL_PLUGIN_SRC/ext-profiler/example ins=$NCCL_PLUGIN_SRC/ext-profiler/inspector
  if [ -d "$ex" ] && (cd "$ex" && g++ -O2 -Inccl -I"$CUDA_HOME/include" -fPIC -shared \
      -o "$OUT/plugins/libnccl-profiler-example.so" ./*.cc) >"$OUT/plugins/example.log" 2>&1; then
    # the example plugin asks for what NCCL_PROFILE_EVENT_MASK says: ncclscope's default events
    # (group, coll, p2p, kernel, groupapi, collapi, p2papi, launch = 0xf47)
    levels+=(--add-level "nvidia-example ext - NCCL_PROFILER_PLUGIN=$OUT/plugins/libnccl-profiler-example.so NCCL_PROFILE_EVENT_MASK=3911 NCCL_PROFILE_DUMP_FILE=$SCRATCH/example-dump")
    say "built NVIDIA's example plugin"
  else
    say "NVIDIA's example plugin did not build (plugins/example.log): left out"
  fi
  if [ -d "$ins" ] && (cd "$ins" && printf '#include "version.h"\nconst char* get_git_version_info() { return "release"; }\n' >version.cc &&
      g++ -O3 -DNDEBUG -Inccl -I"$CUDA_HOME/include" -fPIC -shared -o "$OUT/plugins/libnccl-profiler-inspector.so" \
      inspector_plugin.cc inspector.cc json.cc version.cc) >"$OUT/plugins/inspector.log" 2>&1; then
    levels+=(--add-level "nvidia-inspector ext - NCCL_PROFILER_PLUGIN=$OUT/plugins/libnccl-profiler-inspector.so NCCL_INSPECTOR_ENABLE=1 NCCL_INSPECTOR_DUMP_DIR=$SCRATCH/inspector-dump")
    say "built NVIDIA's Inspector plugin"
  else
    say "NVIDIA's Inspector plugin did not build (plugins/inspector.log): left out"
  fi
fi
PIN=${PIN-auto}
if [ "$PIN" = auto ]; then
  PIN=
  if command -v nvidia-smi >/dev/null; then
    PIN=$(nvidia-smi topo -m 2>/dev/null | awk '$1 == "GPU0" { for (i = 2; i <= NF; i++) if ($i ~ /^[0-9]+(-[0-9]+)?(,[0-9]+(-[0-9]+)?)*$/ && $i ~ /-/) { print $i; exit } }')
  fi
fi
pin=()
if [ -n "$PIN" ] && taskset -c "$PIN" true 2>/dev/null; then
  pin=(--pin "$PIN") && say "pinned to CPUs $PIN (GPU 0's affinity)"
elif [ -n "$PIN" ]; then
  say "cannot run on CPUs '$PIN': not pinned"
fi
bench/overhead.sh -b "$BUILD" -o "$OUT" -r "${REPS:-8}" --min "${MIN:-8}" --max "${MAX:-16M}" \
  --factor "${FACTOR:-8}" --iters "${ITERS:-1000}" --warmup 20 --noise \
  --levels ncclscope-default,ncclscope-flight,none-again$( [ ${#levels[@]} -gt 0 ] && printf ',%s' $(for l in "${levels[@]}"; do case $l in --add-level) ;; *) echo "${l%% *}" ;; esac; done)) \
  "${pin[@]}" "${levels[@]}" "$@"
rc=$?

# ---- a PyTorch loop (scripts/gpu-torch-job.py: a matmul and seven collectives per iteration, one
# process per GPU), TORCH_REPS rounds of none, empty-default and ncclscope-default in a rotating
# order; the time per iteration is the slowest rank's wall time / iterations
TORCH_REPS=${TORCH_REPS:-3} TORCH_ITERS=${TORCH_ITERS:-400}
NGPU=${NGPU:-$(nvidia-smi -L 2>/dev/null | wc -l)}
if [ "$TORCH_REPS" -gt 0 ] && [ "$NGPU" -ge 2 ] && python3 -c 'import torch' 2>/dev/null; then
  T=$OUT/torch && mkdir -p "$T"
  : >"$T/results.tsv"
  lv=(none empty-default ncclscope-default)
  for ((r = 1; r <= TORCH_REPS; r++)); do
    for ((i = 0; i < 3; i++)); do
      l=${lv[$(((i + r) % 3))]} e=()
      case $l in
      empty-default) e=(NCCL_PROFILER_PLUGIN="$(realpath "$BUILD/libnccl-profiler-empty.so")" NCS_EMPTY_EVENTS=default) ;;
      ncclscope-default) e=(NCCL_PROFILER_PLUGIN="$(realpath "$BUILD/libnccl-profiler-ncclscope.so")" NCCLSCOPE_DIR="$T/trace-r$r") ;;
      esac
      log=$T/$l-r$r.log
      env -u NCCL_PROFILER_PLUGIN "${e[@]}" NCCL_NVLS_ENABLE=0 timeout -k 5 180 torchrun --standalone \
        --nproc-per-node "$NGPU" scripts/gpu-torch-job.py --iters "$TORCH_ITERS" >"$log" 2>&1
      w=$(sed -n 's/.*done wall_s=\([0-9.]*\).*/\1/p' "$log" | sort -g | tail -1)
      say "torch $l r$r: ${w:-FAILED} s for $TORCH_ITERS iterations"
      [ -n "$w" ] && printf '%s\t%s\t%s\n' "$l" "$r" "$w" >>"$T/results.tsv"
      rm -rf "$T/trace-r$r"
    done
  done
  python3 - "$T/results.tsv" "$TORCH_ITERS" <<'PY'
import sys, statistics as st
rows = [l.split("\t") for l in open(sys.argv[1]) if l.strip()]
it = int(sys.argv[2])
by = {}
for l, r, w in rows:
    by.setdefault(l, {})[r] = float(w) / it * 1e3
print("\n## PyTorch loop: ms per iteration (slowest rank; median [min, max] over rounds)\n")
print("| level | ms/iteration | over none (paired median) |")
print("|---|---:|---:|")
for l in ("none", "empty-default", "ncclscope-default"):
    v = by.get(l, {})
    if not v:
        print("| %s | - | - |" % l); continue
    n = by.get("none", {})
    d = [v[r] / n[r] - 1 for r in v if r in n]
    print("| %s | %.3f [%.3f, %.3f] | %s |" % (l, st.median(v.values()), min(v.values()), max(v.values()),
                                         "%+.1f%%" % (100 * st.median(d)) if d and l != "none" else "-"))
PY
else
  say "PyTorch loop skipped (TORCH_REPS=0, fewer than 2 GPUs, or no torch)"
fi
exit "$rc"
