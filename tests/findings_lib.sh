# Sourced by findings_check.sh and stall_check.sh (after they set SIM PLUGIN NCS W R P): record
# nccl-sim jobs in model time, coupled, and read the report's JSON and text.
fail() { echo "FAIL: $*"; exit 1; }
# job SCENARIO ITERS SEED [sim options]: record it into $W/t, write the report's JSON and text
job() {
  scenario=$1 iters=$2 seed=$3
  shift 3
  rm -rf "$W/t"
  NCCLSCOPE_DIR="$W/t" "$SIM" --plugin "$PLUGIN" --clock model --scenario "$scenario" --ranks "$R" --procs "$P" \
    --iters "$iters" --couple on --seed "$seed" "$@" >"$W/sim.out" 2>&1 || fail "nccl-sim $* (seed $seed)"
  "$NCS" report --json "$W/t" >"$W/r.json" || fail "report --json exited $? (seed $seed)"
  "$NCS" report "$W/t" >"$W/r.txt" || fail "report exited $? (seed $seed)"
}
# sq_same: the SQLite export's findings table (read with SQLite itself) holds what report --json
# said ($W/r.json): the same findings in the same order, kinds, ranks, headline flags, sizes, text
sq_same() {
  rm -f "$W/t.sqlite"
  "$NCS" export -q --format sqlite -o "$W/t.sqlite" "$W/t" || fail "export --format sqlite exited $?"
  python3 - "$W/r.json" "$W/t.sqlite" <<'PYEOF' || fail "the SQLite findings table differs from report --json"
import json, sqlite3, sys
r = json.load(open(sys.argv[1]))
db = sqlite3.connect(sys.argv[2])
rows = db.execute("SELECT kind, headline, comm, rank, size_ns, wait_side, text, seq, wait_ns FROM findings ORDER BY id").fetchall()
want = [(f['kind'], int(f['headline']), None if f['comm'] < 0 else f['comm'], None if f['rank'] < 0 else f['rank'],
         f['size_ns'], f['wait_side'] or None, f['text']) for f in r['findings']]
assert [x[:7] for x in rows] == want, (rows, want)
stalls = [s for s in r['stalls'] if s['knock_on_of'] < 0]
for x in rows:
    if x[0] == 'stall':
        assert any(s['seq'] == x[7] and s['wait_ns'] == x[8] for s in stalls), (x, stalls)
    else:
        assert x[7] is None and x[8] is None, x
PYEOF
}
