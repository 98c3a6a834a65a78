#!/usr/bin/env bash
# hostile.sh - the hostile-input harness (docs/testing.md, "Hostile inputs").
#
# It records nccl-sim jobs whose truth it knows (a healthy job, a hang, a flight recording, a
# process killed from outside with kill -9, coupled and not; a job that drops records, a rank
# slowed before each collective, communicators beyond NCCLSCOPE_MAX_COMMS, a full tracking table),
# damages them, sets the plugin's variables to every spelling, and limits and breaks the outputs;
# then runs every verb under a timeout and judges each run against the truth:
#   crash            a signal, a sanitizer report, a timeout;
#   false verdict    an answer the truth contradicts: a diagnose verdict the recording cannot have
#                    (an OK for a dead process or a damaged hang, a made-up DESYNC or HANG), a
#                    mismatch report on a job without one, more than 100% lost or outputs that
#                    disagree on the loss, slow_ranks naming a rank that was not slowed, damage
#                    said of nothing or nothing said of damage, a limit or setting not honoured;
#   wrong exit code  a status the table of docs/cli.md ("Exit status") does not give that input.
# It prints a table (runs, crashes, false verdicts, wrong exit codes) per group and the runs that
# failed. Groups:
#   damage    each recording's files cut, flipped, zeroed, torn, duplicated, swapped (a STRINGS
#             chunk with the EVENTS chunk after it too), given a bad length or format version,
#             replaced by noise, cut before their first event chunk, spliced with another
#             recording's segment; whole-file cases (a copy, a hard link, a FIFO, a sparse file, a
#             file nobody may read, a header-only file); verbs: dump, dump --stats, report,
#             report --json, export (perfetto, chrome, sqlite, otf2), diagnose;
#   faults    what the recordings must say: the loss in report, JSON, HTML and SQLite alike and at
#             most 100%; slow_ranks; the limits of NCCLSCOPE_MAX_COMMS and NCCLSCOPE_TRACK_MAX in
#             every output and in diagnose;
#   settings  nccl-sim runs with NCCLSCOPE_DISABLE, _CAPTURE, _CUPTI, _RANGES in every spelling and
#             bad numbers; NCCLSCOPE_CHAIN naming ncclscope itself and a copy of it;
#   outputs   a file size limit (ulimit -f) on standard output and on every export format, a full
#             standard output (/dev/full), an output hard-linked to an input, no readable input,
#             two unreadable files beside a good one, diff of an empty job.
# Run it on an ASan+UBSan build (the default builds one in build-asan/).
#
# Usage: scripts/hostile.sh [OPTIONS]
#   --slice        the bounded slice CI runs (ctest hostile_slice): 1 random damage per recording,
#                  the whole-file cases on the healthy and flight recordings, the targeted ones
#                  in one file, a smaller loss job, no slowed-rank job (its timing needs an idle
#                  machine: ctest report_slowed_successor)
#   --count N      damaged inputs with random parameters per recording (default 4; --full: 700)
#   --full         the full campaign: thousands of runs
#   --seed S       random seed (default 1)
#   --build DIR    a build tree with ncclscope, nccl-sim, the plugin and ncs-damage (default: build
#                  and use build-asan/)
#   --exe FILE     the ncclscope to test (default DIR/ncclscope): another version, read with this
#                  tree's recordings and damage tool
#   --plugin FILE  the plugin to record with and to test the settings of (default DIR's)
#   --groups LIST  comma-separated groups to run (default damage,faults,settings,outputs)
#   --work DIR     where inputs, outputs and the log go (default: a temporary directory, removed)
#   --timeout S    per verb and input (default 60)
#   --jobs N       damage inputs run in parallel (default 1)
#   --fail         exit 1 when a run crashed, got a false verdict or a wrong exit code (the CI test)
#   --fail-on-crash  exit 1 when a run crashed
#   --keep         keep the work directory
# Exit status: 0, or 1 with --fail / --fail-on-crash as above; 2 usage or setup.
set -uo pipefail
cd "$(dirname "$0")/.."
root=$PWD
count= full=0 slice=0 seed=1 build= exe= plugin= work= tmo=60 jobs=1 failany=0 failcrash=0 keep=0
groups=damage,faults,settings,outputs
while [ $# -gt 0 ]; do
  case $1 in
  --slice) slice=1 ;;
  --count) count=$2; shift ;;
  --full) full=1 ;;
  --seed) seed=$2; shift ;;
  --build) build=$2; shift ;;
  --exe) exe=$2; shift ;;
  --plugin) plugin=$2; shift ;;
  --groups) groups=$2; shift ;;
  --work) work=$2; keep=1; shift ;;
  --timeout) tmo=$2; shift ;;
  --jobs) jobs=$2; shift ;;
  --fail) failany=1 ;;
  --fail-on-crash) failcrash=1 ;;
  --keep) keep=1 ;;
  -h | --help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
  *) echo "hostile.sh: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
[ -n "$count" ] || count=$([ $full = 1 ] && echo 700 || { [ $slice = 1 ] && echo 1 || echo 4; })
has() { case ",$groups," in *",$1,"*) return 0 ;; esac; return 1; }

if [ -z "$build" ]; then
  build=build-asan
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Debug -DNCS_SANITIZE=address,undefined >/dev/null &&
    cmake --build "$build" -j"$(nproc)" --target ncclscope nccl-sim nccl-profiler-ncclscope \
      ncs-damage >/dev/null || { echo "hostile.sh: build failed" >&2; exit 2; }
fi
build=$(cd "$build" && pwd)
[ -n "$exe" ] || exe=$build/ncclscope
[ -n "$plugin" ] || plugin=$build/libnccl-profiler-ncclscope.so
sim=$build/nccl-sim damage=$(ls "$build"/tests/ncs-damage "$build"/ncs-damage 2>/dev/null | head -1)
otf2read=$(ls "$build"/tests/otf2_read 2>/dev/null | head -1)
for f in "$exe" "$sim" "$plugin" "$damage"; do
  [ -x "$f" ] || [ -f "$f" ] || { echo "hostile.sh: missing $f" >&2; exit 2; }
done
exe=$(cd "$(dirname "$exe")" && pwd)/$(basename "$exe")
plugin=$(cd "$(dirname "$plugin")" && pwd)/$(basename "$plugin")
if [ -z "$work" ]; then
  work=$(mktemp -d /tmp/ncs-hostile-XXXXXX)
else
  mkdir -p "$work" && work=$(cd "$work" && pwd)
fi
[ $keep = 1 ] || trap 'chmod -R u+rwX "$work" 2>/dev/null; rm -rf "$work"' EXIT
chmod 755 "$work"
export ASAN_OPTIONS=detect_leaks=1:halt_on_error=1:abort_on_error=0:exitcode=86
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1:exitcode=87
export TSAN_OPTIONS=halt_on_error=1:exitcode=88 # when the build is a TSan one
export NCCLSCOPE_SAMPLE=1
unset NCCLSCOPE_MODE NCCLSCOPE_EVENTS NCCLSCOPE_DISABLE NCCLSCOPE_CAPTURE NCCLSCOPE_CHAIN \
  NCCLSCOPE_MAX_COMMS NCCLSCOPE_TRACK_MAX NCCLSCOPE_BUFFER_SIZE NCCLSCOPE_DIR
formats="perfetto chrome sqlite"
"$exe" export --help 2>&1 | grep -q otf2 && [ -z "${NCS_HOSTILE_NO_OTF2:-}" ] && formats="$formats otf2"
mkdir -p "$work/log"
results=$work/results.txt
: >"$results"
start=$(date +%s)

# ---------------------------------------------------------------- judging one run
# rec GROUP INPUT VERB CRASH FALSE WRONGRC RC NOTE: one line of the results
rec() { echo "$1 $2 $3 $4 $5 $6 rc=$7 ${8:-}" >>"$results"; }
# a crash: a signal (a status above 128 other than the ones a verb gives), a timeout, a sanitizer
crashed() { # rc outputfile
  [ "$1" -ge 124 ] || [ "$1" = 86 ] || [ "$1" = 87 ] || [ "$1" = 88 ] && return 0
  grep -Eq 'AddressSanitizer|LeakSanitizer|UndefinedBehaviorSanitizer|ThreadSanitizer|runtime error:' "$2" 2>/dev/null
}
in_set() { case " $2 " in *" $1 "*) return 0 ;; esac; return 1; }
# log the failure of a run with its output
fail_log() { # group input verb why outputfile
  { echo "== $1 $2 $3: $4"; head -c 3000 "$5" 2>/dev/null; echo; } >>"$work/log/$1.txt"
}
# the first verdict of diagnose's text output: OK, HANG, DEAD, DESYNC, CANNOT
verdict_of() {
  grep -Em1 '^(OK|HANG|DEAD|DESYNC|CANNOT TELL) ' "$1" | awk '{ print $1 }'
}

# ---------------------------------------------------------------- recordings
rec_dir=$work/rec
mkdir -p "$rec_dir"
record() { # name, env..., -- nccl-sim args...
  local name=$1
  shift
  local envs=()
  while [ "$1" != -- ]; do envs+=("$1"); shift; done
  shift
  rm -rf "${rec_dir:?}/$name"
  env "${envs[@]}" NCCLSCOPE_DIR="$rec_dir/$name" "$sim" --plugin "$plugin" "$@" >"$rec_dir/$name.log" 2>&1
  ls "$rec_dir/$name"/*.ns* >/dev/null 2>&1 || { echo "hostile.sh: recording $name failed:" >&2; tail -3 "$rec_dir/$name.log" >&2; exit 2; }
}
# a job whose child process (ranks 2-3) is killed with SIGKILL from outside while it runs; the
# slowed rank 2 keeps it running. Once more when the kill came too late (the child had ended).
record_killed() { # name couple
  local name=$1 couple=$2 try
  for try in 1 2 3; do
    rm -rf "${rec_dir:?}/$name"
    NCCLSCOPE_DIR="$rec_dir/$name" "$sim" --plugin "$plugin" --scenario allreduce --ranks 4 --procs 2 \
      --iters 400 --couple "$couple" --slow-rank 2 --slow-us 3000 >"$rec_dir/$name.log" 2>&1 &
    local sp=$! child=
    for _ in $(seq 100); do
      child=$(pgrep -P $sp | head -1)
      [ -n "$child" ] && ls "$rec_dir/$name"/*"-$child.nstrace" >/dev/null 2>&1 && break
      sleep 0.05
    done
    sleep 0.3
    [ -n "$child" ] && kill -9 "$child" 2>/dev/null
    wait $sp 2>/dev/null
    if [ -n "$child" ] && grep -q "pid $child.*signal 9\|killed by signal 9" "$rec_dir/$name.log"; then
      echo "$child" >"$rec_dir/$name.killed"
      return 0
    fi
  done
  echo "hostile.sh: could not kill a running process for $name" >&2
  exit 2
}
echo "hostile: recording (nccl-sim + plugin $plugin) in $rec_dir"
if has damage || has faults; then
  record healthy -- --scenario mixed --ranks 4 --procs 2 --iters 150
  record hang NCCLSCOPE_EVENTS=default,proxy -- --scenario allreduce --ranks 4 --procs 2 --iters 20 \
    --fault stall:1:10 --hang-s 2
  record flight NCCLSCOPE_MODE=flight NCCLSCOPE_FLIGHT_SIZE=1M -- --scenario mixed --ranks 4 \
    --procs 2 --iters 150
  record_killed killc on
  record_killed killu off
fi
# the truth of each recording: its diagnose verdict
truth_of() {
  case $1 in healthy | flight) echo OK ;; hang) echo HANG ;; killc | killu) echo DEAD ;; esac
}

# ---------------------------------------------------------------- group: damage
# One line per input: ID RECORDING FILE-INDEX OP ARGS... (FILE-INDEX: which file of the recording
# is damaged; the others are copied as they are).
if has damage; then
  specs=$work/specs.txt
  : >"$specs"
  spec() { echo "$*" >>"$specs"; }
  ri=0
  for r in healthy hang flight killc killu; do
    ri=$((ri + 1))
    spec "$r" 0 none # the undamaged recording: a control for false alarms (or the dead process)
    files=("$rec_dir/$r"/*.ns*)
    for fi in "${!files[@]}"; do "$damage" "${files[$fi]}" list >"$work/chunks-$r-$fi.txt"; done
    case $r in killc | killu) continue ;; esac # their truth is their death: damaged copies add nothing
    # the slice: the whole-file cases on a trace and a flight recording, not on the hang too
    [ $slice = 1 ] && [ "$r" = hang ] || for op in version header random-small dupfile-copy dupfile-link fifo sparse perm; do spec "$r" 0 "$op"; done
    if [ "$r" != flight ]; then
      # targeted: cut before the first EVENTS chunk, a STRINGS chunk swapped with the EVENTS
      # chunk after it, another recording's segment spliced in (the slice: in the first file)
      for fi in "${!files[@]}"; do
        [ $slice = 1 ] && [ "$fi" != 0 ] && continue
        k=$(awk '$3 == 7 { print $2; exit }' "$work/chunks-$r-$fi.txt")
        [ -n "$k" ] && spec "$r" "$fi" cut "$k"
        k=$(awk 'p == 3 && $3 == 7 { print $1 - 1; exit } { p = $3 }' "$work/chunks-$r-$fi.txt")
        [ -n "$k" ] && spec "$r" "$fi" swap "$k"
      done
      other=$([ "$r" = healthy ] && echo hang || echo healthy)
      n=$(wc -l <"$work/chunks-$r-0.txt")
      spec "$r" 0 splice $((n / 2)) "$(ls "$rec_dir/$other"/*.nstrace | head -1)"
      spec "$r" 0 splice $((n - 1)) "$(ls "$rec_dir/$other"/*.nstrace | head -1)"
    fi
    awk -v seed="$seed" -v ri="$ri" -v n="$count" -v r="$r" -v nf="${#files[@]}" -v dir="$work" '
      BEGIN {
        srand(seed * 101 + ri)
        for (fi = 0; fi < nf; fi++) {
          file = dir "/chunks-" r "-" fi ".txt"; nc[fi] = 0
          while ((getline line < file) > 0) { split(line, a, " "); off[fi, nc[fi]] = a[2]; len[fi, nc[fi]] = a[4]; nc[fi]++ }
        }
        split("cut-boundary cut-mid flip flip flip zero zero tear dup swap len random", ops, " ")
        for (i = 0; i < n; i++) {
          fi = int(rand() * nf); op = ops[1 + int(rand() * 12)]; c = nc[fi]
          # a flight file has no chunk list (its chunks are in the ring): raw cuts and flips
          if (c < 3 && (op == "cut-boundary" || op == "cut-mid")) op = "cut-raw"
          if (c < 3 && (op == "tear" || op == "dup" || op == "swap" || op == "len")) op = "flip"
          k = 1 + int(rand() * (c - 2))
          if (op == "cut-raw") print r, fi, "cut", "@" int(rand() * 1000000)
          else if (op == "cut-boundary") print r, fi, "cut", off[fi, k]
          else if (op == "cut-mid") print r, fi, "cut", off[fi, k] + 1 + int(rand() * (len[fi, k] + 15))
          else if (op == "flip") print r, fi, "flip", "@" int(rand() * 1000000), int(rand() * 8)
          else if (op == "zero") print r, fi, "zero", "@" int(rand() * 1000000), 1 + int(rand() * 4096)
          else if (op == "tear") print r, fi, "tear", k, 1 + int(rand() * (len[fi, k] + 15))
          else if (op == "dup") print r, fi, "dup", k
          else if (op == "swap") print r, fi, "swap", k
          else if (op == "len") print r, fi, "len", k, (rand() < 0.5 ? 4294967295 : 16777217 + int(rand() * 1000000))
          else print r, fi, "random", int(rand() * 1000000), 1 + int(rand() * 65536)
        }
      }' | while read -r line; do spec "$line"; done
  done
  awk '{ print NR, $0 }' "$specs" >"$specs.n" && mv "$specs.n" "$specs"
  echo "hostile: damage: $(wc -l <"$specs") inputs x $((5 + $(echo $formats | wc -w))) verbs"
fi

# The class of a damaged file (docs/cli.md, "Exit status"): clean (0), truncated (a file cut short,
# a torn last chunk, an empty file: 0 with a warning), damaged (in the middle, or a file unreadable
# beside readable ones: 4), maybe (an alteration the format cannot show, or that changes nothing:
# 0 or 4), noinput (3). Chunk types: 1 SEGMENT 2 CLOCK 3 STRINGS 4 COMM 6 THREAD 7 EVENTS 8 COUNTERS
# 9 FOOTER 10 LOSS 11 GPU_STATE 13 RANGE_STATE.
classify() { # chunks-file src op args...
  local chunks=$1 src=$2 op=$3
  shift 3
  local n t1 t2 w
  n=$(wc -l <"$chunks")
  case $op in
  none | dupfile-copy | dupfile-link) echo clean ;;
  # a flight file has a fixed size (its header says it): one that is not is damaged
  sparse) [ "$n" -lt 3 ] && echo damaged || echo sparse ;; # the data whole, a hole after it
  header) [ "$n" -lt 3 ] && echo damaged || echo truncated ;;
  version | random | random-small | perm) echo damaged ;;
  fifo) echo noinput ;;
  splice) echo damaged ;;
  cut)
    if [ "$n" -lt 3 ]; then echo damaged; return; fi # a flight file: its ring is fixed-size
    echo truncated ;;
  tear | len) [ "$1" -ge $((n - 1)) ] && echo truncated || echo damaged ;;
  dup)
    t1=$(awk -v k="$1" '$1 == k { print $3 }' "$chunks")
    case $t1 in 3 | 6 | 13) echo maybe ;; *) echo damaged ;; esac ;; # a restated chunk changes nothing
  swap)
    t1=$(awk -v k="$1" '$1 == k { print $3 }' "$chunks") t2=$(awk -v k="$1" '$1 == k + 1 { print $3 }' "$chunks")
    # order the records rest on: events and what names their strings and communicators, segment
    # starts and ends; other pairs (clock pairs, counters, threads, loss windows) mean the same
    # in either order
    if in_set "$t1" "1 9" || in_set "$t2" "1 9" || { in_set "$t1" "3 4 7" && in_set "$t2" "3 4 7"; }; then
      echo damaged
    else
      echo maybe
    fi ;;
  flip | zero)
    if [ "$n" -lt 3 ]; then # a flight file: its header and slot headers have no checksum
      # (a later slot's keyframe is not read: the slot before it says the same)
      w=$("$damage" "$src" where "$1")
      case $w in *header* | *hdr* | *other*) echo maybe ;; *" slot 0 kf "*) echo damaged ;; *" kf of "*) echo maybe ;; *) echo damaged ;; esac
      return
    fi
    w=$("$damage" "$src" where "$1" | awk '{ print $3 }')
    local coff
    coff=$(awk -v k="$w" '$1 == k { print $2 }' "$chunks")
    if [ "$op" = zero ]; then
      local at size
      at=$("$damage" "$src" where "$1" | awk '{ print $1 }') size=$(stat -c %s "$src")
      [ $((at + ${2:-1})) -ge "$size" ] && { echo truncated; return; } # zeros to the end
    fi
    if [ "$w" -ge $((n - 1)) ]; then
      # the last chunk: a bad checksum there reads as a torn last write; its header damaged
      # (magic, length) may read either way
      local at2
      at2=$("$damage" "$src" where "$1" | awk '{ print $1 }')
      [ -n "$coff" ] && [ "$at2" -lt $((coff + 16)) ] && echo maybe || echo truncated
    else
      echo damaged
    fi ;;
  *) echo damaged ;;
  esac
}

# What diagnose may say of a recording with that truth and class: VERDICT:RC pairs
allowed_diag() { # truth class
  case $2 in
  noinput) echo "-:3" ;;
  clean | sparse)
    case $1 in OK) echo "OK:0" ;; HANG) echo "HANG:1" ;; DEAD) echo "DEAD:1 CANNOT:1 CANNOT:4" ;; esac ;;
  maybe)
    case $1 in OK) echo "OK:0 OK:4 CANNOT:4" ;; HANG) echo "HANG:1 CANNOT:1" ;; DEAD) echo "DEAD:1 CANNOT:1 CANNOT:4" ;; esac ;;
  truncated) # the file's process died where it ends; the others of a healthy job completed
    # everything, so no rank waits (CANNOT TELL is 4, not 1)
    case $1 in OK) echo "DEAD:1 CANNOT:4" ;; *) echo "HANG:1 DEAD:1 CANNOT:1 CANNOT:4" ;; esac ;;
  damaged)
    case $1 in OK) echo "OK:4 CANNOT:4 CANNOT:1" ;; *) echo "HANG:1 DEAD:1 CANNOT:1 CANNOT:4" ;; esac ;;
  esac
}

mention='damag|truncat|corrupt|cannot read|could not be read|refused|not a regular file|not supported|not an ncclscope|not a flight file|too large|out of bounds|bad magic|checksum|skipped|lost|never written|zero bytes|second copy|duplicate|already listed|empty|without footer|no footer|cut short|unreadable|out of the writer|spliced|no segment'
said() {
  printf '%s' "$1" | sed -E 's/(^|[^0-9])0 (damaged|truncated|unreadable|empty|without footer)//g;
    s/"[a-z_]*(damag|truncat|lost|skip|unread|empty|gap|dup)[a-z_]*": *(0|false|null|\[\]|"")//g'
}

run_input() {
  local id=$1 r=$2 fi=$3 op=$4
  shift 4
  local in=$work/in/$id out=$work/out/$id
  rm -rf "$in" "$out"
  mkdir -p "$in" "$out"
  chmod 755 "$in"
  local files=("$rec_dir/$r"/*.ns*) i
  for i in "${!files[@]}"; do cp "${files[$i]}" "$in/"; done
  [ -d "$rec_dir/$r/dumps" ] && cp -r "$rec_dir/$r/dumps" "$in/"
  local t=$in/$(basename "${files[$fi]:-x}") src=${files[$fi]:-}
  local as=() target=$in class
  class=$(classify "$work/chunks-$r-$fi.txt" "$src" "$op" "$@")
  case $op in
  none) ;;
  flip | zero | cut) "$damage" "$src" "$t" "$op" "$1" "${2:-0}" ;;
  tear | len | random | dup | swap) "$damage" "$src" "$t" "$op" "$@" ;;
  splice) "$damage" "$src" "$t" splice "$1" "$2" ;;
  version) "$damage" "$src" "$t" version 2 ;;
  random-small) "$damage" "$src" "$t" random 7 300 ;;
  header) head -c 16 "$src" >"$t" ;;
  dupfile-copy) cp "$src" "$in/copy-$(basename "$src")" ;;
  dupfile-link) ln "$t" "$in/link-$(basename "$src")" ;;
  fifo) mkfifo "$in/fifo.nstrace" && target=$in/fifo.nstrace ;; # named on the command line
  sparse) truncate -s 100G "$t" ;; # a hole after the data
  perm)
    chmod 000 "$t"
    [ "$(id -u)" = 0 ] && as=(setpriv --reuid=65534 --regid=65534 --clear-groups)
    chmod 777 "$out" ;;
  esac
  # bytes left as they were (a swap of equal chunks, a cut past the end): nothing happened
  case $op in flip | zero | cut | tear | dup | swap | len | random | version | random-small)
    cmp -s "$src" "$t" && class=clean ;;
  esac
  local truth verbs v rc o res exp
  truth=$(truth_of "$r")
  verbs="dump stats report json $formats diagnose"
  for v in $verbs; do
    local cmd
    case $v in
    dump) cmd=(dump "$target") ;;
    stats) cmd=(dump --stats "$target") ;;
    report) cmd=(report "$target") ;;
    json) cmd=(report --json "$target") ;;
    perfetto | chrome | sqlite | otf2) cmd=(export "$target" -q --format "$v" -o "$out/x.$v") ;;
    diagnose) cmd=(diagnose "$target") ;;
    esac
    timeout -k 5 "$tmo" "${as[@]}" "$exe" "${cmd[@]}" >"$out/$v.stdout" 2>"$out/$v.stderr"
    rc=$?
    # dump's standard output is large: only its warnings matter, and they go to stderr
    case $v in dump | perfetto | chrome | sqlite | otf2) o=$(cat "$out/$v.stderr") ;;
    *) o=$(cat "$out/$v.stderr" "$out/$v.stdout") ;; esac
    printf '%s\n' "$o" >"$out/$v.all"
    local crash=0 false=0 wrongrc=0 why=
    crashed "$rc" "$out/$v.all" && crash=1 why="crash"
    if [ "$v" = diagnose ]; then
      local vd allowed
      vd=$(verdict_of "$out/$v.stdout")
      vd=${vd:--}
      allowed=$(allowed_diag "$truth" "$class")
      if ! in_set "$vd:$rc" "$allowed"; then
        # which is wrong: the verdict (no pair with it) or the status
        if printf '%s\n' $allowed | grep -q "^$vd:"; then wrongrc=1; why="$why diagnose $vd rc $rc, allowed $allowed"
        else false=1; why="$why verdict $vd rc $rc, allowed $allowed"; fi
      fi
      grep -q '^DESYNC' "$out/$v.stdout" && false=1 why="$why a made-up DESYNC"
    else
      case $class in clean) exp=0 ;; truncated | sparse) exp=0 ;; damaged) exp=4 ;; maybe) exp="0 4" ;; noinput) exp=3 ;; esac
      in_set "$rc" "$exp" || { wrongrc=1; why="$why rc $rc, expected $exp ($class)"; }
    fi
    local s
    s=$(said "$o")
    if [ "$crash" = 0 ]; then
      if { [ "$class" = damaged ] || [ "$class" = truncated ] || [ "$class" = sparse ]; } && [ "$rc" = 0 ] && ! printf '%s' "$s" | grep -Eiq "$mention"; then
        false=1 why="$why silent about the damage"
      fi
      if [ "$class" = clean ] && [ "$op" = none ] && [ "$truth" != DEAD ] && printf '%s' "$s" | grep -Eiq 'damag|corrupt|truncat|skipped|lost with|never defined|out of the writer'; then
        false=1 why="$why a false alarm"
      fi
      # a healthy job's completions stand when a file is cut (its ranks' records are missing,
      # which proves nothing) or nothing is damaged: none is taken back as impossible
      if [ "$v" = diagnose ] && [ "$truth" = OK ] && { [ "$class" = clean ] || [ "$class" = truncated ]; } &&
        grep -q 'completions\{0,1\} w[a-z]* taken back' "$out/$v.stdout"; then
        false=1 why="$why completions taken back on a healthy job"
      fi
      # (a "maybe" alteration read as nothing, status 0, lost nothing)
      if [ "$v" = report ] && [ "$class" != clean ] && [ "$class" != sparse ] &&
        { [ "$class" != maybe ] || [ "$rc" != 0 ]; } && grep -Eq 'nothing stands out($|[^ ]| [^i])' "$out/$v.stdout"; then
        false=1 why="$why nothing stands out on lost data"
      fi
      if [ "$v" = json ] && [ -s "$out/$v.stdout" ] &&
        ! python3 -c "import json,sys; r=json.load(open(sys.argv[1])); c=r['coverage']; assert not r['collectives']['mismatches'], r['collectives']['mismatches'][:2]; assert c['operation_calls_lost'] <= c['operation_calls'], c" "$out/$v.stdout" >>"$out/$v.all" 2>&1; then
        false=1 why="$why a mismatch or loss that cannot be"
      fi
    fi
    rec damage "$id:$r:$fi:$op" "$v" "$crash" "$false" "$wrongrc" "$rc" "$class"
    [ -n "$why" ] && fail_log damage "$id $r file $fi $op $*" "$v" "$why" "$out/$v.all"
  done
  chmod -R u+rwX "$in" 2>/dev/null
  rm -rf "$in" "$out"
}

if has damage; then
  export -f run_input rec crashed in_set fail_log verdict_of classify allowed_diag said truth_of
  export work rec_dir damage exe tmo formats mention results
  if [ "$jobs" -gt 1 ]; then
    xargs -P "$jobs" -L 1 bash -c 'run_input "$@"' _ <"$specs"
  else
    while read -r line; do run_input $line; done <"$specs"
  fi
fi

# ---------------------------------------------------------------- a run judged by hand
# check GROUP INPUT VERB "ALLOWED-RCS" OUT-PREFIX -- CMD...: runs it; sets RC, and CRASH/WRONGRC
check() {
  local g=$1 name=$2 v=$3 ok=$4 pre=$5
  shift 6
  timeout -k 5 "$tmo" "$@" >"$pre.stdout" 2>"$pre.stderr"
  RC=$?
  cat "$pre.stderr" "$pre.stdout" >"$pre.all" 2>/dev/null
  CRASH=0 WRONGRC=0 WHY=
  crashed "$RC" "$pre.all" && CRASH=1 WHY="crash"
  in_set "$RC" "$ok" || { WRONGRC=1; WHY="$WHY rc $RC, expected $ok"; }
}
done_run() { # GROUP NAME VERB FALSE-WHY OUT-PREFIX
  local false=0
  [ -n "$4" ] && false=1 WHY="$WHY $4"
  rec "$1" "$2" "$3" "$CRASH" "$false" "$WRONGRC" "$RC"
  [ -n "$WHY" ] && fail_log "$1" "$2" "$3" "$WHY" "$5.all"
  return 0
}
jq_py() { python3 -c "$1" "${@:2}" 2>>"$work/log/py.txt"; }

# ---------------------------------------------------------------- group: faults
if has faults; then
  f=$work/faults
  mkdir -p "$f"
  echo "hostile: faults"
  # the loss: each lost record once, the share of those that happened, every output alike
  if [ $slice = 1 ]; then
    record loss NCCLSCOPE_BUFFER_SIZE=1M NCCLSCOPE_EVENTS=all -- --scenario mixed --ranks 8 --procs 2 \
      --iters 30 --channels 16 --steps 16 --couple on
  else
    record loss NCCLSCOPE_BUFFER_SIZE=1M NCCLSCOPE_EVENTS=all -- --scenario mixed --ranks 8 --procs 2 \
      --iters 100 --channels 16 --steps 16 --couple on
  fi
  check faults loss report "0" "$f/loss.report" -- "$exe" report "$rec_dir/loss"
  t=$(grep -Eo '[0-9.]+% of the operation calls lost' "$f/loss.report.stdout" | head -1 | grep -Eo '^[0-9.]+')
  why=
  [ -n "$t" ] || why="no loss share in the report"
  [ -n "$t" ] && awk -v t="$t" 'BEGIN { exit !(t > 100) }' && why="$t% of the operation calls lost"
  # (a machine fast enough to drop nothing makes the rest of the check vacuous, not failed)
  [ "$("$exe" dump --stats "$rec_dir/loss" 2>/dev/null | awk '/^== job/ { j = 1 } j && /^  drops / { print $2; exit }')" != 0 ] &&
    ! grep -q 'the plugin lost' "$f/loss.report.stdout" && why="$why; the loss is not said"
  done_run faults loss report "$why" "$f/loss.report"
  check faults loss json "0" "$f/loss.json" -- "$exe" report --json "$rec_dir/loss"
  rm -f "$f/loss.sqlite" "$f/loss.html"
  check faults loss sqlite "0" "$f/loss.sqlite" -- "$exe" export "$rec_dir/loss" -q --format sqlite -o "$f/loss.sqlite"
  done_run faults loss sqlite "" "$f/loss.sqlite"
  check faults loss html "0" "$f/loss.html" -- "$exe" report "$rec_dir/loss" --html "$f/loss.html"
  done_run faults loss html "" "$f/loss.html"
  why=$(jq_py "
import json, sqlite3, sys, re
r = json.load(open(sys.argv[1]))['coverage']
calls, lost = r['operation_calls'], r['operation_calls_lost']
bad = []
if not calls or lost > calls: bad.append('JSON: %d lost of %d' % (lost, calls))
share = round(100.0 * lost / calls, 1) if calls else -1
if ('%.1f%%' % share) not in open(sys.argv[2]).read(): bad.append('the text does not say %.1f%%' % share)
try:
  m = dict(sqlite3.connect(sys.argv[3]).execute('select key, value from meta'))
  if (int(m['operation_calls']), int(m['operation_calls_lost'])) != (calls, lost): bad.append('SQLite meta differs')
except Exception as e: bad.append('SQLite: %s' % e)
try:
  if ('%.1f%% of the' % share) not in open(sys.argv[4]).read(): bad.append('the HTML page does not say %.1f%%' % share)
except Exception as e: bad.append('HTML: %s' % e)
print('; '.join(bad))" "$f/loss.json.stdout" "$f/loss.report.stdout" "$f/loss.sqlite" "$f/loss.html" || echo "the JSON does not parse")
  done_run faults loss json "$why" "$f/loss.json"

  # slow_ranks: a rank slowed before each collective is a straggler; its ring successor, which
  # waits for its data, is no slow rank (the issue's job; timing: not in the slice)
  if [ $slice = 0 ]; then
    for s in 63 64 65 66; do
      record "slow$s" -- --scenario allreduce --ranks 8 --procs 4 --iters 40 --couple on --slow-rank 5 \
        --slow-us 20000 --seed "$s"
      check faults "slow$s" json "0" "$f/slow$s" -- "$exe" report --json "$rec_dir/slow$s"
      why=$(jq_py "
import json, sys
r = json.load(open(sys.argv[1]))
bad = [x['rank'] for x in r['slow_ranks'] if x['rank'] != 5]
print('slow_ranks names rank %s, not the slowed rank 5' % bad if bad else '')" "$f/slow$s.stdout" || echo "no JSON")
      done_run faults "slow$s" json "$why" "$f/slow$s"
    done
  fi

  # limits: what NCCLSCOPE_MAX_COMMS and NCCLSCOPE_TRACK_MAX left out, in every output
  record maxcomms NCCLSCOPE_MAX_COMMS=1 -- --scenario mixed --ranks 4 --procs 2 --iters 20 --verbose
  record trackmax NCCLSCOPE_TRACK_MAX=64 -- --scenario mixed --ranks 4 --procs 2 --iters 20 --verbose
  for lim in maxcomms trackmax; do
    var=$([ $lim = maxcomms ] && echo NCCLSCOPE_MAX_COMMS || echo NCCLSCOPE_TRACK_MAX)
    RC=0 CRASH=0 WRONGRC=0 WHY=
    cp "$rec_dir/$lim.log" "$f/$lim.plugin.all"
    grep -q "$var" "$rec_dir/$lim.log" && why= || why="the plugin did not warn"
    done_run faults "$lim" plugin "$why" "$f/$lim.plugin"
    check faults "$lim" report "0" "$f/$lim.report" -- "$exe" report "$rec_dir/$lim"
    grep -q "$var" "$f/$lim.report.stdout" && why= || why="the report does not say what $var left out"
    grep -Eq 'nothing stands out($|[^ ]| [^i])' "$f/$lim.report.stdout" && why="$why; nothing stands out"
    done_run faults "$lim" report "$why" "$f/$lim.report"
    check faults "$lim" json "0" "$f/$lim.json" -- "$exe" report --json "$rec_dir/$lim"
    grep -q "$var" "$f/$lim.json.stdout" && why= || why="the JSON does not say what $var left out"
    done_run faults "$lim" json "$why" "$f/$lim.json"
    rm -f "$f/$lim.sqlite"
    check faults "$lim" sqlite "0" "$f/$lim.sqlite" -- "$exe" export "$rec_dir/$lim" -q --format sqlite -o "$f/$lim.sqlite"
    why=$(jq_py "
import sqlite3, sys
m = dict(sqlite3.connect(sys.argv[1]).execute('select key, value from meta'))
print('' if any(sys.argv[2] in str(v) for v in m.values()) else 'SQLite meta does not say it')" "$f/$lim.sqlite" "$var" || echo "no database")
    done_run faults "$lim" sqlite "$why" "$f/$lim.sqlite"
    check faults "$lim" perfetto "0" "$f/$lim.pf" -- "$exe" export "$rec_dir/$lim" -q --format perfetto -o "$f/$lim.pftrace"
    grep -q "$var" "$f/$lim.pf.stderr" && why= || why="export does not say it"
    done_run faults "$lim" perfetto "$why" "$f/$lim.pf"
    check faults "$lim" diagnose "4" "$f/$lim.diag" -- "$exe" diagnose "$rec_dir/$lim"
    v=$(verdict_of "$f/$lim.diag.stdout")
    why=
    [ "$v" = CANNOT ] || why="diagnose says $v"
    grep -q "$var" "$f/$lim.diag.stdout" || why="$why; diagnose does not name $var"
    done_run faults "$lim" diagnose "$why" "$f/$lim.diag"
  done
fi

# ---------------------------------------------------------------- group: settings
if has settings; then
  s=$work/settings
  mkdir -p "$s"
  echo "hostile: settings"
  n=0
  # srun NAME CHECK ENV...: one small nccl-sim job with the plugin, its log verbose
  srun() {
    local name=$1 chk=$2
    shift 2
    n=$((n + 1))
    local d=$s/$n
    rm -rf "$d"
    check settings "$name" sim "0" "$s/$n" -- env "$@" NCCLSCOPE_DIR="$d" "$sim" --plugin "$plugin" \
      --scenario allreduce --ranks 2 --iters 3 --verbose
    local files why=
    files=$(ls "$d" 2>/dev/null | grep -c 'ns' || true)
    case $chk in
    on) [ "$files" -ge 1 ] || why="nothing recorded" ;;
    off) [ "$files" = 0 ] || why="recorded although disabled"
      grep -qi "NCCLSCOPE_DISABLE" "$s/$n.all" || why="$why; no log line" ;;
    warn-on) [ "$files" -ge 1 ] || why="nothing recorded"
      grep -q "configuration:" "$s/$n.all" || why="$why; no warning" ;;
    mode-*)
      "$exe" dump --stats "$d" >"$s/$n.stats" 2>&1
      grep -q "mode ${chk#mode-}" "$s/$n.stats" || why="not mode ${chk#mode-}: $(grep -o 'mode [a-z]*' "$s/$n.stats" | head -1)" ;;
    warn-mode-trace)
      "$exe" dump --stats "$d" >"$s/$n.stats" 2>&1
      grep -q "mode trace" "$s/$n.stats" || why="not mode trace"
      grep -q "configuration:" "$s/$n.all" || why="$why; no warning" ;;
    chain)
      [ "$files" -ge 1 ] || why="nothing recorded"
      grep -qi "NCCLSCOPE_CHAIN.*refused" "$s/$n.all" || why="$why; the chain to itself is not refused" ;;
    esac
    done_run settings "$name" sim "$why" "$s/$n"
  }
  for v in false no off 0 FALSE Off disabled; do srun "DISABLE=$v" on NCCLSCOPE_DISABLE="$v"; done
  for v in true yes on 1 TRUE; do srun "DISABLE=$v" off NCCLSCOPE_DISABLE="$v"; done
  for v in maybe 2 -1; do srun "DISABLE=$v" warn-on NCCLSCOPE_DISABLE="$v"; done
  for v in false no off 0; do srun "CAPTURE=$v" mode-trace NCCLSCOPE_CAPTURE="$v"; done
  for v in true yes on 1; do srun "CAPTURE=$v" mode-capture NCCLSCOPE_CAPTURE="$v"; done
  for v in maybe 2; do srun "CAPTURE=$v" warn-mode-trace NCCLSCOPE_CAPTURE="$v"; done
  for v in false no; do srun "RANGES=$v" on NCCLSCOPE_RANGES="$v"; done
  srun "RANGES=sometimes" warn-on NCCLSCOPE_RANGES=sometimes
  srun "CUPTI=false" on NCCLSCOPE_CUPTI=false
  srun "CUPTI=perhaps" warn-on NCCLSCOPE_CUPTI=perhaps
  for v in "NCCLSCOPE_BUFFER_SIZE=lots" "NCCLSCOPE_BUFFER_SIZE=-1M" "NCCLSCOPE_SAMPLE=0" \
    "NCCLSCOPE_FLUSH_MS=1.5" "NCCLSCOPE_TRACK_MAX=16" "NCCLSCOPE_MAX_THREADS=1e3"; do
    srun "$v" warn-on "$v"
  done
  cp "$plugin" "$s/libother-name.so"
  srun "CHAIN=itself" chain NCCLSCOPE_CHAIN="$plugin"
  srun "CHAIN=a-copy" chain NCCLSCOPE_CHAIN="$s/libother-name.so"
fi

# ---------------------------------------------------------------- group: outputs
if has outputs; then
  o=$work/outputs
  mkdir -p "$o"
  echo "hostile: outputs"
  [ -d "$rec_dir/healthy" ] || record healthy -- --scenario mixed --ranks 4 --procs 2 --iters 150
  h=$rec_dir/healthy
  # a file size limit on standard output: a write error (5), never SIGXFSZ
  for v in dump stats report json diagnose; do
    case $v in stats) a=(dump --stats) ;; json) a=(report --json) ;; *) a=("$v") ;; esac
    check outputs "ulimit-f" "$v" "5" "$o/lim-$v" -- bash -c 'ulimit -f 1; exec "$@" >"$0"' "$o/lim-$v.out" "$exe" "${a[@]}" "$h"
    done_run outputs "ulimit-f" "$v" "" "$o/lim-$v"
    check outputs "dev-full" "$v" "5" "$o/full-$v" -- bash -c 'exec "$@" >/dev/full' _ "$exe" "${a[@]}" "$h"
    done_run outputs "dev-full" "$v" "" "$o/full-$v"
  done
  # ... and on every export format: 5, and nothing left under the name
  for fmt in $formats; do
    rm -rf "$o/lim.$fmt"
    # OTF2 leaks its event writer when a write fails (tests/lsan-otf2.supp says where)
    lsan=${LSAN_OPTIONS-}
    [ "$fmt" = otf2 ] && lsan=suppressions=$root/tests/lsan-otf2.supp
    check outputs "ulimit-f" "$fmt" "5" "$o/lim-$fmt" -- env LSAN_OPTIONS="$lsan" bash -c 'ulimit -f 4; exec "$@"' _ "$exe" export "$h" -q --format "$fmt" -o "$o/lim.$fmt"
    why=
    [ -e "$o/lim.$fmt" ] && why="an output was left under its name"
    if [ "$fmt" = otf2 ] && [ -e "$o/lim.otf2" ] && [ "$RC" = 0 ] && [ -n "$otf2read" ] &&
      ! "$otf2read" "$o/lim.otf2/traces.otf2" "$h" >>"$o/lim-$fmt.all" 2>&1; then
      why="$why; an archive its reader rejects"
    fi
    done_run outputs "ulimit-f" "$fmt" "$why" "$o/lim-$fmt"
  done
  # an output named through a hard link to an input: refused, the input untouched
  mkdir -p "$o/in"
  cp "$h"/* "$o/in/"
  first=$(ls "$o/in" | head -1)
  cp "$o/in/$first" "$o/orig"
  for fmt in perfetto chrome sqlite; do
    rm -f "$o/link.$fmt"
    ln "$o/in/$first" "$o/link.$fmt"
    check outputs "hard-link" "$fmt" "5" "$o/link-$fmt" -- "$exe" export "$o/in" -q --force --format "$fmt" -o "$o/link.$fmt"
    cmp -s "$o/in/$first" "$o/orig" && cmp -s "$o/link.$fmt" "$o/orig" && why= || why="the input or its link was replaced"
    done_run outputs "hard-link" "$fmt" "$why" "$o/link-$fmt"
  done
  # no file that could be read: 3 from every verb
  mkdir -p "$o/none"
  "$damage" "$h/$first" "$o/none/$first" random 5 400
  for v in dump stats report json diagnose $formats; do
    rm -rf "$o/none.$v"
    case $v in
    stats) a=(dump --stats "$o/none") ;; json) a=(report --json "$o/none") ;;
    perfetto | chrome | sqlite | otf2) a=(export "$o/none" -q --format "$v" -o "$o/none.$v") ;;
    *) a=("$v" "$o/none") ;;
    esac
    check outputs "no-readable-file" "$v" "3" "$o/none-$v" -- "$exe" "${a[@]}"
    done_run outputs "no-readable-file" "$v" "" "$o/none-$v"
  done
  # two unreadable files beside good ones: the good ones exported, status 4
  mkdir -p "$o/two"
  cp "$h"/* "$o/two/"
  "$damage" "$h/$first" "$o/two/bad1.nstrace" random 1 300
  "$damage" "$h/$first" "$o/two/bad2.nstrace" random 2 300
  for fmt in $formats; do
    rm -rf "$o/two.$fmt"
    check outputs "two-unreadable" "$fmt" "4" "$o/two-$fmt" -- "$exe" export "$o/two" -q --format "$fmt" -o "$o/two.$fmt"
    done_run outputs "two-unreadable" "$fmt" "" "$o/two-$fmt"
  done
  # diff: a job without operations has nothing to compare (3), never "0 regressions"
  mkdir -p "$o/empty"
  for x in "$h"/*.nstrace; do
    k=$(awk '$3 == 7 { print $2; exit }' <("$damage" "$x" list))
    "$damage" "$x" "$o/empty/$(basename "$x")" cut "$k"
  done
  check outputs "diff-empty" diff "3" "$o/diff-empty" -- "$exe" diff "$o/empty" "$h"
  grep -q '0 regressions' "$o/diff-empty.stdout" && why="0 regressions of an empty job" || why=
  done_run outputs "diff-empty" diff "$why" "$o/diff-empty"
  check outputs "diff-same" diff "0" "$o/diff-same" -- "$exe" diff "$h" "$h"
  done_run outputs "diff-same" diff "" "$o/diff-same"
fi
secs=$(($(date +%s) - start))

# ---------------------------------------------------------------- the table
echo
awk -v secs="$secs" '
  { g = $1; runs[g]++; c[g] += $4; f[g] += $5; w[g] += $6; if (!(g in seen)) { seen[g] = 1; order[++n] = g } }
  END {
    printf "%-10s %7s %8s %15s %17s\n", "group", "runs", "crashes", "false verdicts", "wrong exit codes"
    for (i = 1; i <= n; i++) {
      g = order[i]
      printf "%-10s %7d %8d %15d %17d\n", g, runs[g], c[g], f[g], w[g]
      R += runs[g]; C += c[g]; F += f[g]; W += w[g]
    }
    printf "%-10s %7d %8d %15d %17d\n", "all", R, C, F, W
    printf "(%d s)\n", secs
  }' "$results"
bad=$(awk '$4 || $5 || $6' "$results" | wc -l)
if [ "$bad" -gt 0 ]; then
  echo
  echo "failed runs by group, input and verb (crash false wrong-rc):"
  awk '$4 || $5 || $6 { print "  " $1 " " $2 " " $3 ": " $4 " " $5 " " $6 " " $7 " " $8 }' "$results" | head -40
  [ "$bad" -gt 40 ] && echo "  ... $((bad - 40)) more"
  echo "why, per group: $work/log/GROUP.txt"
  [ $keep = 1 ] || for g in "$work"/log/*.txt; do [ -f "$g" ] && head -60 "$g"; done
fi
[ $keep = 1 ] && echo "work directory: $work"
crashes=$(awk '$4' "$results" | wc -l)
[ $failcrash = 1 ] && [ "$crashes" -gt 0 ] && exit 1
[ $failany = 1 ] && [ "$bad" -gt 0 ] && exit 1
exit 0
