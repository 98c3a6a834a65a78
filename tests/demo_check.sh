#!/bin/sh
# demo_check.sh NCCLSCOPE WORK MODE - `ncclscope demo` as a new user runs it (docs/cli.md,
# "ncclscope demo").
#   screen     no options, from a directory of their own: one screen (at most 24 lines) that names
#              what ran and what was injected, the findings, the verdict, the timeline, the HTML
#              report and the next commands; nothing left in the current directory (its files go
#              under $TMPDIR); the size it says is the size on disk; the next commands run as
#              printed, with ncclscope not on PATH; a second run into the same directory replaces
#              the first (report reads one run), traces another command wrote are refused
#              without --force; the faults whose verdicts rest on logic, not timing: a hang
#              (diagnose: HANG, naming the rank) and a desync (DESYNC and a mismatch finding)
#   scenarios  the faults whose showing rests on injected timing (in model time: exact): a straggler
#              named by the findings, a one-off stall by the worst-wait line (and by the findings
#              once the report has a stall finding), a slow link by the slowest-link line
set -u
N=$1 W=$2 MODE=${3:-screen}
fail() { echo "FAIL: $*"; cat "$W/out" 2>/dev/null; exit 1; }
rm -rf "$W" && mkdir -p "$W/cwd" "$W/tmp" || exit 1
has() { grep -Eq "$1" "$W/out" || fail "${2:-no line matches '$1'}"; }
# a small run of a scenario into $W/$1 (4 ranks: the fault is on rank 3)
demo() { d=$1; shift; "$N" demo -o "$W/$d" --ranks 4 --wide "$@" >"$W/out" 2>"$W/err" || { cat "$W/err"; fail "demo $* exited $?"; }; }

case $MODE in
screen)
  (cd "$W/cwd" && COLUMNS=100 TMPDIR="$W/tmp" "$N" demo >"$W/out" 2>"$W/err") || fail "demo exited $?"
  n=$(cat "$W/out" "$W/err" | wc -l)
  [ "$n" -le 24 ] || fail "$n lines: more than one screen"
  [ -z "$(ls -A "$W/cwd")" ] || fail "demo left files in the current directory: $(ls "$W/cwd")"
  for p in "^ran +nccl-sim, scenario healthy: 8 ranks in 8 processes, 200 operations per rank" \
           "^injected +nothing: a healthy job" "^recorded +8 processes on 1 host" \
           "^coverage +8 of 8 files read" "^findings +- " "^verdict +OK " \
           "^files +D=$W/tmp/ncclscope-demo-[0-9-]*$" "^ +[$]D/ +trace, [0-9.]+ (KiB|MiB)" \
           "^ +[$]D[.]pftrace +timeline, [0-9.]+ (KiB|MiB): open it at https://ui.perfetto.dev" \
           "^ +[$]D[.]html +report with charts, [0-9.]+ (KiB|MiB): open it in a browser" \
           "(KiB|MiB) in all .*rm -r [$]D [$]D[.][*]" "^next .* report [$]D"; do
    has "$p"
  done
  # with COLUMNS=100 (a terminal of 100 columns) the screen fits it (docs/cli.md, "Terminal output")
  awk -v w=100 'length($0) > w { bad = 1 } END { exit bad }' "$W/out" || fail "a line wider than 100 columns"
  d=$(sed -n 's/^files *D=//p' "$W/out")
  [ -d "$d" ] && [ -s "$d.pftrace" ] && [ -s "$d.html" ] || fail "the files it names are not there"
  # the HTML report: one distinct colour per busbw series (the demo draws 10 or more)
  python3 - "$d.html" <<'PY' || fail "the HTML report's series share colours"
import re, sys
page = open(sys.argv[1], encoding="utf-8").read()
busbw = page.split('<svg id="chart-busbw"', 1)[1].split("</svg>", 1)[0]
cols = re.findall(r'<g class="series" stroke="([^"]+)"', busbw)
assert len(cols) >= 10 and len(cols) == len(set(cols)), cols
PY
  # the size it says is the size on disk (to 0.1 of its unit)
  python3 - "$W/out" "$d" <<'PY' || fail "the size it says is not what it wrote"
import glob, os, re, sys
said = re.search(r"([0-9.]+) (KiB|MiB) in all", open(sys.argv[1]).read())
val = float(said.group(1)) * (1024 if said.group(2) == "KiB" else 1 << 20)
d = sys.argv[2]
real = sum(os.path.getsize(f) for f in glob.glob(d + "/*") + glob.glob(d + ".*") if os.path.isfile(f)
           and not os.path.basename(f).startswith("."))
assert abs(val - real) <= 0.1 * (1024 if said.group(2) == "KiB" else 1 << 20), (val, real)
PY
  # the next commands run as printed, from the directory the demo ran in, with no ncclscope on
  # PATH: they name it by its path
  sed -n '/^next /,$p' "$W/out" | grep '[$]D' | sed 's/^next *//; s/^ *//; s/  .*//' >"$W/next"
  [ "$(wc -l <"$W/next")" -ge 4 ] || fail "fewer than 4 next commands"
  grep -q '^ncclscope ' "$W/next" && fail "a next command names ncclscope, which is not on PATH here"
  has "ncclscope is not on PATH: export PATH=" "no hint how to put ncclscope on PATH"
  while read -r c; do
    (cd "$W/cwd" && D=$d PATH=/usr/bin:/bin sh -c "$c" >"$W/next.out" 2>&1) || { cat "$W/next.out"; fail "'$c' failed"; }
  done <"$W/next"
  # run again into the same directory: the run is replaced, not added (report reads one run)
  demo again --iters 20
  demo again --iters 20 --scenario desync
  [ "$(ls "$W/again"/*.nstrace | wc -l)" = 4 ] || fail "a second run added files: $(ls "$W/again")"
  "$N" report "$W/again" >"$W/report.out" 2>&1 || { cat "$W/report.out"; fail "report after a second demo run"; }
  has "^injected +rank 3 calls its collective 6 with twice the others' count: a desync [(]nccl-sim --fault mismatch:3:6[)]"
  has "^findings +- 1 collective instances differ across ranks, e.g. AllReduce seq 6 on c0 0x[0-9a-f]{16}: rank 3 differs"
  has "^verdict +DESYNC mismatched AllReduce #6: rank 3 called it"
  # traces that no demo wrote are kept, unless --force
  mkdir -p "$W/theirs" && cp "$W/again/$(ls "$W/again" | grep nstrace | head -n 1)" "$W/theirs/x.nstrace"
  "$N" demo -o "$W/theirs" --ranks 2 --iters 10 >"$W/out" 2>&1 && fail "demo replaced traces it did not write"
  [ $? = 5 ] || fail "demo into a directory of another's traces: status not 5"
  [ -s "$W/theirs/x.nstrace" ] || fail "the refused demo removed a trace"
  grep -q "that no demo wrote.*--force" "$W/out" || fail "the refusal does not say why"
  "$N" demo -o "$W/theirs" --ranks 2 --iters 10 --force >"$W/out" 2>&1 || fail "demo --force"
  [ ! -e "$W/theirs/x.nstrace" ] || fail "--force left the other traces"
  # a hang: injected, and diagnose's verdict names the rank that never entered
  demo hang --iters 20 --scenario hang
  has "^injected +rank 3 never calls its collective 6: the others hang in it .*[(]nccl-sim --fault skip:3:6 --hang-s 2[)]"
  has "^verdict +HANG rank 3 never entered AllReduce #6 [(]communicator c0 0x[0-9a-f]{16}[)]"
  # the demo's scenarios run in model time (their findings do not depend on the machine's load);
  # a long warning is cut on the screen (the hang's gpu_check: what it left without GPU times)
  COLUMNS=80 "$N" demo -o "$W/dflt" --ranks 4 --iters 20 --scenario hang >"$W/out" 2>"$W/err" || fail "demo --scenario hang exited $?"
  has "^ran +nccl-sim, scenario hang: 4 ranks in 4 processes, 20 operations per"
  tr -s '\n ' '  ' <"$W/out" | grep -q "on the CPU (in model time: the host and GPU times are nccl-sim's" ||
    fail "the ran line does not say model time"
  has "^ +! [0-9]+ of [0-9]+ rank operations have no GPU time: [0-9]+ completions rejected" \
    "no short gpu_check line (completions taken back in the hang)"
  awk '/^ +! / { n = 1; next } n && /^            / { n++; next } { if (n > 3) bad = 1; n = 0 } END { exit bad }' "$W/out" ||
    fail "a warning takes more than 3 lines of the screen"
  "$N" demo --scenario nosuch --ranks 2 >"$W/out" 2>&1 && fail "an unknown scenario ran"
  has "no scenario 'nosuch': healthy, straggler, stall, hang, slow-link, desync"
  echo "demo check: ok ($n lines)"
  ;;
scenarios)
  demo straggler --iters 60 --scenario straggler
  has "^injected +rank 3 sleeps 10 ms before each of its collectives: a straggler [(]nccl-sim --slow-rank 3 --slow-us 10000[)]"
  has "^findings +- rank 3 [(]pid [0-9]+[)] arrived last in 100% of 60 collectives" "the findings do not name the straggler"
  demo stall --iters 60 --scenario stall
  has "^injected +rank 3 sleeps 1 s once, before its collective 18: a one-off stall [(]nccl-sim --pause 3:18:1000[)]"
  python3 - "$W/out" <<'PY' || fail "the worst-wait line does not show the stall"
import re, sys
m = re.search(r"^worst +AllReduce #(\d+) on c0, .*? waited ([0-9.]+) (ms|s) for rank (\d+)", open(sys.argv[1]).read(), re.M)
assert m, "no worst line"
wait = float(m.group(2)) * (1e-3 if m.group(3) == "ms" else 1)
assert m.group(4) == "3" and wait >= 0.9 and int(m.group(1)) >= 18, m.groups()
PY
  # the hook for the report's stall finding: once the report has one ("stalls" in its JSON), the
  # demo's findings must name the stall too
  if "$N" report -j "$W/stall" 2>/dev/null | grep -q '"stalls"'; then
    grep -Eq "^(findings)? +- stall: rank 3 [(]pid [0-9]+[)] held up AllReduce seq 18 " "$W/out" ||
      fail "the report has stall findings, the demo does not name rank 3's before collective 18"
  fi
  demo slowlink --iters 40 --scenario slow-link
  has "^injected +each network transfer of rank 3 takes 5 ms longer: a slow link"
  # the slow link has rank 3 at one end: measured at rank 3 ("rank 3 from rank 2") or at its peer
  # ("rank 2 to rank 3", a send that waits on rank 3); the two ends' figures are within a few
  # percent, and which is lower depends on the order threads ran in (model time is not bit-identical)
  has "^links +the slowest: c0 rank (3 (to|from) rank [0-9]+|[0-9]+ (to|from) rank 3), channel [0-9]+:" \
    "the slowest link is not one of rank 3's"
  echo "demo check: ok (scenarios)"
  ;;
*) echo "usage: demo_check.sh NCCLSCOPE WORK screen|scenarios"; exit 2 ;;
esac
