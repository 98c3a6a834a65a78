#!/usr/bin/env bash
# overhead.sh - what ncclscope costs a real NCCL job on GPUs: ncs_perf (bench/ncs_perf.c) run with
# no plugin, with an empty plugin that enables the same events (the floor: NCCL's own cost of
# profiling), and with ncclscope at each level, in interleaved repetitions. Prints a markdown
# table of latency and overhead per size and the summary figures (docs/benchmarks.md, "GPU
# overhead").
#
# Usage: bench/overhead.sh [options]
#   -b, --build DIR        ncs_perf, libnccl-profiler-ncclscope.so, libnccl-profiler-empty.so and
#                          (for drop counts) ncclscope are here (default: build)
#   -o, --out DIR          raw logs and result files (default: ./overhead-out); emptied first
#   -r, --reps N           repetitions of every configuration (default 5)
#       --ops LIST         ncs_perf ops, comma-separated (default allreduce)
#       --min BYTES, --max BYTES, --factor F   the size sweep (default 8, 32M, 4)
#       --iters N, --warmup N                  ncs_perf --iters / --warmup (default 50, 5)
#       --graph off|on|both    eager launches, CUDA graphs, or both (default off)
#       --procs off|on|both    all GPUs in one process, one process per GPU, or both (default off)
#       --transport LIST   nvlink, socket or nvlink,socket (default nvlink). socket =
#                          NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_NET=Socket NCCL_IB_DISABLE=1
#       --sample N[,N]     add the levels ncclscope-sampleN (NCCLSCOPE_SAMPLE=N) and their
#                          floors empty-sampleN (the empty plugin sampling groups the same way)
#       --nokernel         add the levels ncclscope-nokernel (NCCLSCOPE_EVENTS=default,-kernel) and
#                          its floor empty-nokernel: NCCL's cost of a plugin without KernelCh
#       --noise            add the level none-again (no plugin, a second time): the table of
#                          differences then shows how far two identical levels differ, the noise floor
#       --pin CPUS         run every benchmark process under `taskset -c CPUS` (e.g. the cores of
#                          the GPUs' NUMA node: nvidia-smi topo -m), so runs do not differ by where
#                          the scheduler put them
#       --add-level ROW    add a row to the level table below: "NAME PLUGIN FLOOR VAR=value ..."
#                          (e.g. "ncclscope-big ncclscope empty-default NCCLSCOPE_FLUSH_MS=1000");
#                          repeatable; checked like the built-in rows
#       --levels LIST      which rows of LEVELS below (default: all); the base and the floors of
#                          the chosen ncclscope levels are added
#       --gpus N           ncs_perf --gpus (default: every GPU)
#       --budget S         stop cleanly, before a run that would end after S seconds, and print
#                          what was measured (default 0: no limit)
#       --run-timeout S    one run's limit (default 180)
#       --no-warmup-run    skip the untimed first run of each transport/mode/procs combination
#       --no-check         do not pass --check (AllReduce results verified) to ncs_perf
#       --keep-traces      keep ncclscope's trace files (default: size and drops noted, deleted)
#       --perf PROG        the benchmark program (default BUILD/ncs_perf; also $NCS_PERF). The
#                          tests use a stub that prints `perf:` lines.
#       --table-only DIR   print the tables of an earlier --out DIR again, run nothing
# Environment: NCCL_DEBUG (default WARN). NCCL_NVLS_ENABLE=0 always. NCCL_PROFILER_PLUGIN,
# NCCLSCOPE_* and NCS_EMPTY_* are removed from every run and set only from the level table.
#
# Output (--out DIR): summary.md (the tables, also printed), summary.tsv (the summary figures,
# one per line), results.tsv (every perf line: transport mode procs level rep op bytes time_us
# ok ranks), runs.tsv (one line per run), logs/<run>.log.
# Exit status: 0 when every run succeeded (or was skipped for the budget), 1 when a run failed,
# 2 on usage errors.
set -uo pipefail

# ---------------------------------------------------------------------------------------------
# The levels: one configuration per row. Change them here.
#   name      a unique name; "ncclscope-X" levels are labelled X in the ratio columns
#   plugin    none | empty (bench/empty_plugin.c) | ncclscope | selftime (ncclscope with its
#             calls timed, bench/CMakeLists.txt: the summary adds the time spent inside them) |
#             ext (another plugin: its env column sets NCCL_PROFILER_PLUGIN=PATH and its settings,
#             e.g. NVIDIA's example or Inspector plugin; bench/cost.sh builds them)
#   floor     for ncclscope rows: the empty row that enables the same events (and samples
#             groups the same way), its "NCCL's own cost" floor; "-" otherwise
#   env       VAR=value ... set for the run ("-" for nothing). The empty plugin reads
#             NCS_EMPTY_EVENTS (NCCLSCOPE_EVENTS' syntax: "default" is ncclscope's default) and
#             NCS_EMPTY_SAMPLE and NCS_EMPTY_UNSAMPLED_EVENTS (as NCCLSCOPE_SAMPLE and
#             NCCLSCOPE_UNSAMPLED_EVENTS). When ncclscope's default level or flight mode change,
#             make the floors match (the default records every operation, GPU times included).
# The first row with plugin none is the base of every ratio.
LEVELS='
none               none       -              -
empty-default      empty      -              NCS_EMPTY_EVENTS=default
ncclscope-default  ncclscope  empty-default  -
empty-full         empty      -              NCS_EMPTY_EVENTS=all
ncclscope-full     ncclscope  empty-full     NCCLSCOPE_EVENTS=all
empty-flight       empty      -              NCS_EMPTY_EVENTS=default
ncclscope-flight   ncclscope  empty-flight   NCCLSCOPE_MODE=flight
'
# ---------------------------------------------------------------------------------------------

BUILD=build OUT=./overhead-out REPS=5 OPS=allreduce MIN=8 MAX=32M FACTOR=4 ITERS=50 WARMUP=5
GRAPH=off PROCS=off TRANSPORTS=nvlink WANT_LEVELS='' GPUS='' BUDGET=0 RUN_TIMEOUT=180
WARMUP_RUN=1 CHECK=1 KEEP=0 PERF=${NCS_PERF:-} TABLE_ONLY= PIN=
usage() { awk 'NR > 1 && !/^#/ {exit} NR > 1 {sub(/^# ?/, ""); print}' "$0"; }
die() { echo "overhead: $*" >&2; exit 2; }
while [ $# -gt 0 ]; do
  a=$1
  case $a in
  -h | --help) usage; exit 0 ;;
  --no-warmup-run) WARMUP_RUN=0; shift; continue ;;
  --noise)
    LEVELS+="none-again none - -
"
    shift; continue ;;
  --no-check) CHECK=0; shift; continue ;;
  --nokernel)
    LEVELS+="empty-nokernel empty - NCS_EMPTY_EVENTS=default,-kernel
ncclscope-nokernel ncclscope empty-nokernel NCCLSCOPE_EVENTS=default,-kernel
"
    shift; continue ;;
  --keep-traces) KEEP=1; shift; continue ;;
  esac
  [ $# -ge 2 ] || die "$a needs a value (--help)"
  v=$2
  case $a in
  -b | --build) BUILD=$v ;;
  -o | --out) OUT=$v ;;
  -r | --reps) REPS=$v ;;
  --ops) OPS=$v ;;
  --min) MIN=$v ;;
  --max) MAX=$v ;;
  --factor) FACTOR=$v ;;
  --iters) ITERS=$v ;;
  --warmup) WARMUP=$v ;;
  --graph) GRAPH=$v ;;
  --procs) PROCS=$v ;;
  --transport | --transports) TRANSPORTS=${v//,/ } ;;
  --levels) WANT_LEVELS=${v//,/ } ;;
  --add-level)
    read -r -a row <<<"$v"
    [ ${#row[@]} -ge 3 ] || die "--add-level: expected \"NAME PLUGIN FLOOR [VAR=value ...]\", got '$v'"
    case ${row[1]} in none | empty | ncclscope | selftime | ext) ;; *) die "--add-level: plugin '${row[1]}' is not none, empty, ncclscope, selftime or ext" ;; esac
    [ ${#row[@]} -ge 4 ] || v="$v -"
    LEVELS+="$v
" ;;
  --sample) # KernelCh sampling levels: ncclscope-sampleN over its floor empty-sampleN, per N
    for n in ${v//,/ }; do
      [[ $n =~ ^[0-9]+$ ]] && [ "$n" -ge 2 ] || die "--sample: '$n' is not a number >= 2"
      LEVELS+="empty-sample$n empty - NCS_EMPTY_EVENTS=default NCS_EMPTY_SAMPLE=$n
ncclscope-sample$n ncclscope empty-sample$n NCCLSCOPE_SAMPLE=$n
"
    done ;;
  --gpus) GPUS=$v ;;
  --budget) BUDGET=$v ;;
  --run-timeout) RUN_TIMEOUT=$v ;;
  --perf) PERF=$v ;;
  --pin) PIN=$v ;;
  --table-only) TABLE_ONLY=$v ;;
  *) die "unknown option $a (--help)" ;;
  esac
  shift 2
done
isnum() { [[ $1 =~ ^[0-9]+$ ]]; }
isnum "$REPS" && [ "$REPS" -ge 1 ] || die "--reps must be a number >= 1"
isnum "$BUDGET" || die "--budget must be seconds"
isnum "$RUN_TIMEOUT" && [ "$RUN_TIMEOUT" -ge 1 ] || die "--run-timeout must be seconds"
case $GRAPH in off) MODES=eager ;; on) MODES=graph ;; both) MODES="eager graph" ;; *) die "--graph off|on|both" ;; esac
case $PROCS in off) PLIST=0 ;; on) PLIST=1 ;; both) PLIST="0 1" ;; *) die "--procs off|on|both" ;; esac
for t in $TRANSPORTS; do case $t in nvlink | socket) ;; *) die "unknown transport '$t' (nvlink, socket)" ;; esac; done
command -v python3 >/dev/null || die "python3 is needed for the tables"

# ---- the level table
declare -A L_PLUGIN L_FLOOR L_ENV
L_ALL=() BASE=
while read -r name plugin floor env; do
  [ -n "$name" ] && [ "${name:0:1}" != "#" ] || continue
  case $plugin in none | empty | ncclscope | selftime | ext) ;; *) die "LEVELS: $name: plugin '$plugin'" ;; esac
  [ "$plugin" != ext ] || [[ " $env " == *" NCCL_PROFILER_PLUGIN="* ]] || die "LEVELS: $name: an ext level sets NCCL_PROFILER_PLUGIN=PATH in its env column"
  L_ALL+=("$name") L_PLUGIN[$name]=$plugin L_FLOOR[$name]=$floor L_ENV[$name]=$env
  [ -z "$BASE" ] && [ "$plugin" = none ] && BASE=$name
done <<<"$LEVELS"
[ -n "$BASE" ] || die "LEVELS has no row with plugin none"
export NCS_OVH_LEVELS=$LEVELS NCS_OVH_BASE=$BASE

tables() { # DIR: the markdown tables and summaries from DIR/results.tsv and DIR/runs.tsv
  python3 - "$1" <<'PY'
import os, sys, statistics as st
d = sys.argv[1]
rows = [l.split(None, 3) for l in os.environ["NCS_OVH_LEVELS"].splitlines()
        if l.strip() and not l.lstrip().startswith("#")]
plugin = {r[0]: r[1] for r in rows}; floor = {r[0]: r[2] for r in rows}
order = [r[0] for r in rows]; base = os.environ["NCS_OVH_BASE"]
def tsv(name):
    try:
        with open(os.path.join(d, name)) as f:
            return [l.rstrip("\n").split("\t") for l in f if l.strip() and not l.startswith("#")]
    except OSError:
        return []
runs = tsv("runs.tsv"); res = tsv("results.tsv")
# runs.tsv: transport mode procs level rep rc secs loaded drops trace_bytes status
good = {tuple(r[:5]) for r in runs if r[10] == "ok"}
seen_levels = {r[3] for r in runs}
levels = [l for l in order if l in seen_levels]
ncs = [l for l in levels if plugin[l] in ("ncclscope", "selftime")]
# data[(transport, mode, procs, op)][level][bytes][rep] = time_us
data, ranks = {}, {}
for r in res:
    tr, mode, procs, lvl, rep, op, nb, t, ok, nr = r[:10]
    if rep == "0" or (tr, mode, procs, lvl, rep) not in good or ok != "1":
        continue
    g = (tr, mode, procs, op)
    data.setdefault(g, {}).setdefault(lvl, {}).setdefault(int(nb), {})[rep] = float(t)
    ranks[g] = nr
def short(l):
    return l[len("ncclscope-"):] if l.startswith("ncclscope-") else l
def size(b):
    for u, s in ((1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")):
        if b >= u and b % u == 0:
            return "%d %s" % (b // u, s)
    return "%d B" % b
def lat(v):
    return "%.2f/%.2f" % (min(v), st.median(v)) if v else "-"
def best(x, y):  # ratio of the best (minimum) latencies
    return min(x.values()) / min(y.values()) if x and y else None
def paired(x, y, f=lambda a, b: a / b):  # median over repetitions of f(x_rep, y_rep)
    v = [f(x[k], y[k]) for k in x if k in y]
    return st.median(v) if v else None
def rat(a, b):
    return "-" if a is None or b is None else "%.3f/%.3f" % (a, b)
def pct(v):
    return "-" if v is None else "%+.1f%%" % (100 * v)
out, tsvout = [], []
for g in sorted(data, key=lambda g: (g[0] != "nvlink", g[0], g[1], g[2], g[3])):
    tr, mode, procs, op = g
    D = data[g]
    sizes = sorted({b for l in D for b in D[l]})
    reps = {l: len({k for b in D[l] for k in D[l][b]}) for l in D}
    head = "%s, %s, %s, %s (%s ranks)" % (tr, op, mode, "one process per GPU" if procs == "1"
                                          else "one process", ranks[g])
    out += ["", "### " + head, "",
            "repetitions: " + ", ".join("%s %d" % (l, reps.get(l, 0)) for l in levels),
            "latency us: min/median over repetitions; ratios: best/best latency, then median of "
            "the per-repetition ratios", ""]
    others = [l for l in levels if l != base]
    cols = ["size"] + [l + " us" for l in levels] + ["%s / %s" % (short(l), base) for l in others] \
        + ["%s / %s" % (short(l), floor[l]) for l in ncs if floor[l] in levels]
    out.append("| " + " | ".join(cols) + " |")
    out.append("|" + "|".join("---:" for _ in cols) + "|")
    for b in sizes:
        v = {l: D.get(l, {}).get(b, {}) for l in levels}
        cells = [size(b)] + [lat(list(v[l].values())) for l in levels]
        cells += [rat(best(v[l], v[base]), paired(v[l], v[base])) for l in others]
        cells += [rat(best(v[l], v[floor[l]]), paired(v[l], v[floor[l]])) for l in ncs if floor[l] in levels]
        out.append("| " + " | ".join(cells) + " |")
    # summaries: at the smallest size, and over the sizes >= 1 MiB
    small, large = sizes[:1], [b for b in sizes if b >= 1 << 20]
    def figures(fn):  # fn(b) -> (best-based, paired median); at small and large sizes
        r = []
        for name, bs in (("small", small), ("large", large)):
            f = [fn(b) for b in bs]
            f = [x for x in f if x[0] is not None and x[1] is not None]
            if not f:
                r.append((name, bs, None, None, None)); continue
            r.append((name, bs, st.mean(x[0] for x in f), st.mean(x[1] for x in f),
                       max(x[1] for x in f)))
        return r
    def line(label, fig):
        parts = []
        for name, bs, a, m, w in fig:
            at = size(bs[0]) if name == "small" and bs else ">= 1 MiB (%d sizes)" % len(bs)
            if a is None:
                parts.append("%s: -" % at); continue
            parts.append("%s: %s best, %s median" % (at, pct(a), pct(m)) +
                         (" (worst size %s)" % pct(w) if name == "large" and len(bs) > 1 else ""))
        return "  %-28s %s" % (label, " | ".join(parts))
    out += ["", "summary (%s):" % head, "ncclscope's own cost, (level - floor) / %s:" % base]
    def emit(kind, lvl, fig):
        for name, bs, a, m, w in fig:
            if a is None: continue
            tsvout.append("\t".join([tr, mode, procs, op, lvl, kind, name, str(bs[0] if name == "small" else 1 << 20),
                                     "%.5f" % a, "%.5f" % m, "%.5f" % w]))
    for l in ncs:
        f = floor[l]
        if f not in levels: continue
        def own(b, l=l, f=f):
            x, e, n = D.get(l, {}).get(b, {}), D.get(f, {}).get(b, {}), D.get(base, {}).get(b, {})
            a = (min(x.values()) - min(e.values())) / min(n.values()) if x and e and n else None
            v = [(x[k] - e[k]) / n[k] for k in x if k in e and k in n]
            return a, (st.median(v) if v else None)
        fig = figures(own)
        out.append(line("%s (floor %s)" % (short(l), f), fig)); emit("own", l, fig)
    out.append("level over %s, level / %s - 1:" % (base, base))
    for l in others:
        def over(b, l=l):
            x, n = D.get(l, {}).get(b, {}), D.get(base, {}).get(b, {})
            a, m = best(x, n), paired(x, n)
            return (None if a is None else a - 1, None if m is None else m - 1)
        fig = figures(over)
        out.append(line(l, fig)); emit("over_base", l, fig)
# selftime levels (ncclscope with its calls timed): the time inside the plugin per operation
# (per GroupApi start), from the "selftime:" lines each process prints at exit
import glob, re
stl = [l for l in levels if plugin[l] == "selftime"]
if stl:
    out += ["", "time inside ncclscope's calls (selftime levels; ns per operation = per GroupApi start, "
            "median over runs and processes; then the mean ns per call of each kind):"]
for l in stl:
    per = {}
    for r in runs:
        if r[3] != l or r[10] != "ok":
            continue
        fn = os.path.join(d, "logs", "%s-%s-p%s-%s-r%s.log" % (r[0], r[1], r[2], l, r[4]))
        try:
            txt = open(fn).read()
        except OSError:
            continue
        key = (r[0], r[1], r[2])
        e = per.setdefault(key, {"op": [], "calls": {}})
        for m in re.finditer(r"selftime: pid=\d+ total .* ns_per_groupapi=([0-9.]+)", txt):
            e["op"].append(float(m.group(1)))
        for m in re.finditer(r"selftime: pid=\d+ (start|stop|state) type=(\S+) calls=(\d+) mean_ns=([0-9.]+)", txt):
            e["calls"].setdefault(m.group(1) + " " + m.group(2), []).append(float(m.group(4)))
    for key in sorted(per):
        e = per[key]
        if not e["op"]:
            continue
        out.append("  %s %s %s procs=%s: %.0f ns per operation; %s" % (
            l, key[0], key[1], key[2], st.median(e["op"]),
            ", ".join("%s %.0f" % (k, st.median(v)) for k, v in sorted(e["calls"].items()))))
# Differences in us per operation, paired by repetition (the levels of one repetition ran one after
# another): the median difference and a 95% bootstrap interval of that median (2000 resamples of
# the repetitions, seeded: the same table from the same data). The noise floor is none-again minus
# the base: two identical levels; ncclscope's own cost is a level minus its floor.
import random
def boot(v, n=2000):
    if len(v) < 3:
        return None, None
    rnd = random.Random(12345)
    m = sorted(st.median(rnd.choices(v, k=len(v))) for _ in range(n))
    return m[int(0.025 * n)], m[int(0.975 * n) - 1]
pairs = []
if "none-again" in levels:
    pairs.append(("none-again", base, "noise floor: none-again - " + base))
for l in ncs:
    if floor[l] in levels:
        pairs.append((l, floor[l], "%s - %s: ncclscope's own cost" % (short(l), floor[l])))
for l in levels:
    if plugin[l] in ("empty", "ext"):
        pairs.append((l, base, "%s - %s" % (l, base)))
if pairs:
    out += ["", "## Differences per operation, us (paired by repetition: median [95% bootstrap interval])"]
for g in sorted(data, key=lambda g: (g[0] != "nvlink", g[0], g[1], g[2], g[3])):
    if not pairs:
        break
    D = data[g]
    sizes = sorted({b for l in D for b in D[l]})
    out += ["", "### %s, %s, %s, %s (differences)" % (g[0], g[3], g[1], "one process per GPU" if g[2] == "1" else "one process"), ""]
    cols = ["size"] + [p[2] for p in pairs]
    out.append("| " + " | ".join(cols) + " |")
    out.append("|" + "|".join("---:" for _ in cols) + "|")
    for b in sizes:
        cells = [size(b)]
        for x, y, _ in pairs:
            X, Y = D.get(x, {}).get(b, {}), D.get(y, {}).get(b, {})
            v = [X[k] - Y[k] for k in X if k in Y]
            if not v:
                cells.append("-"); continue
            lo, hi = boot(v)
            cells.append("%+.2f" % st.median(v) + (" [%+.2f, %+.2f]" % (lo, hi) if lo is not None else " (n=%d)" % len(v)))
            tsvout.append("\t".join([g[0], g[1], g[2], g[3], x, "diff_us_vs_" + y, str(b), str(b),
                                     "%.4f" % st.median(v), "%.4f" % (lo if lo is not None else float("nan")),
                                     "%.4f" % (hi if hi is not None else float("nan"))]))
        out.append("| " + " | ".join(cells) + " |")
fails = [r for r in runs if r[10] not in ("ok", "warmup")]
if fails:
    out += ["", "failed runs (%d): " % len(fails) + ", ".join("-".join(r[:4]) + "-r" + r[4] + " (" + r[10] + ")" for r in fails[:20])]
drops = [r for r in runs if r[8] not in ("-", "?", "0")]
if drops:
    out += ["", "WARNING: ncclscope dropped events in %d runs (runs.tsv): its figures there are optimistic" % len(drops)]
text = "\n".join(out).lstrip("\n") + "\n"
sys.stdout.write(text)
with open(os.path.join(d, "summary.md"), "w") as f:
    f.write(text)
with open(os.path.join(d, "summary.tsv"), "w") as f:
    f.write("# transport mode procs op level kind(own|over_base) at(small|large) bytes(first) best median worst\n")
    f.write("".join(x + "\n" for x in tsvout))
PY
}

if [ -n "$TABLE_ONLY" ]; then
  [ -f "$TABLE_ONLY/results.tsv" ] || die "no results.tsv in $TABLE_ONLY"
  tables "$TABLE_ONLY"
  exit $?
fi

# ---- what to run
LV=()
if [ -z "$WANT_LEVELS" ]; then
  LV=("${L_ALL[@]}")
else
  declare -A want=([$BASE]=1)
  for l in $WANT_LEVELS; do
    [ -n "${L_PLUGIN[$l]:-}" ] || die "unknown level '$l' (${L_ALL[*]})"
    want[$l]=1
    [ "${L_FLOOR[$l]}" != - ] && want[${L_FLOOR[$l]}]=1
  done
  for l in "${L_ALL[@]}"; do [ -n "${want[$l]:-}" ] && LV+=("$l"); done
fi
for l in "${LV[@]}"; do
  f=${L_FLOOR[$l]}
  [ "$f" = - ] || [ -n "${L_PLUGIN[$f]:-}" ] || die "LEVELS: $l: floor '$f' is not a level"
done

PERF=${PERF:-$BUILD/ncs_perf}
NCS_SO=$BUILD/libnccl-profiler-ncclscope.so EMPTY_SO=$BUILD/libnccl-profiler-empty.so CLI=$BUILD/ncclscope
ST_SO=$BUILD/bench/libnccl-profiler-ncclscope-selftime.so
[ -x "$PERF" ] || die "no benchmark program $PERF (build ncs_perf: needs CUDA and NCCL; docs/gpu.md)"
for l in "${LV[@]}"; do
  case ${L_PLUGIN[$l]} in
  ncclscope) [ -f "$NCS_SO" ] || die "no $NCS_SO" ;;
  empty) [ -f "$EMPTY_SO" ] || die "no $EMPTY_SO" ;;
  selftime) [ -f "$ST_SO" ] || die "no $ST_SO" ;;
  esac
done
NCS_SO=$(realpath "$NCS_SO") EMPTY_SO=$(realpath "$EMPTY_SO" 2>/dev/null || echo "$EMPTY_SO")
ST_SO=$(realpath "$ST_SO" 2>/dev/null || echo "$ST_SO")
[ -x "$CLI" ] || CLI=

mkdir -p "$OUT" || die "cannot create $OUT"
OUT=$(cd "$OUT" && pwd)
rm -rf "$OUT/logs" "$OUT/traces" "$OUT"/results.tsv "$OUT"/runs.tsv "$OUT"/summary.md "$OUT"/summary.tsv
mkdir -p "$OUT/logs" "$OUT/traces"
printf '# transport\tmode\tprocs\tlevel\trep\top\tbytes\ttime_us\tok\tranks\n' >"$OUT/results.tsv"
printf '# transport\tmode\tprocs\tlevel\trep\trc\tsecs\tloaded\tdrops\ttrace_bytes\tstatus\n' >"$OUT/runs.tsv"

say() { echo "overhead: $*"; }
now_ms() { date +%s%3N; }
T0=$(now_ms)
elapsed_s() { echo $((($(now_ms) - T0) / 1000)); }

# the inherited environment must not change a level: plugin choice and settings come from LEVELS
SCRUB=(-u NCCL_PROFILER_PLUGIN)
while IFS='=' read -r k _; do
  case $k in NCCLSCOPE_* | NCS_EMPTY_*) SCRUB+=(-u "$k"); say "ignoring $k from the environment" ;; esac
done < <(env)
export NCCL_NVLS_ENABLE=0 # NVLink multicast stays off on shared machines
export NCCL_DEBUG=${NCCL_DEBUG:-WARN}

perf_args=(--op "$OPS" --min "$MIN" --max "$MAX" --factor "$FACTOR" --iters "$ITERS" --warmup "$WARMUP")
[ "$CHECK" = 1 ] && perf_args+=(--check)
[ -n "$GPUS" ] && perf_args+=(--gpus "$GPUS")
if [ -n "$PIN" ]; then
  command -v taskset >/dev/null || die "--pin needs taskset (util-linux)"
  taskset -c "$PIN" true 2>/dev/null || die "--pin $PIN: not a CPU list this machine can run on"
fi

declare -A LONGEST # per combination: the longest run so far (ms), the budget's estimate
failed=0 stopped=0 stop_rep=0 nruns=0

run_one() { # transport mode procs level rep  (rep 0: the untimed warm-up run)
  local tr=$1 mode=$2 procs=$3 lvl=$4 rep=$5
  local id="$tr-$mode-p$procs-$lvl-r$rep" combo="$tr-$mode-$procs"
  local log=$OUT/logs/$id.log tdir=$OUT/traces/$id
  local envs=(NCS_OVERHEAD_LEVEL="$lvl") args=("${perf_args[@]}") # the level's name: for the test stub
  [ "$mode" = graph ] && args+=(--graph)
  [ "$procs" = 1 ] && args+=(--procs)
  [ "$tr" = socket ] && envs+=(NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_NET=Socket NCCL_IB_DISABLE=1)
  case ${L_PLUGIN[$lvl]} in
  empty) envs+=(NCCL_PROFILER_PLUGIN="$EMPTY_SO" NCS_EMPTY_ANNOUNCE=1) ;;
  ncclscope) envs+=(NCCL_PROFILER_PLUGIN="$NCS_SO" NCCLSCOPE_DIR="$tdir") ;;
  selftime) envs+=(NCCL_PROFILER_PLUGIN="$ST_SO" NCCLSCOPE_DIR="$tdir") ;;
  esac
  local e
  if [ "${L_ENV[$lvl]}" != - ]; then for e in ${L_ENV[$lvl]}; do envs+=("$e"); done; fi
  # the budget: would this run, as long as the longest of its kind so far, end in time?
  local limit=$RUN_TIMEOUT
  if [ "$BUDGET" -gt 0 ]; then
    local left_ms=$((BUDGET * 1000 - ($(now_ms) - T0))) est=${LONGEST[$combo]:-0}
    [ "$est" -eq 0 ] && for e in "${LONGEST[@]}"; do [ "$e" -gt "$est" ] && est=$e; done
    if [ $((est + est / 10 + 1000)) -gt "$left_ms" ]; then
      stopped=1 stop_rep=$rep
      return
    fi
    [ $((left_ms / 1000)) -lt "$limit" ] && limit=$((left_ms / 1000))
  fi
  local t1 rc=0 pin=()
  [ -n "$PIN" ] && pin=(taskset -c "$PIN")
  t1=$(now_ms)
  {
    echo "# $id: env ${SCRUB[*]} NCCL_NVLS_ENABLE=0 NCCL_DEBUG=$NCCL_DEBUG ${envs[*]} ${pin[*]} $PERF ${args[*]}"
  } >"$log"
  env "${SCRUB[@]}" "${envs[@]}" timeout -k 5 "$limit" "${pin[@]}" "$PERF" "${args[@]}" >>"$log" 2>&1 || rc=$?
  local ms=$(($(now_ms) - t1))
  [ "$ms" -gt "${LONGEST[$combo]:-0}" ] && LONGEST[$combo]=$ms
  nruns=$((nruns + 1))
  # results
  sed -n 's/^perf: op=\([a-z]*\) bytes=\([0-9]*\) time_us=\([0-9.]*\) .*ranks=\([0-9]*\) ok=\([01]\).*/\1 \2 \3 \5 \4/p' "$log" |
    while read -r op nb t ok nr; do
      printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$tr" "$mode" "$procs" "$lvl" "$rep" "$op" "$nb" "$t" "$ok" "$nr"
    done >>"$OUT/results.tsv"
  local npts loaded=- drops=- tbytes=- status=ok
  npts=$(grep -c '^perf: op=' "$log")
  case ${L_PLUGIN[$lvl]} in
  empty) loaded=no; grep -q '^ncclscope-empty: ' "$log" && loaded=yes ;;
  ncclscope | selftime)
    loaded=no
    compgen -G "$tdir/*.nstrace" >/dev/null || compgen -G "$tdir/*.nsflight" >/dev/null && loaded=yes
    if [ "$loaded" = yes ]; then
      tbytes=$(du -sb "$tdir" | cut -f1)
      drops='?'
      if [ -n "$CLI" ]; then
        local dr
        dr=$("$CLI" dump --stats "$tdir" 2>/dev/null | sed -n 's/^ *drops \([0-9]*\).*/\1/p' | tail -1)
        [ -n "$dr" ] && drops=$dr
      fi
    fi
    [ "$KEEP" = 1 ] || rm -rf "$tdir"
    ;;
  esac
  if [ "$rc" -ne 0 ]; then status="exit$rc"
  elif [ "$npts" -eq 0 ]; then status=noresults
  elif grep -q '^perf: op=.* ok=0' "$log"; then status=check
  elif [ "$loaded" = no ]; then status=notloaded
  fi
  [ "$rep" = 0 ] && [ "$status" = ok ] && status=warmup
  [ "$status" = ok ] || [ "$status" = warmup ] || failed=1
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$tr" "$mode" "$procs" "$lvl" "$rep" "$rc" \
    "$((ms / 1000)).$(printf '%03d' $((ms % 1000)))" "$loaded" "$drops" "$tbytes" "$status" >>"$OUT/runs.tsv"
  say "$(printf '%-40s %-9s %3d points %6.1fs  loaded %-3s drops %s' "$id" "$status" "$npts" "$(echo "$ms" | awk '{print $1/1000}')" "$loaded" "$drops")"
  if [ "$status" != ok ] && [ "$status" != warmup ]; then
    grep -v '^perf: ' "$log" | grep -v '^#' | tail -5 | sed 's/^/    /'
  fi
}

# The order of the levels in repetition r: row r of a balanced Latin square (Williams design), so
# that over n repetitions (2n for an odd number n of levels) every level runs once at every
# position and once right after every other level: drift, and whatever a run leaves behind for
# the next one, hit every level alike.
order_of() { # rep
  local n=${#LV[@]} i lo=1 hi=$((${#LV[@]} - 1)) s=(0) o=()
  for ((i = 1; i < n; i++)); do # 0, 1, n-1, 2, n-2, ...
    if ((i % 2)); then s+=("$lo"); lo=$((lo + 1)); else s+=("$hi"); hi=$((hi - 1)); fi
  done
  local period=$n
  ((n % 2)) && period=$((2 * n))
  local r=$((($1 - 1) % period))
  for ((i = 0; i < n; i++)); do o+=("${LV[$(((s[i] + r) % n))]}"); done
  if ((r >= n)); then # odd n: the second n rows are the first n reversed
    local rv=()
    for ((i = n - 1; i >= 0; i--)); do rv+=("${o[$i]}"); done
    o=("${rv[@]}")
  fi
  echo "${o[@]}"
}

say "$PERF: ops $OPS, sizes $MIN..$MAX x$FACTOR, iters $ITERS, modes $MODES, procs $PLIST, transports $TRANSPORTS"
say "levels: ${LV[*]}; $REPS repetitions; budget ${BUDGET}s; logs in $OUT"
if [ "$WARMUP_RUN" = 1 ]; then
  for tr in $TRANSPORTS; do for mode in $MODES; do for p in $PLIST; do
    [ "$stopped" = 1 ] || run_one "$tr" "$mode" "$p" "$BASE" 0
  done; done; done
fi
for ((rep = 1; rep <= REPS && !stopped; rep++)); do
  read -r -a ord <<<"$(order_of "$rep")"
  for tr in $TRANSPORTS; do for mode in $MODES; do for p in $PLIST; do
    for l in "${ord[@]}"; do
      [ "$stopped" = 1 ] && break 4
      run_one "$tr" "$mode" "$p" "$l" "$rep"
    done
  done; done; done
done
echo
if [ "$stopped" = 1 ]; then
  say "time budget of ${BUDGET}s nearly used up after $(elapsed_s)s: stopped in repetition $stop_rep of $REPS (0: the warm-up runs); the tables show what was measured"
fi
echo "# ncclscope GPU overhead: $(date -u '+%Y-%m-%d %H:%M:%S UTC'), $(elapsed_s)s, $nruns runs"
tables "$OUT" || failed=1
exit "$failed"
