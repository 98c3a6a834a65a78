#!/bin/sh
# sqlite_check.sh CASE WORKDIR NCCLSCOPE SIM PLUGIN DOC [FIXTURE-DIRS...]
#
# `ncclscope export --format sqlite` (docs/sqlite.md), checked with the sqlite3 CLI:
#   slowrank  an nccl-sim job (mixed scenario: collectives, send/recv, kernel channels, proxy ops
#             and steps) with an injected slow rank: (a) row counts of instances (Coll, P2p),
#             kernel_channels, proxy_ops and proxy_steps equal the starts of `dump --stats`;
#             (b) every ```sql block of DOC runs; (c) the last-arrival query names the slow rank,
#             and collectives/v_stragglers/v_busbw agree with `report --json` (last arrivals and
#             wait caused per rank, busbw p50 per bucket); --events limits the event tables
#   errors    an output that cannot be written (missing directory, a directory, a file size
#             limit hit mid-export) fails with status 1 and leaves no file, not even the
#             temporary one; an existing output is refused without --force and replaced with
#             it; usage errors give status 2
#   scenarios unusual nccl-sim jobs (reloads, a crash, events that never stop, ABI v3, several
#             ranks per process): each exports, passes PRAGMA integrity_check, and its event
#             tables have as many rows as dump --stats has starts
#   fixtures  crafted traces (valid, crashed, damaged, escape): each exports (a damaged one with
#             status 1) and passes PRAGMA integrity_check
#   v7        ABI v7 (NCCL 2.31): symmetric kernels and KernelPhase from nccl-sim --abi 7 fill
#             instances.kernel_variant/is_sym_coll/user_tag and kernel_phases (linked to their
#             kernel channel and instance, inside its GPU times; v_operation_phases adds up); the
#             same job through v6 and a format 1.1 GPU fixture (FIXTURE-DIRS) have NULL there
# Exit 77 (skipped) without the sqlite3 CLI (apt-get install sqlite3) or python3.
set -u
CASE=$1 W=$2 NCS=$3 SIM=$4 PLUGIN=$5 DOC=$6
shift 6
fail() { echo "FAIL: $*" >&2; exit 1; }
command -v sqlite3 >/dev/null 2>&1 || { echo "SKIP: no sqlite3 CLI (apt-get install sqlite3)"; exit 77; }
command -v python3 >/dev/null 2>&1 || { echo "SKIP: no python3"; exit 77; }
rm -rf "$W" && mkdir -p "$W" || fail "cannot create $W"
q() { sqlite3 -bail -batch "$DB" "$@" || fail "sqlite3: $*"; }

case $CASE in
slowrank)
  # model time (nccl-sim --clock model): the slow rank's 20 ms per operation is in the recording
  # as injected, however the processes were scheduled; coupled, as NCCL's ranks are (uncoupled
  # ranks would complete collectives the slow rank had not entered, which the report rejects)
  NCCLSCOPE_DIR="$W/t" NCCLSCOPE_EVENTS=all "$SIM" --plugin "$PLUGIN" --clock model --couple on --scenario mixed --ranks 4 \
    --procs 2 --iters 30 --slow-rank 2 --slow-us 20000 >"$W/sim.out" 2>"$W/sim.err" ||
    { cat "$W/sim.err"; fail "nccl-sim failed"; }
  DB=$W/t.sqlite
  "$NCS" export --format sqlite "$W/t" -o "$DB" 2>"$W/export.err" ||
    { cat "$W/export.err"; fail "export exited $?"; }
  cat "$W/export.err"
  grep -q "wrote $DB (.* MB, SQLite)" "$W/export.err" || fail "no summary line"
  [ "$(q 'PRAGMA integrity_check')" = ok ] || fail "integrity_check"
  [ "$(q "SELECT value FROM meta WHERE key='schema'")" = ncclscope-sqlite/2 ] || fail "meta.schema"

  # (a) rows = starts of dump --stats (job-wide table)
  "$NCS" dump --stats "$W/t" >"$W/stats.txt" || fail "dump --stats"
  starts() { awk -v t="$1" '/^== job/ { job = 1 } job && $1 == t { print $2; exit }' "$W/stats.txt"; }
  for pair in "Coll:SELECT COUNT(*) FROM operations WHERE type='Coll'" \
              "P2p:SELECT COUNT(*) FROM operations WHERE type='P2p'" \
              "KernelCh:SELECT COUNT(*) FROM kernel_channels" \
              "ProxyOp:SELECT COUNT(*) FROM proxy_ops" \
              "ProxyStep:SELECT COUNT(*) FROM proxy_steps"; do
    t=${pair%%:*} sql=${pair#*:}
    want=$(starts "$t") got=$(q "$sql")
    [ -n "$want" ] && [ "$want" -gt 0 ] || fail "dump --stats has no $t starts"
    [ "$got" = "$want" ] || fail "$t: $got rows, dump --stats says $want starts"
    echo "ok: $t rows $got = dump --stats starts"
  done
  # links: every kernel channel and proxy op of a Coll/P2p names its instance, every step its op
  [ "$(q 'SELECT COUNT(*) FROM kernel_channels WHERE operation_id IS NULL')" = 0 ] || fail "kernel_channels.operation_id"
  [ "$(q 'SELECT COUNT(*) FROM proxy_steps WHERE proxy_op_id IS NULL')" = 0 ] || fail "proxy_steps.proxy_op_id"
  [ "$(q 'SELECT COUNT(*) FROM proxy_steps s LEFT JOIN proxy_ops o ON o.id = s.proxy_op_id WHERE o.id IS NULL')" = 0 ] ||
    fail "proxy_steps.proxy_op_id names no proxy op"
  [ "$(q "SELECT COUNT(*) FROM operations WHERE type='Coll' AND collective_id IS NULL")" = 0 ] ||
    fail "a Coll without its collective"
  [ "$(q 'SELECT COUNT(*) FROM proxy_states')" -gt 0 ] || fail "no proxy_states"
  [ "$(q 'SELECT COUNT(*) FROM p2p')" -gt 0 ] || fail "no p2p pairs"

  # (b) every example query of the documentation runs
  python3 - "$DOC" "$W" <<'EOF' || fail "cannot extract the queries of $DOC"
import re, sys
doc, w = sys.argv[1], sys.argv[2]
blocks = re.findall(r"```sql\n(.*?)```", open(doc).read(), re.S)
assert blocks, "no ```sql blocks"
for i, b in enumerate(blocks):
    open(f"{w}/query{i + 1:02d}.sql", "w").write(b)
print(f"{len(blocks)} example queries")
EOF
  n=0
  for f in "$W"/query*.sql; do
    sqlite3 -bail -batch -header "$DB" <"$f" >"$f.out" 2>"$f.err" ||
      { cat "$f" "$f.err"; fail "example query $(basename "$f") of $DOC fails"; }
    [ -s "$f.out" ] || { cat "$f"; fail "example query $(basename "$f") returns nothing"; }
    n=$((n + 1))
  done
  echo "ok: $n example queries of $(basename "$DOC") run and return rows"

  # (c) the slow rank, and the report's numbers
  "$NCS" report --json "$W/t" >"$W/report.json" || fail "report --json exited $?"
  top=$(q "SELECT last_rank FROM collectives WHERE last_counted GROUP BY comm, last_rank
           ORDER BY SUM(wait_caused_ns) DESC, COUNT(*) DESC LIMIT 1")
  [ "$top" = 2 ] || fail "the last-arrival query names rank $top, not the slow rank 2"
  echo "ok: the last-arrival query names rank 2"
  sqlite3 -json "$DB" "SELECT comm, rank, last_arrivals, wait_caused_ns, instances FROM v_stragglers" \
    >"$W/stragglers.json" || fail "v_stragglers"
  sqlite3 -json "$DB" "SELECT comm, rank, process_id, instances, last_arrivals, wait_caused_ns,
      wait_suffered_ns, slowest, excess_ns FROM ranks WHERE instances IS NOT NULL" >"$W/ranks.json" || fail "ranks"
  sqlite3 -json "$DB" "SELECT comm, func, size_log2, count, busbw_p50_gbs, lat_p50_ns, skew_p50_ns
      FROM v_busbw" >"$W/busbw.json" || fail "v_busbw"
  sqlite3 -json "$DB" "SELECT comm, func, p2p, size_log2, count, busbw_p50_gbs FROM buckets" \
    >"$W/buckets.json" || fail "buckets"
  python3 - "$W" <<'EOF' || fail "the database disagrees with report --json"
import json, sys
w = sys.argv[1]
r = json.load(open(f"{w}/report.json"))
ld = lambda n: json.load(open(f"{w}/{n}.json")) if open(f"{w}/{n}.json").read().strip() else []
strag, ranks, busbw, buckets = ld("stragglers"), ld("ranks"), ld("busbw"), ld("buckets")
top = r["stragglers"][0]
assert top["rank"] == 2, top
assert (strag[0]["comm"], strag[0]["rank"]) == (top["comm"], top["rank"]), (strag[0], top)
assert strag[0]["wait_caused_ns"] == top["wait_caused_ns"], (strag[0], top)
by = {(s["comm"], s["rank"]): s for s in strag}
for x in r["ranks"]:
    s = by.get((x["comm"], x["rank"]))
    if x["last_arrivals"] == 0:
        assert s is None, (x, s)
        continue
    assert s and s["last_arrivals"] == x["last_arrivals"] and s["wait_caused_ns"] == x["wait_caused_ns"] \
        and s["instances"] == x["instances"], (x, s)
rk = {(x["comm"], x["rank"]): x for x in ranks}
for x in r["ranks"]:
    y = rk[(x["comm"], x["rank"])]
    for k in ["instances", "last_arrivals", "wait_caused_ns", "wait_suffered_ns", "slowest", "excess_ns"]:
        assert y[k] == x[k], (k, x, y)
# v_busbw has the sizes with collectives counted (a size whose every collective lacks a GPU time
# is a report row of count 0, "+N no GPU time")
rb = {(b["comm"], b["func"], b["bytes_lo"]): b for b in r["buckets"] if not b["p2p"] and b["count"]}
assert rb and len(busbw) == len(rb), (len(busbw), len(rb))
for b in busbw:
    x = rb[(b["comm"], b["func"], 0 if b["size_log2"] < 0 else 1 << b["size_log2"])]
    assert b["count"] == x["count"], (b, x)
    assert abs(b["busbw_p50_gbs"] - x["busbw_p50_gbs"]) < 6e-5, (b, x)
    assert abs(b["lat_p50_ns"] - x["lat_p50_ns"]) < 1, (b, x)
    assert abs(b["skew_p50_ns"] - x["skew_p50_ns"]) < 1, (b, x)
assert len(buckets) == len(r["buckets"])
for b in buckets:
    x = [y for y in r["buckets"] if (y["comm"], y["func"], y["p2p"]) == (b["comm"], b["func"], bool(b["p2p"]))
         and y["bytes_lo"] == (0 if b["size_log2"] < 0 else 1 << b["size_log2"])][0]
    # no instance with a GPU time: no bandwidth in either (NULL, null), not 0
    assert b["count"] == x["count"] and (abs(b["busbw_p50_gbs"] - x["busbw_p50_gbs"]) < 6e-5 if x["count"]
                                         else b["busbw_p50_gbs"] is None and x["busbw_p50_gbs"] is None), (b, x)
c = r["collectives"]
print(f"ok: {len(r['ranks'])} ranks, {len(rb)} collective buckets and the straggler agree with report --json "
      f"({c['instances']} instances)")
EOF
  [ "$(q 'SELECT COUNT(*) FROM collectives')" = "$(python3 -c "import json; print(json.load(open('$W/report.json'))['collectives']['instances'])")" ] ||
    fail "collectives rows != report instances"
  # the instances whose GPU times cannot be right: as many rows as the report counts
  [ "$(q 'SELECT COUNT(*) FROM collectives WHERE gpu_suspect')" = "$(q "SELECT value FROM meta WHERE key = 'gpu_suspect'")" ] &&
  [ "$(q "SELECT value FROM meta WHERE key = 'gpu_suspect'")" = "$(python3 -c "import json; print(json.load(open('$W/report.json'))['collectives']['gpu_suspect'])")" ] ||
    fail "gpu_suspect rows != meta != report"

  # --events: only the Coll rows; the analysis tables stay
  "$NCS" export -q -f sqlite -e coll "$W/t" -o "$W/coll.sqlite" || fail "export -e coll"
  DB=$W/coll.sqlite
  [ "$(q 'SELECT COUNT(*) FROM kernel_channels') $(q 'SELECT COUNT(*) FROM proxy_steps')" = "0 0" ] ||
    fail "-e coll wrote kernel channels or proxy steps"
  [ "$(q "SELECT COUNT(*) FROM operations WHERE type='Coll'")" = "$(starts Coll)" ] || fail "-e coll: Coll rows"
  [ "$(q 'SELECT COUNT(*) FROM collectives')" -gt 0 ] || fail "-e coll: no collectives"
  echo "PASS: sqlite slowrank"
  ;;

errors)
  NCCLSCOPE_DIR="$W/t" NCCLSCOPE_EVENTS=all "$SIM" --plugin "$PLUGIN" --scenario mixed --ranks 2 \
    --procs 2 --iters 40 >"$W/sim.out" 2>&1 || fail "nccl-sim failed"
  expect() { # RC PATTERN CMD...: status RC and PATTERN on stderr
    want=$1 pat=$2
    shift 2
    "$@" >"$W/out" 2>"$W/err"
    rc=$?
    [ $rc = "$want" ] || { cat "$W/err"; fail "status $rc, want $want: $*"; }
    grep -Eq -- "$pat" "$W/err" || { cat "$W/err"; fail "stderr does not match '$pat': $*"; }
  }
  leftovers() { find "$1" -maxdepth 1 -name '.*.tmp-*' | grep . && fail "a temporary file is left in $1"; }
  expect 5 "cannot write $W/nodir/x.sqlite: No such file or directory" \
    "$NCS" export -f sqlite "$W/t" -o "$W/nodir/x.sqlite"
  [ ! -e "$W/nodir" ] || fail "created $W/nodir"
  mkdir "$W/adir"
  expect 5 "$W/adir is a directory: refused" "$NCS" export -f sqlite --force "$W/t" -o "$W/adir"
  # the file size limit is hit while writing: the export fails cleanly and removes its file
  mkdir "$W/small"
  expect 5 "cannot write $W/small/x.sqlite" sh -c "ulimit -f 512 && exec '$NCS' export -f sqlite '$W/t' -o '$W/small/x.sqlite'"
  [ ! -e "$W/small/x.sqlite" ] || fail "a partial output is left after a write error"
  leftovers "$W/small"
  # an existing output is kept without --force, replaced with it
  echo "precious" >"$W/exists.sqlite"
  expect 5 "exists [(]use --force to replace it[)]" "$NCS" export -f sqlite "$W/t" -o "$W/exists.sqlite"
  [ "$(cat "$W/exists.sqlite")" = precious ] || fail "the existing output was changed"
  expect 0 "wrote $W/exists.sqlite" "$NCS" export -f sqlite --force "$W/t" -o "$W/exists.sqlite"
  DB=$W/exists.sqlite
  [ "$(q 'PRAGMA integrity_check')" = ok ] || fail "the replaced output"
  leftovers "$W"
  # the default output name: DIR.sqlite
  expect 0 "wrote $W/t.sqlite" "$NCS" export -f sqlite "$W/t"
  [ -s "$W/t.sqlite" ] || fail "no $W/t.sqlite"
  # '-': the finished database goes to standard output
  "$NCS" export -q -f sqlite "$W/t" -o - >"$W/stdout.sqlite" || fail "-o -: status $?"
  DB=$W/stdout.sqlite
  [ "$(q 'PRAGMA integrity_check')" = ok ] || fail "the database written to standard output"
  # usage errors
  expect 2 "--format sqlite takes one trace directory" "$NCS" export -f sqlite "$W/t" "$W/t" -o "$W/two.sqlite"
  mkdir "$W/empty"
  expect 3 "no trace files" "$NCS" export -f sqlite "$W/empty" -o "$W/none.sqlite"
  [ ! -e "$W/none.sqlite" ] || fail "an output for no traces"
  leftovers "$W"
  echo "PASS: sqlite errors"
  ;;

scenarios)
  # unusual traces: reloads (several segments), a crash, events that never stop, ABI v3 (no
  # commId), several ranks per process over 3 communicators
  n=0
  for sc in "reload --ranks 2 --procs 2" "abort --ranks 2 --procs 2" \
            "neverstop --ranks 2 --procs 2" "mixed --abi 3 --ranks 4 --procs 4 --iters 10" \
            "mixed --ranks 6 --procs 3 --threads 3 --nodes 3 --iters 30 --comms 3 --net mix"; do
    n=$((n + 1))
    # shellcheck disable=SC2086
    # what is checked is the export of whatever the job left: nccl-sim's own verdict is not
    NCCLSCOPE_DIR="$W/s$n" NCCLSCOPE_EVENTS=all timeout 60 "$SIM" --plugin "$PLUGIN" --scenario $sc \
      >"$W/s$n.out" 2>&1 || echo "note: nccl-sim --scenario $sc exited $? (its trace is checked anyway)"
    ls "$W/s$n"/*.nstrace >/dev/null 2>&1 || { cat "$W/s$n.out"; fail "no trace from --scenario $sc"; }
    DB=$W/s$n.sqlite
    "$NCS" export -f sqlite "$W/s$n" -o "$DB" 2>"$W/s$n.err" || { cat "$W/s$n.err"; fail "export of $sc: $?"; }
    [ "$(q 'PRAGMA integrity_check')" = ok ] || fail "integrity_check: $sc"
    "$NCS" dump --stats "$W/s$n" >"$W/stats.txt" || fail "dump --stats: $sc"
    starts() { awk -v t="$1" '/^== job/ { job = 1 } job && $1 == t { print $2; exit }' "$W/stats.txt"; }
    for pair in "Coll:SELECT COUNT(*) FROM operations WHERE type='Coll'" \
                "P2p:SELECT COUNT(*) FROM operations WHERE type='P2p'" \
                "KernelCh:SELECT COUNT(*) FROM kernel_channels" "KernelPhase:SELECT COUNT(*) FROM kernel_phases" \
                "ProxyOp:SELECT COUNT(*) FROM proxy_ops" "ProxyStep:SELECT COUNT(*) FROM proxy_steps"; do
      t=${pair%%:*} want=$(starts "${pair%%:*}") got=$(q "${pair#*:}")
      [ "$got" = "${want:-0}" ] || fail "$sc: $t: $got rows, dump --stats says ${want:-0} starts"
    done
    echo "ok: $sc: $(q 'SELECT COUNT(*) FROM segments') segments, $(q 'SELECT COUNT(*) FROM operations') instances," \
      "$(q 'SELECT COUNT(*) FROM proxy_ops WHERE pxn') PXN proxy ops," \
      "$(q 'SELECT COUNT(*) FROM kernel_channels WHERE stop_mono_ns IS NULL') + $(q 'SELECT COUNT(*) FROM proxy_steps WHERE stop_mono_ns IS NULL') never stopped"
  done
  echo "PASS: sqlite scenarios ($n)"
  ;;

v7)
  for v in 7 6; do
    NCCLSCOPE_DIR="$W/v$v" NCCLSCOPE_EVENTS=all "$SIM" --plugin "$PLUGIN" --scenario symmetric --abi $v \
      --ranks 4 --procs 2 --iters 16 --channels 3 --user-tags 2 >"$W/v$v.out" 2>&1 || { cat "$W/v$v.out"; fail "nccl-sim --abi $v"; }
    DB=$W/v$v.sqlite
    "$NCS" export -q -f sqlite "$W/v$v" -o "$DB" || fail "export of the v$v job"
    [ "$(q 'PRAGMA integrity_check')" = ok ] || fail "integrity_check: v$v"
  done
  DB=$W/v7.sqlite
  "$NCS" dump --stats "$W/v7" >"$W/stats.txt" || fail "dump --stats"
  want=$(awk '/^== job/ { job = 1 } job && $1 == "KernelPhase" { print $2; exit }' "$W/stats.txt")
  [ "$(q 'SELECT COUNT(*) FROM kernel_phases')" = "$want" ] && [ "$want" -gt 0 ] || fail "kernel_phases rows != $want KernelPhase starts"
  [ "$(q 'SELECT COUNT(*) FROM kernel_phases WHERE kernel_channel_id IS NULL OR operation_id IS NULL')" = 0 ] ||
    fail "a kernel phase without its kernel channel or instance"
  [ "$(q 'SELECT COUNT(*) FROM kernel_phases p JOIN kernel_channels k ON k.id = p.kernel_channel_id
          WHERE p.start_gpu_ns < k.start_gpu_ns OR p.stop_gpu_ns > k.stop_gpu_ns OR p.channel != k.channel
          OR p.phase != CASE p.phase_id WHEN 0 THEN "initial_sync" WHEN 1 THEN "compute" ELSE "final_sync" END')" = 0 ] ||
    fail "a kernel phase outside its kernel channel, or misnamed"
  # the split adds up: per instance, the channel means of the phases sum to at most the mean channel GPU time
  [ "$(q 'SELECT COUNT(*) FROM v_operation_phases v JOIN (SELECT operation_id, AVG(gpu_duration_ns) AS g
          FROM kernel_channels GROUP BY operation_id) k ON k.operation_id = v.operation_id
          WHERE v.initial_sync_ns + v.compute_ns + v.final_sync_ns > k.g + 3')" = 0 ] || fail "v_operation_phases exceeds the GPU time"
  [ "$(q 'SELECT COUNT(*) FROM v_operation_phases')" = "$(q "SELECT COUNT(*) FROM operations WHERE n_kernel_ch > 0")" ] ||
    fail "v_operation_phases: not one row per instance with kernel channels"
  # symmetric kernels: variant, flag, algo its suffix, no protocol; the others have none
  [ "$(q "SELECT COUNT(*) FROM operations WHERE is_sym_coll = 1 AND kernel_variant LIKE func || '_%'
          AND algo = substr(kernel_variant, instr(kernel_variant, '_') + 1) AND proto = ''")" = \
    "$(q 'SELECT COUNT(*) FROM operations WHERE is_sym_coll = 1')" ] && [ "$(q 'SELECT COUNT(*) FROM operations WHERE is_sym_coll = 1')" -gt 0 ] ||
    fail "symmetric instances: variant, algo, proto"
  [ "$(q "SELECT COUNT(*) FROM operations WHERE is_sym_coll = 0 AND kernel_variant IS NULL AND type = 'Coll'")" = \
    "$(q "SELECT COUNT(*) FROM operations WHERE is_sym_coll = 0 AND type = 'Coll'")" ] || fail "a kernel variant on a regular kernel"
  # --user-tags 2: iterations 2k and 2k+1 carry tag k + 1; every rank's operations are in v_user_tags
  [ "$(q 'SELECT COUNT(*) FROM operations WHERE user_tag IS NULL OR user_tag < 1 OR user_tag > 8')" = 0 ] || fail "user_tag values"
  [ "$(q 'SELECT COUNT(*) FROM v_user_tags')" = 8 ] && [ "$(q 'SELECT MIN(operations) || "/" || MAX(operations) FROM v_user_tags')" = "8/8" ] ||
    fail "v_user_tags: $(q 'SELECT user_tag, operations FROM v_user_tags')"
  echo "ok: v7: $(q 'SELECT COUNT(*) FROM kernel_phases') kernel phases, $(q 'SELECT COUNT(*) FROM operations WHERE is_sym_coll') symmetric instances, 8 user tags"
  # through v6 (and in format 1.1 files): none of it, and NULL rather than 0 where it is unknown
  DB=$W/v6.sqlite
  [ "$(q 'SELECT COUNT(*) FROM kernel_phases') $(q 'SELECT COUNT(*) FROM operations WHERE user_tag IS NOT NULL OR is_sym_coll IS NOT NULL OR kernel_variant IS NOT NULL')" = "0 0" ] ||
    fail "v6: kernel phases or v7 columns"
  [ "$(q 'SELECT COUNT(*) FROM operations')" -gt 0 ] || fail "v6: no instances"
  n=0
  for d in "$@"; do
    ls "$d"/*.nstrace >/dev/null 2>&1 || continue
    DB=$W/f$n.sqlite n=$((n + 1))
    "$NCS" export -q -f sqlite "$d" -o "$DB" || fail "export of $d"
    [ "$(q 'SELECT COUNT(*) FROM operations') $(q 'SELECT COUNT(*) FROM operations WHERE user_tag IS NOT NULL OR is_sym_coll IS NOT NULL')" = \
      "$(q 'SELECT COUNT(*) FROM operations') 0" ] && [ "$(q 'SELECT COUNT(*) FROM operations')" -gt 0 ] || fail "$d: v7 columns in a format 1.1 trace"
  done
  [ $n -gt 0 ] || fail "no format 1.1 fixture among: $*"
  echo "PASS: sqlite v7 (and v6, $n format 1.1 fixtures)"
  ;;

fixtures)
  n=0
  for d in "$@"; do
    ls "$d"/*.nstrace >/dev/null 2>&1 || continue
    n=$((n + 1))
    DB=$W/f$n.sqlite
    "$NCS" export -q -f sqlite "$d" -o "$DB"
    rc=$?
    [ $rc = 0 ] || [ $rc = 4 ] || fail "export of $d: status $rc"
    [ "$(q 'PRAGMA integrity_check')" = ok ] || fail "integrity_check: $d"
    [ "$(q 'SELECT COUNT(*) FROM processes')" -gt 0 ] || fail "no processes: $d"
    echo "ok: $d (status $rc, $(q 'SELECT COUNT(*) FROM operations') instances)"
  done
  [ $n -gt 0 ] || { echo "SKIP: no trace directories among: $*"; exit 77; }
  echo "PASS: sqlite fixtures ($n)"
  ;;
*) fail "unknown case $CASE" ;;
esac
