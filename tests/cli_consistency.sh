#!/bin/sh
# cli_consistency.sh NCCLSCOPE WORK - one CLI: the same error gives the same exit status in every
# verb, a short option means one thing in every verb (docs/cli.md, "Short options"), every output
# format follows one overwrite rule, and a commId is written one way in every output.
set -u
N=$1 W=$2
rm -rf "$W" && mkdir -p "$W/empty" || exit 1
fail() { echo "FAIL: $*"; exit 1; }
expect() { # status, command...
  want=$1; shift
  "$@" >"$W/out" 2>"$W/err"; got=$?
  [ "$got" = "$want" ] || { cat "$W/err" | tail -n 5; fail "'$*' exited $got, not $want"; }
}
# a small job with two communicators (the mixed scenario)
NCCLSCOPE_SIM= expect 0 "$N" demo -o "$W/t" --ranks 4 --iters 30
T=$W/t

# the same error, the same status
for v in "dump" "dump --stats" "report" "diagnose" "export" "export -f chrome" "export -f sqlite"; do
  expect 3 $N $v "$W/nonexistent"
  expect 3 $N $v "$W/empty"
  expect 2 $N $v --no-such-option "$T"
done
for v in report diagnose "export -o $W/x.pftrace"; do expect 2 $N $v --run 99 "$T"; done
for v in "export -f perfetto -o" "export -f chrome -o" "export -f sqlite -o" "report --html"; do
  expect 5 $N $v "$W/nodir/x" "$T"
done

# one overwrite rule for every format: refused (5) without --force, replaced with it
for f in perfetto chrome sqlite; do
  expect 0 $N export -q -f $f -o "$W/o.$f" "$T"
  cksum "$W/o.$f" >"$W/sum1"
  expect 5 $N export -q -f $f -o "$W/o.$f" "$T"
  cksum "$W/o.$f" | cmp -s - "$W/sum1" || fail "$f: a refused export changed the file"
  expect 0 $N export -q -f $f --force -o "$W/o.$f" "$T"
done
expect 0 $N report --html "$W/r.html" "$T"
expect 5 $N report --html "$W/r.html" "$T"
expect 0 $N report --html "$W/r.html" --force "$T"

# short options: one meaning each
expect 0 $N report -j "$T"
python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$W/out" || fail "report -j is not JSON"
expect 2 $N export -j 2 "$T" -o "$W/j.pftrace"
grep -q -- "--jobs" "$W/err" || fail "export -j does not point to --jobs"
expect 0 $N export -q --jobs 2 -o "$W/j.pftrace" "$T"
expect 0 $N dump -e coll --limit 3 "$T"
expect 2 $N demo -s allreduce
expect 2 $N demo -i 5
# every short option a verb's --help shows is in the table, with the same long name
for v in record dump demo export report diagnose; do
  $N $v --help | sed -n 's/^ *\(-[a-zA-Z]\), \(--[a-z-]*\).*/\1 \2/p'
done | sort -u >"$W/shorts"
cut -d' ' -f1 "$W/shorts" | uniq -d >"$W/dups"
[ -s "$W/dups" ] && { cat "$W/shorts"; fail "a short option means two things: $(cat "$W/dups")"; }

# commId: 0x and 16 hex digits everywhere, and the same set in every output
ids() { grep -o '0x[0-9a-f]\{6,\}' "$1" | sort -u; }
$N dump "$T" | grep ' COMM index=' >"$W/dump.txt"
$N report -j "$T" >"$W/report.json"
$N diagnose -j "$T" >"$W/diag.json"
sqlite3 "$W/o.sqlite" "select comm_id from communicators" >"$W/sqlite.txt" 2>/dev/null ||
  sqlite3 "$W/o.sqlite" ".dump" | grep -o "'0x[0-9a-f]*'" | tr -d "'" >"$W/sqlite.txt"
grep -o '"commId":"[^"]*"' "$W/o.chrome" | cut -d'"' -f4 >"$W/chrome.txt"
[ -s "$W/chrome.txt" ] || fail "no commId argument in the Chrome JSON"
grep -o 'commId=0x[0-9a-f]*' "$W/dump.txt" | cut -d= -f2 | sort -u >"$W/want"
[ "$(wc -l <"$W/want")" -ge 2 ] || fail "fewer than two communicators in dump"
grep -v '^0x[0-9a-f]\{16\}$' "$W/want" && fail "dump writes a commId not as 0x + 16 digits"
for f in report.json diag.json sqlite.txt chrome.txt; do
  ids "$W/$f" >"$W/got"
  grep -v '^0x[0-9a-f]\{16\}$' "$W/got" | grep -q . && fail "$f writes a commId another way: $(grep -v '^0x[0-9a-f]\{16\}$' "$W/got" | head -n 1)"
  for id in $(cat "$W/want"); do grep -q "$id" "$W/$f" || [ $f = diag.json ] || fail "$f lacks commId $id"; done
done
# the shared filters (report): what they leave out plus what they keep is the whole job, the
# outputs say so, and a commId that is not the job's is a usage error
first=$(head -n 1 "$W/want")
"$N" report -j --comm "$first" --rank 0-1 --from 0 --to 100ms "$T" >"$W/f.json" || fail "report with filters"
python3 - "$W/report.json" "$W/f.json" "$first" <<'PY' || fail "filtered report"
import json, sys
whole, part, cid = (json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), sys.argv[3])
f = part["filter"]
assert cid in f["text"] and "ranks 0,1" in f["text"] and "to 100.00 ms" in f["text"], f
n_whole = sum(b["count"] for b in whole["buckets"] if b["func"] not in ("Send", "Recv"))
n_part = sum(b["count"] for b in part["buckets"] if b["func"] not in ("Send", "Recv"))
assert n_part + f["instances_left_out"] == n_whole, (n_part, f, n_whole)
comms = {c["index"]: c["comm_id"] for c in part["communicators"]}
assert all(comms[b["comm"]] == cid for b in part["buckets"]), "another communicator kept"
PY
expect 0 $N report --rank 0 "$T"
grep -q "^Filter: ranks 0: " "$W/out" || fail "the text report does not state the filter"
expect 2 $N report --comm 0x0000000000000001 "$T"
grep -q "no such communicator" "$W/err" || fail "--comm of no communicator"
expect 2 $N report --range step "$T"
grep -q "this recording has no user ranges" "$W/err" || fail "--range on a recording without ranges"
expect 2 $N report --tag 1x "$T"
expect 2 $N report --rank x "$T"
expect 2 $N report --from 2s --to 1s "$T"
echo "cli consistency: ok"
