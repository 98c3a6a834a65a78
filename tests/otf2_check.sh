#!/bin/sh
# otf2_check.sh CASE WORKDIR NCCLSCOPE OTF2_READ [FIXTURE_DIRS...] - see tests/otf2.cmake
set -u
case_=$1 dir=$2 ncs=$3 rd=$4
shift 4
if [ "$case_" = missing ]; then # NCCLSCOPE was built without OTF2; $1: a trace directory
  rm -rf "$dir" && mkdir -p "$dir" && cd "$dir" || exit 1
  "$ncs" export "$1" -f otf2 -o arch 2>err.txt
  rc=$?
  [ $rc -eq 2 ] || { echo "otf2_check: FAIL: status $rc, not 2: $(cat err.txt)"; exit 1; }
  grep -q "built without OTF2" err.txt || { echo "otf2_check: FAIL: message: $(cat err.txt)"; exit 1; }
  [ -z "$(ls -A)" ] || [ "$(ls -A)" = err.txt ] || { echo "otf2_check: FAIL: left $(ls -A)"; exit 1; }
  cat err.txt
  echo "otf2_check: ok"
  exit 0
fi
command -v otf2-print >/dev/null || { echo "otf2-print not installed (otf2-tools): skipped"; exit 77; }
rm -rf "$dir" && mkdir -p "$dir" && cd "$dir" || exit 1
fail() { echo "otf2_check: FAIL: $*"; exit 1; }
# an archive must read back: otf2-print without errors, and the reader test against the model
check_archive() { # ARCHIVE TRACES
  otf2-print "$1/traces.otf2" >print.txt 2>print.err || fail "otf2-print $1: $(head -3 print.err)"
  grep -q "^ENTER\|^MPI_COLLECTIVE_END" print.txt || [ "${3:-}" = empty-ok ] || fail "no events in $1"
  otf2-print -I "$1/traces.otf2" 2>/dev/null | grep -q "NCCLSCOPE::FILES" || fail "no coverage properties in $1"
  "$rd" "$1/traces.otf2" "$2" >read.txt 2>&1 || fail "otf2_read $1: $(cat read.txt)"
  cat read.txt
}
case $case_ in
demo)
  "$ncs" demo -o traces >demo.out 2>&1 || fail "demo: $(tail -3 demo.out)"
  "$ncs" export traces --format otf2 -o arch 2>export.err || fail "export: $(cat export.err)"
  cat export.err
  check_archive arch traces
  # the stderr summary and the reader agree on the collective records
  n=$(sed -n 's/.* \([0-9]*\) collectives,.*/\1/p' export.err)
  grep -q " $n collective end," read.txt || fail "summary says $n collectives"
  ;;
errors)
  "$ncs" demo -o traces >demo.out 2>&1 || fail "demo"
  "$ncs" export -q traces -f otf2 -o arch || fail "first export"
  "$ncs" export -q traces -f otf2 -o arch 2>err.txt; [ $? -eq 5 ] || fail "existing archive not refused"
  grep -q "exists" err.txt || fail "message: $(cat err.txt)"
  "$ncs" export -q traces -f otf2 -o arch --force || fail "--force"
  mkdir other && touch other/x
  "$ncs" export -q traces -f otf2 -o other --force 2>err.txt; [ $? -eq 5 ] || fail "a non-archive directory replaced"
  [ -f other/x ] || fail "other/x removed"
  touch plain
  "$ncs" export -q traces -f otf2 -o plain --force 2>/dev/null; [ $? -eq 5 ] || fail "a file replaced"
  "$ncs" export -q traces -f otf2 -o traces/inside 2>/dev/null; [ $? -eq 5 ] || fail "output inside the input"
  [ ! -e traces/inside ] || fail "traces/inside written"
  "$ncs" export -q traces -f otf2 -o - 2>/dev/null; [ $? -eq 2 ] || fail "'-' accepted"
  "$ncs" export -q traces -f otf2 -e coll -o x 2>/dev/null; [ $? -eq 2 ] || fail "--events accepted"
  "$ncs" export -q traces -f otf2 -o nodir/x 2>/dev/null; [ $? -eq 5 ] || fail "missing parent"
  ls -A | grep -q '\.tmp-' && fail "temporary directory left: $(ls -A)"
  # SIGTERM and SIGHUP at several points of an export: the hidden directory goes with the
  # process (util/outfile.h); an export that finished first left its archive, nothing else
  for d in 0.05 0.2 0.4 0.8; do
    for sig in TERM HUP; do
      "$ncs" export -q traces -f otf2 -o killed --force 2>/dev/null &
      pid=$!
      sleep $d
      kill -$sig $pid 2>/dev/null
      wait $pid
      ls -A | grep -q '\.\(tmp\|old\)-' && fail "SIG$sig after ${d}s: left $(ls -A | grep '\.\(tmp\|old\)-')"
    done
  done
  check_archive arch traces
  ;;
fixtures)
  i=0
  for t in "$@"; do
    i=$((i + 1))
    "$ncs" export -q "$t" -f otf2 -o "a$i" 2>"e$i.txt"
    rc=$?
    case $rc in
    0 | 4) check_archive "a$i" "$t" empty-ok ;;
    3) [ ! -e "a$i" ] || fail "$t: no traces but an archive" ;;
    *) fail "$t: status $rc: $(cat e$i.txt)" ;;
    esac
  done
  ls -A | grep -q '\.tmp-' && fail "temporary directory left"
  ;;
*) fail "unknown case $case_" ;;
esac
echo "otf2_check: ok"
