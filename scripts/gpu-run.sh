#!/usr/bin/env bash
# Run the NCCL examples (examples/) on this machine's GPUs under `ncclscope record`, check every
# trace with ncs-trace-check, and write a summary. See docs/gpu.md.
#
# Usage: scripts/gpu-run.sh [EXAMPLE...]        (default: every example in the table below)
#
# Environment (all optional):
#   OUT          output directory (default ./gpu-out)
#   NCCL_HOME    the NCCL to build and run with (include/nccl.h, lib/libnccl.so*); default:
#                Python's nvidia.nccl package if importable, else the system NCCL
#   TRANSPORTS   "nvlink socket" (default): nvlink = NCCL's defaults (P2P/NVLink, SHM);
#                socket = NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_NET=Socket
#   RANKS        --ranks for every example (default: every visible GPU)
#   ITERS        --iters for every example (default 5)
#   RUN_TIMEOUT  seconds one run may take before it is killed (default 120)
#   BUDGET_S     seconds for all runs together; runs not started by then are SKIPPED (default 420)
#   VERBOSE=1    NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,PROFILE into the logs (default NCCL_DEBUG=WARN)
#   EXPECT_ABI   N: every run's traces must say NCCL called the plugin through profiler ABI vN
#                (ncs-trace-check --abi; the proof of which version that NCCL picks: 5 for 2.28,
#                6 for 2.29-2.30, 7 for 2.31, docs/gpu.md "Each NCCL generation")
#   PACK=1       pack everything but summary.txt into $OUT/gpu-run.tgz (default: 1 when OUT was
#                given, for tools that bring back only a few files; 0 otherwise)
#
# Output ($OUT):
#   summary.txt                   one row per run (also printed at the end)
#   build.log                     configure + build
#   logs/<example>-<transport>.log     the example's stdout/stderr (and record's)
#   traces/<example>-<transport>/      the trace files
#   summary/<run>.stats, <run>.check   `ncclscope dump --stats` and ncs-trace-check output
#   captures/<run>/               *.nscap files the plugin wrote with NCCLSCOPE_CAPTURE=1, if any
# Exit status: 0 when every run exited 0, printed its ok line and passed the trace check.
set -uo pipefail

# ---------------------------------------------------------------------------------------------
# What each run must record (--events all). Columns:
#   example  transport  expect (FAIL when missing)  want (WARN when missing)  checker flags
# "-" = nothing; the checker flags are the rest of the line. Event names as in NCCLSCOPE_EVENTS (docs/config.md). Reasons (research notes
# nccl-profiler-api.md §3, §7; NCCL 2.28, profiler ABI v5):
# - every operation: GroupApi + CollApi (P2pApi for send/recv), KernelLaunch, Group, Coll (P2p),
#   and KernelCh, which NCCL emits through a profiler proxy op whenever KernelCh is enabled;
# - NVLink/P2P and SHM have no network proxy ops, so no ProxyOp/ProxyStep there; the socket
#   transport (network path) has ProxyOp and ProxyStep; ProxyCtrl comes from the proxy thread on
#   every path (seen on 2xH200, NCCL 2.28.9); NetPlugin events exist only in NCCL built with
#   NET_PROFILER (WARN);
# - graph: API events and KernelLaunch at capture, Group/Coll/KernelCh at every replay (KernelCh
#   puts proxy ops, hence a host node, into the graph);
# - abort: the hung AllReduce never completes, and only rank 0 issued it: completions of Coll/P2p
#   may be missing and seqNumbers differ across ranks.
# Checked against real runs on 2xH200 with NCCL 2.28.9 (docs/gpu.md has the counts).
EXPECT_TABLE='
initall      nvlink  groupapi,collapi,launch,group,coll,kernel,proxyctrl                      -      -
initall      socket  groupapi,collapi,launch,group,coll,kernel,proxyop,proxystep,proxyctrl    net    -
group_init   nvlink  groupapi,collapi,launch,group,coll,kernel,proxyctrl                      -      -
group_init   socket  groupapi,collapi,launch,group,coll,kernel,proxyop,proxystep,proxyctrl    net    -
fork         nvlink  groupapi,collapi,launch,group,coll,kernel,proxyctrl                      -      -
fork         socket  groupapi,collapi,launch,group,coll,kernel,proxyop,proxystep,proxyctrl    net    -
threads      nvlink  groupapi,collapi,launch,group,coll,kernel,proxyctrl                      -      -
threads      socket  groupapi,collapi,launch,group,coll,kernel,proxyop,proxystep,proxyctrl    net    -
nonblocking  nvlink  groupapi,collapi,launch,group,coll,kernel,proxyctrl                      -      -
nonblocking  socket  groupapi,collapi,launch,group,coll,kernel,proxyop,proxystep,proxyctrl    net    -
scalable     nvlink  groupapi,collapi,launch,group,coll,kernel,proxyctrl                      -      -
scalable     socket  groupapi,collapi,launch,group,coll,kernel,proxyop,proxystep,proxyctrl    net    -
split        nvlink  groupapi,collapi,launch,group,coll,kernel,proxyctrl                      -      -
split        socket  groupapi,collapi,launch,group,coll,kernel,proxyop,proxystep,proxyctrl    net    -
collectives  nvlink  groupapi,collapi,p2papi,launch,group,coll,p2p,kernel,proxyctrl           -      -
collectives  socket  groupapi,collapi,p2papi,launch,group,coll,p2p,kernel,proxyop,proxystep,proxyctrl net    -
graph        nvlink  groupapi,collapi,launch,group,coll,kernel,proxyctrl                      -      -
graph        socket  groupapi,collapi,launch,group,coll,kernel,proxyop,proxystep,proxyctrl    net    -
abort        nvlink  groupapi,collapi,launch,group,coll,kernel,proxyctrl                      -      --allow-missing-completion coll,p2p --no-seq-match
abort        socket  groupapi,collapi,launch,group,coll,kernel,proxyop,proxystep,proxyctrl    net    --allow-missing-completion coll,p2p --no-seq-match
'
# ---------------------------------------------------------------------------------------------

OUT_GIVEN=0
[ -n "${OUT:-}" ] && OUT_GIVEN=1
OUT=${OUT:-./gpu-out} # relative to where the script was started
PACK=${PACK:-$OUT_GIVEN}
TRANSPORTS=${TRANSPORTS:-nvlink socket}
ITERS=${ITERS:-5}
RUN_TIMEOUT=${RUN_TIMEOUT:-120}
BUDGET_S=${BUDGET_S:-420}
VERBOSE=${VERBOSE:-0}
BUILD=build-gpu
START=$SECONDS

mkdir -p "$OUT" || { echo "gpu-run: cannot create $OUT" >&2; exit 1; }
OUT=$(cd "$OUT" && pwd)
cd "$(dirname "$0")/.." || exit 1
rm -rf "$OUT/logs" "$OUT/traces" "$OUT/summary" "$OUT/captures" "$OUT/summary.txt" "$OUT/gpu-run.tgz"
mkdir -p "$OUT/logs" "$OUT/traces" "$OUT/summary" "$OUT/captures"
say() { echo "gpu-run: $*"; }

# ---- which examples
want_examples=("$@")
rows=()
failed=0
table_rows() { printf '%s\n' "$EXPECT_TABLE" | awk 'NF >= 5 && $1 !~ /^#/'; }
selected() { # example
  [ ${#want_examples[@]} -eq 0 ] && return 0
  local w
  for w in "${want_examples[@]}"; do [ "$w" = "$1" ] && return 0; done
  return 1
}

for w in "${want_examples[@]}"; do
  table_rows | awk -v e="$w" '$1 == e {f = 1} END {exit !f}' || { say "unknown example '$w'"; exit 2; }
done

# ---- which NCCL (scripts/gpu-common.sh)
GPU_TAG=gpu-run
. scripts/gpu-common.sh
gpu_setup
hdr_ver=$GPU_NCCL_HDR_VER
export NCCLSCOPE_CAPTURE=1
if [ "$VERBOSE" = 1 ]; then
  export NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,PROFILE
else
  export NCCL_DEBUG=WARN
fi

# ---- build
grep -q '^ *add_subdirectory(examples)' CMakeLists.txt ||
  say "warning: CMakeLists.txt has no add_subdirectory(examples): the examples will not be built"
if ! gpu_build "$BUILD" "$OUT/build.log"; then
  echo "build FAILED (see build.log)" >"$OUT/summary.txt"
  exit 1
fi
NCS=$BUILD/ncclscope
CHECK=$BUILD/ncs-trace-check
for f in "$NCS" "$CHECK"; do
  [ -x "$f" ] || { say "missing $f after the build"; exit 1; }
done

# ---- runs
field() { # text key: the value of "key=value" in text
  printf '%s\n' "$1" | tr ' ' '\n' | sed -n "s/^$2=//p" | head -1
}

run_one() { # example transport expect want flags
  local ex=$1 tr=$2 expect=$3 want=$4 flags=$5
  local run=$ex-$tr bin=$BUILD/examples/ex_$ex
  local log=$OUT/logs/$run.log dir=$OUT/traces/$run
  local envs=()
  case $tr in
  nvlink) ;;
  socket) envs=(NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_NET=Socket NCCL_IB_DISABLE=1) ;;
  *) say "unknown transport '$tr'"; return 1 ;;
  esac
  if [ $((SECONDS - START)) -ge "$BUDGET_S" ]; then
    rows+=("$(printf '%-12s %-7s %-5s %-3s %-8s %-6s %-5s %-6s %s' "$ex" "$tr" - - - SKIPPED - - "time budget of ${BUDGET_S}s used up")")
    failed=1
    return
  fi
  if [ ! -x "$bin" ]; then
    rows+=("$(printf '%-12s %-7s %-5s %-3s %-8s %-6s %-5s %-6s %s' "$ex" "$tr" - - - NOBUILD - - "$bin missing")")
    failed=1
    return
  fi
  local args=(--iters "$ITERS" --timeout $((RUN_TIMEOUT > 20 ? RUN_TIMEOUT - 10 : RUN_TIMEOUT)))
  [ -n "${RANKS:-}" ] && args+=(--ranks "$RANKS")
  local t0=$SECONDS rc=0
  {
    echo "# $run: ${envs[*]} $NCS record -o $dir --events all -- $bin ${args[*]}"
    echo "# NCCL_HOME=$NCCL_HOME LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}"
  } >"$log"
  env "${envs[@]}" timeout -k 10 "$RUN_TIMEOUT" "$NCS" record -o "$dir" --events all -- \
    "$bin" "${args[@]}" >>"$log" 2>&1 || rc=$?
  local secs=$((SECONDS - t0))
  local okline ver
  okline=$(grep -E "^example=$ex ranks=[0-9]+ nccl=[^ ]+ ok$" "$log" | tail -1)
  ver=$(field "$(grep -E "^example=$ex start " "$log" | tail -1)" nccl)
  "$NCS" dump --stats "$dir" >"$OUT/summary/$run.stats" 2>&1
  local cflags=()
  [ "$flags" != - ] && read -r -a cflags <<<"$flags"
  local cargs=(--expect "$expect")
  [ -n "${EXPECT_ABI:-}" ] && cargs+=(--abi "$EXPECT_ABI")
  [ "$want" != - ] && cargs+=(--want "$want")
  "$CHECK" "$dir" "${cargs[@]}" "${cflags[@]}" >"$OUT/summary/$run.check" 2>&1
  local verdict warns drops events
  verdict=$(sed -n 's/^verdict: \([A-Z]*\).*/\1/p' "$OUT/summary/$run.check")
  warns=$(grep -c '^WARN' "$OUT/summary/$run.check")
  drops=$(sed -n 's/^[A-Z]* *drops *\([0-9]*\) records.*/\1/p' "$OUT/summary/$run.check")
  events=$(sed -n 's/^INFO *events *//p' "$OUT/summary/$run.check")
  local caps=("$dir"/*.nscap)
  if [ -e "${caps[0]}" ]; then
    mkdir -p "$OUT/captures/$run" && cp "${caps[@]}" "$OUT/captures/$run/"
  fi
  local okw=no
  [ -n "$okline" ] && okw=yes
  [ "$rc" -eq 0 ] && [ "$okw" = yes ] && [ "$verdict" = PASS ] || failed=1
  rows+=("$(printf '%-12s %-7s %-5s %-3s %-8s %-6s %-5s %-6s %s' "$ex" "$tr" "$rc" "$okw" "${ver:--}" \
    "${verdict:-none}" "$warns" "${drops:--}" "${events:-none}")")
  say "$(printf '%-22s exit %-3s ok %-3s check %-4s (%s warnings) %3ss' "$run" "$rc" "$okw" "${verdict:-none}" "$warns" "$secs")"
  if [ "$verdict" != PASS ] || [ "$rc" -ne 0 ]; then
    grep -E '^(FAIL|WARN) ' "$OUT/summary/$run.check" | sed 's/^/    /'
    grep -E 'FAILED|timed out|NCCL WARN|error' "$log" | head -5 | sed 's/^/    /'
  fi
}

for tr in $TRANSPORTS; do
  while read -r ex t expect want flags; do
    [ "$t" = "$tr" ] || continue
    selected "$ex" || continue
    run_one "$ex" "$tr" "$expect" "$want" "$flags"
  done < <(table_rows)
done

# ---- summary
{
  echo "ncclscope GPU run $(date -u '+%Y-%m-%d %H:%M:%S UTC'), NCCL ${NCCL_HOME:-system} (nccl.h $hdr_ver), ${SECONDS}s"
  echo "columns: example transport exit ok-line nccl(runtime) check warnings drops events(START records per type)"
  printf '%-12s %-7s %-5s %-3s %-8s %-6s %-5s %-6s %s\n' example transp exit ok nccl check warn drops events
  printf '%s\n' "${rows[@]}"
  if [ "$failed" = 0 ]; then echo "result: all runs passed"; else echo "result: FAILED"; fi
} >"$OUT/summary.txt"
echo
cat "$OUT/summary.txt"

if [ "$PACK" = 1 ]; then
  ( cd "$OUT" && tar czf gpu-run.tgz build.log logs summary traces captures ) &&
    if [ "$(stat -c %s "$OUT/gpu-run.tgz")" -gt $((15 * 1024 * 1024)) ]; then
      say "gpu-run.tgz is over 15 MiB: packing without traces and captures"
      ( cd "$OUT" && tar czf gpu-run.tgz build.log logs summary )
    fi
  rm -rf "$OUT/logs" "$OUT/traces" "$OUT/summary" "$OUT/captures" "$OUT/build.log"
  say "packed into $OUT/gpu-run.tgz"
fi
exit "$failed"
