#!/bin/sh
# damage_check.sh CASE NCCLSCOPE NCS_DAMAGE SIMDIR WORK
# The reader's damage and input rules as users see them, on a trace that nccl-sim recorded with
# the plugin (SIMDIR, one or more *.nstrace files). Each CASE builds its input under WORK/CASE,
# runs the verbs with a timeout and checks their exit status (docs/cli.md, "Exit status": 3 no
# file could be read, 4 damaged or unreadable among readable ones) and output. Exit 0 pass, 1
# fail, 77 skipped (with the reason printed).
set -u
case_=$1 exe=$2 damage=$3 sim=$4 work=$5/$1
rm -rf "$work" && mkdir -p "$work" || exit 1
src=$(ls "$sim"/*.nstrace | head -1)
[ -f "$src" ] || { echo "no trace in $sim"; exit 1; }
fail=0

# run RC PATTERN... -- CMD...: CMD under a timeout; its status must be RC and its output (stdout
# and stderr) match every extended regex (!PATTERN: must not match).
run() {
  want=$1
  shift
  pats=
  while [ "$1" != "--" ]; do
    pats="$pats
$1"
    shift
  done
  shift
  # the timeout catches a verb that hangs (a FIFO opened for reading blocks for ever); a report
  # of the 10,000-operation source under ASan on a loaded 2-core machine took over a minute
  out=$(timeout 300 "$@" 2>&1)
  rc=$?
  printf '%s\n' "\$ $*" "$out" | head -40
  if [ "$rc" != "$want" ]; then
    echo "FAIL: exit status $rc, expected $want"
    fail=1
  fi
  printf '%s\n' "$pats" | while IFS= read -r p; do
    [ -n "$p" ] || continue
    case $p in
    !*) ! printf '%s\n' "$out" | grep -Eq -e "${p#!}" || { echo "FAIL: output matches '${p#!}'"; exit 1; } ;;
    *) printf '%s\n' "$out" | grep -Eq -e "$p" || { echo "FAIL: output does not match '$p'"; exit 1; } ;;
    esac
  done || fail=1
}

# the index of the Nth EVENTS chunk (type 7) of a trace
events_chunk() { "$damage" "$1" list | awk -v n="$2" '$3 == 7 && ++i == n { print $1 }'; }

case $case_ in
torn)
  # A transient full disk: a write stopped mid-chunk and later chunks were appended after it.
  # Everything after the torn chunk is read, the footer included, and the loss is named.
  k=$(events_chunk "$src" 2)
  [ -n "$k" ] || { echo "the recording has fewer than 2 EVENTS chunks"; exit 1; }
  "$damage" "$src" "$work/$(basename "$src")" tear "$k" 1000 || exit 1
  run 4 "DAMAGED: checksum mismatch in the EVENTS chunk at offset [0-9]+" \
    "reading went on after it [(]1 damaged range, 1000 bytes in all[)]" \
    "footer read; DAMAGED: 1 damaged range skipped inside it" "1 damaged, 0 truncated" \
    -- "$exe" dump --stats "$work"
  run 4 "GAP offset=[0-9]+ bytes=1000 chunks=1 why=" "FOOTER" -- "$exe" dump "$work"
  run 4 "trace files are damaged" "!analysed up to the damage" -- "$exe" report "$work"
  ;;
flip)
  # One flipped bit costs one chunk, not the rest of the file.
  k=$(events_chunk "$src" 1)
  off=$("$damage" "$src" list | awk -v k="$k" '$1 == k { print $2 + 100 }')
  "$damage" "$src" "$work/$(basename "$src")" flip "$off" 3 || exit 1
  run 4 "checksum mismatch in the EVENTS chunk" "footer read" "0 without footer" \
    -- "$exe" dump --stats "$work"
  ;;
cut)
  # kill -9: a cut tail is a truncation, a warning only, and what came before it is kept.
  size=$(wc -c <"$src")
  "$damage" "$src" "$work/$(basename "$src")" cut $((size - 100)) || exit 1
  run 0 "truncated: bad checksum in the last chunk|truncated: truncated chunk" "0 damaged, 1 truncated" \
    -- "$exe" dump --stats "$work"
  # cut at a chunk boundary (the footer gone): no damage to see, but dump says what is missing
  last=$("$damage" "$src" list | tail -1 | cut -d' ' -f2)
  "$damage" "$src" "$work/$(basename "$src")" cut "$last" || exit 1
  run 0 "the last segment has no footer: the process was killed" "!damaged" -- "$exe" dump "$work"
  run 0 "no footer: crashed/killed" "0 damaged, 0 truncated" -- "$exe" dump --stats "$work"
  ;;
fifo)
  # A FIFO named like a trace: refused at once, given directly or found in a directory.
  mkfifo "$work/x.nstrace" || exit 1
  run 3 "x.nstrace: not a regular file but a FIFO" -- "$exe" dump "$work/x.nstrace"
  run 3 "x.nstrace: not a regular file but a FIFO" -- "$exe" dump --stats "$work"
  cp "$src" "$work/"
  run 4 "FIFO" "1 unreadable" -- "$exe" dump --stats "$work"
  run 4 -- "$exe" report "$work" # finishes (how report names the file is the job model's)
  ;;
sparse)
  # 100 GB of hole after the trace: classified without reading the hole.
  cp "$src" "$work/" && truncate -s 100G "$work/$(basename "$src")" || exit 1
  hole=$(python3 -c "import os,sys; f=os.open(sys.argv[1], os.O_RDONLY); print(os.lseek(f, 0, os.SEEK_HOLE))" "$work/$(basename "$src")" 2>/dev/null)
  if [ -z "$hole" ] || [ "$hole" -ge 107374182400 ]; then
    echo "SKIP: this filesystem keeps no holes"
    rm -rf "$work"
    exit 77
  fi
  t0=$(date +%s)
  run 0 "zeros and holes never written" "0 damaged, 1 truncated" -- "$exe" dump --stats "$work"
  t1=$(date +%s)
  # reading 100 GB of zeros takes minutes; the hole is skipped
  [ $((t1 - t0)) -le 20 ] || { echo "FAIL: $((t1 - t0)) s"; fail=1; }
  rm -rf "$work"
  ;;
perm)
  # Permission denied is "cannot read", not damage. Root reads through permission bits, so as
  # root the verb runs as nobody.
  chmod 755 "$work" && cp "$src" "$work/" && chmod 600 "$work/$(basename "$src")" || exit 1
  as=
  if [ "$(id -u)" = 0 ]; then
    command -v setpriv >/dev/null || { echo "SKIP: root without setpriv cannot drop privileges"; exit 77; }
    d=$work
    while [ "$d" != / ]; do # nobody must reach the file to be refused by its own bits
      [ $(($(stat -c %a "$d") % 2)) = 1 ] || { echo "SKIP: $d is not searchable by others"; exit 77; }
      d=$(dirname "$d")
    done
    as="setpriv --reuid=65534 --regid=65534 --clear-groups"
  else
    chmod 000 "$work/$(basename "$src")"
  fi
  run 3 "cannot read: permission denied" "!damaged: |DAMAGED" "1 unreadable" \
    -- $as "$exe" dump --stats "$work"
  run 3 "cannot read: permission denied" -- $as "$exe" dump "$work"
  cp -p "$src" "$work/other-1.nstrace" && chmod 644 "$work/other-1.nstrace" # one readable file
  run 4 "cannot read: permission denied" "!DAMAGED" "== job: 1 file, .*0 damaged.*1 unreadable" \
    -- $as "$exe" dump --stats "$work"
  ;;
header)
  # A header-only file (a process that died at once) is empty, not a second host.
  cp "$src" "$work/" && head -c 16 "$src" >"$work/host2-1.nstrace" || exit 1
  run 0 "== .*host2-1.nstrace" "empty: only the file header" "== job: 1 file, " \
    "1 empty file [(]header only[)] not counted" -- "$exe" dump --stats "$work"
  run 0 "host2-1.nstrace: empty: only the file header" -- "$exe" dump "$work"
  ;;
twice)
  # The same file given twice, or through a link, is read once.
  cp "$src" "$work/" && ln "$work/$(basename "$src")" "$work/link.nstrace" || exit 1
  run 0 "== job: 1 file, " "2 paths named a trace file already listed" \
    -- "$exe" dump --stats "$work" "$work/$(basename "$src")"
  ;;
*)
  echo "unknown case $case_"
  exit 2
  ;;
esac
[ $fail = 0 ] && echo PASS
exit $fail
