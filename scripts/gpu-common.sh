# gpu-common.sh - sourced by the GPU scripts (gpu-run.sh, gpu-validate.sh, gpu-overhead.sh):
# find NCCL, set the environment every GPU run needs, and build. Not run on its own.
#
#   gpu_setup             sets NCCL_HOME (Python's nvidia.nccl if importable, else the system's,
#                         unless NCCL_HOME is set), LD_LIBRARY_PATH, NCCL_NVLS_ENABLE=0; prints
#                         what it found (prefix: $GPU_TAG)
#   gpu_build DIR LOG     configure + build everything (examples, ncs_perf) into DIR; 0 or 1
#   gpu_prepare DIR LOG   gpu_setup, NCCL_DEBUG=WARN, gpu_build; then NCS and PLUGIN name the
#                         built ncclscope and the plugin's absolute path; 0 or 1
gpu_say() { echo "${GPU_TAG:-gpu}: $*"; }

gpu_setup() {
  local src py hdr d l
  if [ -n "${NCCL_HOME:-}" ]; then
    src="NCCL_HOME"
  else
    py=$(python3 -c 'import os, nvidia.nccl as m
p = getattr(m, "__file__", None)
print(os.path.dirname(p) if p else list(m.__path__)[0])' 2>/dev/null || true)
    if [ -n "$py" ] && [ -f "$py/include/nccl.h" ]; then
      NCCL_HOME=$py src="python nvidia.nccl"
    else
      NCCL_HOME='' src="system"
    fi
  fi
  export NCCL_HOME
  hdr=
  for d in ${NCCL_HOME:+"$NCCL_HOME/include"} /usr/local/cuda/include /usr/include; do
    [ -f "$d/nccl.h" ] && { hdr=$d/nccl.h; break; }
  done
  GPU_NCCL_HDR_VER=unknown
  [ -n "$hdr" ] && GPU_NCCL_HDR_VER=$(awk '/^#define NCCL_(MAJOR|MINOR|PATCH) /{v = v (v == "" ? "" : ".") $3} END{print v}' "$hdr")
  gpu_say "NCCL from $src: ${NCCL_HOME:-system paths}, nccl.h $GPU_NCCL_HDR_VER (${hdr:-not found})"
  if [ -n "$NCCL_HOME" ]; then
    for l in "$NCCL_HOME/lib" "$NCCL_HOME/lib64"; do
      [ -d "$l" ] && export LD_LIBRARY_PATH="$l${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    done
  fi
  # NVLink multicast (NVLS) stays off on shared machines
  export NCCL_NVLS_ENABLE=0
  command -v nvidia-smi >/dev/null && nvidia-smi -L | sed "s/^/${GPU_TAG:-gpu}: /"
  return 0
}

gpu_build() { # DIR LOG
  local b=$1 log=$2 gen=() cuda=()
  command -v ninja >/dev/null && gen=(-G Ninja)
  [ -f "$b/CMakeCache.txt" ] && gen=() # keep the generator it was made with
  [ -z "${CUDAToolkit_ROOT:-}" ] && ! command -v nvcc >/dev/null && [ -x /usr/local/cuda/bin/nvcc ] &&
    cuda=(-DCUDAToolkit_ROOT=/usr/local/cuda)
  gpu_say "building into $b (log: $log)"
  if ! { timeout 600 cmake -S . -B "$b" "${gen[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
           -DNCCL_HOME="$NCCL_HOME" "${cuda[@]}" &&
         timeout 600 cmake --build "$b" -j"$(nproc)"; } >"$log" 2>&1; then
    tail -30 "$log"
    gpu_say "build FAILED"
    return 1
  fi
  grep 'ncclscope examples' "$log" | sed "s/^-- /${GPU_TAG:-gpu}: /"
  return 0
}

gpu_prepare() { # DIR LOG
  gpu_setup
  export NCCL_DEBUG=WARN
  gpu_build "$1" "$2" || return 1
  NCS=$1/ncclscope PLUGIN=$(pwd)/$1/libnccl-profiler-ncclscope.so
}
