#!/usr/bin/env bash
# hostile.sh - the hostile-input harness (docs/testing.md, "Hostile inputs").
#
# From three nccl-sim recordings (a healthy job, a hang, a flight recording) it writes damaged
# inputs (cuts at and between chunk boundaries, flipped bits, zeroed ranges, torn, duplicated and
# swapped chunks, oversized lengths, a newer format version, header-only files, random bytes, a
# duplicated whole file, a FIFO, a sparse file, a permission-denied file) and runs every verb that
# reads traces on each, under a timeout: dump, dump --stats, report, report --json, export
# (perfetto, chrome, sqlite) and diagnose. Per verb it counts the inputs tried, the crashes (a
# signal, a sanitizer report, a timeout) and the wrong answers:
#   - exit 0 with no mention of damage on a damaged input;
#   - "nothing stands out" (report) or "OK" (diagnose) on an input that lost data;
#   - a HANG verdict on a damaged copy of a healthy recording;
#   - on the undamaged recordings: a mention of damage (a false alarm).
# Run it on an ASan+UBSan build (the default builds one in build-asan/).
#
# Usage: scripts/hostile.sh [OPTIONS]
#   --count N      damaged inputs with random parameters per recording (default 4; --full: 700)
#   --full         the full campaign: thousands of inputs
#   --seed S       random seed (default 1)
#   --build DIR    a build tree with ncclscope, nccl-sim, the plugin and ncs-damage (default: build
#                  and use build-asan/)
#   --exe FILE     the ncclscope to test (default DIR/ncclscope): another version, read with this
#                  tree's recordings and damage tool
#   --work DIR     where inputs, outputs and the log go (default: a temporary directory, removed)
#   --timeout S    per verb and input (default 60)
#   --jobs N       inputs run in parallel (default 1)
#   --fail-on-crash  exit 1 when anything crashed (the CI test)
#   --keep         keep the work directory
# Exit status: 0, or 1 with --fail-on-crash when an input crashed a verb; 2 usage or setup.
set -uo pipefail
cd "$(dirname "$0")/.."
root=$PWD
count= full=0 seed=1 build= exe= work= tmo=60 jobs=1 failcrash=0 keep=0
while [ $# -gt 0 ]; do
  case $1 in
  --count) count=$2; shift ;;
  --full) full=1 ;;
  --seed) seed=$2; shift ;;
  --build) build=$2; shift ;;
  --exe) exe=$2; shift ;;
  --work) work=$2; keep=1; shift ;;
  --timeout) tmo=$2; shift ;;
  --jobs) jobs=$2; shift ;;
  --fail-on-crash) failcrash=1 ;;
  --keep) keep=1 ;;
  -h | --help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
  *) echo "hostile.sh: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
[ -n "$count" ] || count=$([ $full = 1 ] && echo 700 || echo 4)

if [ -z "$build" ]; then
  build=build-asan
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Debug -DNCS_SANITIZE=address,undefined >/dev/null &&
    cmake --build "$build" -j"$(nproc)" --target ncclscope nccl-sim nccl-profiler-ncclscope \
      ncs-damage >/dev/null || { echo "hostile.sh: build failed" >&2; exit 2; }
fi
build=$(cd "$build" && pwd)
[ -n "$exe" ] || exe=$build/ncclscope
sim=$build/nccl-sim plugin=$build/libnccl-profiler-ncclscope.so damage=$(ls "$build"/tests/ncs-damage "$build"/ncs-damage 2>/dev/null | head -1)
for f in "$exe" "$sim" "$plugin" "$damage"; do
  [ -x "$f" ] || [ -f "$f" ] || { echo "hostile.sh: missing $f" >&2; exit 2; }
done
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

# ---------------------------------------------------------------- recordings
rec=$work/rec
mkdir -p "$rec"
record() { # name, env..., -- nccl-sim args...
  local name=$1
  shift
  local envs=()
  while [ "$1" != -- ]; do envs+=("$1"); shift; done
  shift
  env "${envs[@]}" NCCLSCOPE_DIR="$rec/$name" "$sim" --plugin "$plugin" "$@" >"$rec/$name.log" 2>&1
  ls "$rec/$name"/*.ns* >/dev/null 2>&1 || { echo "hostile.sh: recording $name failed:" >&2; tail -3 "$rec/$name.log" >&2; exit 2; }
}
echo "hostile: recording (nccl-sim + plugin) in $rec"
record healthy -- --scenario mixed --ranks 4 --procs 2 --iters 150
record hang NCCLSCOPE_EVENTS=default,proxy -- --scenario allreduce --ranks 4 --procs 2 --iters 20 \
  --fault stall:1:10 --hang-s 2
record flight NCCLSCOPE_MODE=flight NCCLSCOPE_FLIGHT_SIZE=1M -- --scenario mixed --ranks 4 \
  --procs 2 --iters 150

# ---------------------------------------------------------------- inputs
# One line per input: ID RECORDING FILE-INDEX OP ARGS... (FILE-INDEX: which file of the recording
# is damaged; the others are copied as they are).
specs=$work/specs.txt
: >"$specs"
id=0
spec() { id=$((id + 1)); echo "$id $*" >>"$specs"; }
ri=0
for r in healthy hang flight; do
  ri=$((ri + 1))
  spec "$r" 0 none # the undamaged recording: a control for false alarms
  files=("$rec/$r"/*.ns*)
  for fi in "${!files[@]}"; do
    f=${files[$fi]}
    size=$(stat -c %s "$f")
    "$damage" "$f" list >"$work/chunks-$r-$fi.txt"
    # every one-off damage on the first file; random ones spread over all files
    if [ "$fi" = 0 ]; then
      for op in version header random-small dupfile-copy dupfile-link fifo sparse perm; do spec "$r" "$fi" "$op"; done
    fi
  done
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
# ids were assigned in a subshell for the awk lines: number the file again
awk '{ $1 = NR; print }' "$specs" >"$specs.n" && mv "$specs.n" "$specs"
total=$(wc -l <"$specs")
echo "hostile: $total inputs x 8 verbs, ncclscope $exe"

# ---------------------------------------------------------------- one input
verbs="dump stats report json perfetto chrome sqlite diagnose"
# What each verb's output must contain when the input lost data. Counts of zero ("0 damaged",
# "damaged_files":0) are removed first: they say nothing happened.
mention='damag|truncat|corrupt|cannot read|refused|not a regular file|not supported|not an ncclscope|not a flight file|too large|out of bounds|bad magic|checksum|skipped|lost|never written|zero bytes|second copy|duplicate|already listed|empty|without footer|no footer|cut short|unreadable'
run_input() {
  local id=$1 r=$2 fi=$3 op=$4
  shift 4
  local in=$work/in/$id out=$work/out/$id
  rm -rf "$in" "$out"
  mkdir -p "$in" "$out"
  chmod 755 "$in"
  local files=("$rec/$r"/*.ns*) i
  for i in "${!files[@]}"; do cp "${files[$i]}" "$in/"; done
  [ -d "$rec/$r/dumps" ] && cp -r "$rec/$r/dumps" "$in/"
  local t=$in/$(basename "${files[$fi]:-x}") src=${files[$fi]:-}
  # damaged: the output must say so; lost: data is gone, so no verdict may call it fine
  local as=() damaged=1 lost=1 target=$in
  case $op in
  none) damaged=0 lost=0 ;;
  flip | zero | cut) "$damage" "$src" "$t" "$op" "$1" "${2:-0}" ;; # @N: a byte that holds data
  tear | len | random) "$damage" "$src" "$t" "$op" "$@" ;;
  dup | swap)
    "$damage" "$src" "$t" "$op" "$@"
    lost=0
    # a THREAD or STRINGS chunk written twice changes nothing
    local type
    type=$(awk -v k="$1" '$1 == k { print $3 }' "$work/chunks-$r-$fi.txt")
    [ "$op" = dup ] && { [ "$type" = 3 ] || [ "$type" = 6 ]; } && damaged=0 ;;
  version) "$damage" "$src" "$t" version 2 ;;
  random-small) "$damage" "$src" "$t" random 7 300 ;;
  header) head -c 16 "$src" >"$t" ;;
  dupfile-copy) cp "$src" "$in/copy-$(basename "$src")"; lost=0 ;;
  dupfile-link) ln "$t" "$in/link-$(basename "$src")"; damaged=0 lost=0 ;; # read once
  fifo) mkfifo "$in/fifo.nstrace" && target=$in/fifo.nstrace ;; # named on the command line
  sparse) truncate -s 100G "$t"; lost=0 ;; # a hole after the data
  perm)
    chmod 000 "$t"
    [ "$(id -u)" = 0 ] && as=(setpriv --reuid=65534 --regid=65534 --clear-groups)
    chmod 777 "$out" ;;
  esac
  # a swap of equal chunks or a cut past the end may leave the bytes as they were: no damage
  case $op in flip | zero | cut | tear | dup | swap | len | random | version | random-small)
    cmp -s "$src" "$t" && damaged=0 lost=0 ;;
  esac
  local v rc o healthy=0 res
  [ "$r" = hang ] || healthy=1
  for v in $verbs; do
    local cmd
    case $v in
    dump) cmd=(dump "$target") ;;
    stats) cmd=(dump --stats "$target") ;;
    report) cmd=(report "$target") ;;
    json) cmd=(report --json "$target") ;;
    perfetto) cmd=(export "$target" -q --format perfetto -o "$out/x.pftrace") ;;
    chrome) cmd=(export "$target" -q --format chrome -o "$out/x.json") ;;
    sqlite) cmd=(export "$target" -q --format sqlite -o "$out/x.sqlite") ;;
    diagnose) cmd=(diagnose "$target") ;;
    esac
    o=$(timeout -k 5 "$tmo" "${as[@]}" "$exe" "${cmd[@]}" 2>&1 >"$out/$v.stdout"; echo "rc=$?")
    rc=${o##*rc=}
    o=${o%rc=*}
    # stdout of dump is large: only its warnings matter, and they go to stderr
    case $v in dump | perfetto | chrome | sqlite) ;; *) o="$o$(cat "$out/$v.stdout")" ;; esac
    local s
    s=$(said "$o")
    res=ok
    if [ "$rc" -ge 124 ] || [ "$rc" = 86 ] || [ "$rc" = 87 ] || [ "$rc" = 88 ] ||
      printf '%s' "$o" | grep -Eq 'AddressSanitizer|LeakSanitizer|UndefinedBehaviorSanitizer|ThreadSanitizer|runtime error:'; then
      res=crash
    elif [ $damaged = 1 ] && [ "$rc" = 0 ] && ! printf '%s' "$s" | grep -Eiq "$mention"; then
      res=wrong:silent
    elif [ $lost = 1 ] && printf '%s' "$o" | grep -Eq 'nothing stands out|^OK'; then
      res=wrong:ok
    elif [ $damaged = 1 ] && [ $healthy = 1 ] && [ "$v" = diagnose ] && printf '%s' "$o" | grep -Eq '^HANG'; then
      res=wrong:hang
    elif [ "$op" = none ] && printf '%s' "$s" | grep -Eiq 'damag|corrupt|truncat|skipped|lost with|never defined'; then
      res=wrong:alarm
    fi
    echo "$id $r $fi $op $v $res rc=$rc"
    if [ "$res" != ok ]; then
      { echo "== $id $r $fi $op $* | $v -> $res rc=$rc"; printf '%s\n' "$o" | head -20; } >>"$work/log/$id.txt"
    fi
  done
  chmod -R u+rwX "$in" 2>/dev/null
  rm -rf "$in" "$out"
}
said() {
  printf '%s' "$1" | sed -E 's/(^|[^0-9])0 (damaged|truncated|unreadable|empty|without footer)//g;
    s/"[a-z_]*(damag|truncat|lost|skip|unread|empty|gap|dup)[a-z_]*": *(0|false|null|\[\]|"")//g'
}
export -f run_input said
export work rec damage exe tmo verbs mention
mkdir -p "$work/log"
results=$work/results.txt
start=$(date +%s)
if [ "$jobs" -gt 1 ]; then
  xargs -P "$jobs" -L 1 bash -c 'run_input "$@"' _ <"$specs" >"$results"
else
  while read -r line; do run_input $line; done <"$specs" >"$results"
fi
secs=$(($(date +%s) - start))

# ---------------------------------------------------------------- the table
echo
awk -v total="$total" -v secs="$secs" '
  { v = $5; tried[v]++; if ($6 == "crash") crash[v]++; if ($6 ~ /^wrong/) { wrong[v]++; kind[v, $6]++ } }
  END {
    n = split("dump stats report json perfetto chrome sqlite diagnose", order, " ")
    name["dump"] = "dump"; name["stats"] = "dump --stats"; name["report"] = "report"
    name["json"] = "report --json"; name["perfetto"] = "export perfetto"; name["chrome"] = "export chrome"
    name["sqlite"] = "export sqlite"; name["diagnose"] = "diagnose"
    printf "%-16s %6s %8s %6s   %s\n", "verb", "tried", "crashed", "wrong", "wrong: silent / ok / hang / false alarm"
    for (i = 1; i <= n; i++) {
      v = order[i]
      printf "%-16s %6d %8d %6d   %d / %d / %d / %d\n", name[v], tried[v], crash[v], wrong[v],
        kind[v, "wrong:silent"], kind[v, "wrong:ok"], kind[v, "wrong:hang"], kind[v, "wrong:alarm"]
      T += tried[v]; C += crash[v]; W += wrong[v]
    }
    printf "%-16s %6d %8d %6d\n", "all", T, C, W
    printf "(%d inputs, %d s)\n", total, secs
  }' "$results"
echo
echo "wrong answers by damage (input op: verbs)"
awk '$6 ~ /^wrong/ { k = $4 " " $6; n[k]++ } END { for (k in n) print "  " k ": " n[k] }' "$results" | sort
crashes=$(awk '$6 == "crash"' "$results" | wc -l)
if [ "$crashes" -gt 0 ]; then
  echo "crashes:"
  awk '$6 == "crash" { print "  input " $1 " (" $2 " file " $3 " " $4 "): " $5 " " $7 }' "$results" | head -20
  [ $keep = 1 ] && echo "details: $work/log/"
fi
[ $keep = 1 ] && echo "work directory: $work"
[ $failcrash = 1 ] && [ "$crashes" -gt 0 ] && exit 1
exit 0
