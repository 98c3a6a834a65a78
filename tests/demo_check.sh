#!/bin/sh
# demo_check.sh NCCLSCOPE WORK - `ncclscope demo` as a new user runs it: no options, from a
# directory of their own. It fits one screen (at most 24 lines), names what ran, the findings,
# the timeline and the HTML report and the next commands, leaves nothing in the current directory
# (its files go under $TMPDIR) and says how much it wrote.
set -u
N=$1 W=$2
fail() { echo "FAIL: $*"; cat "$W/out" 2>/dev/null; exit 1; }
rm -rf "$W" && mkdir -p "$W/cwd" "$W/tmp" || exit 1
(cd "$W/cwd" && TMPDIR="$W/tmp" "$N" demo >"$W/out" 2>&1) || fail "demo exited $?"
n=$(wc -l <"$W/out")
[ "$n" -le 24 ] || fail "$n lines: more than one screen"
[ -z "$(ls -A "$W/cwd")" ] || fail "demo left files in the current directory: $(ls "$W/cwd")"
for p in "^ran +nccl-sim, scenario mixed: 8 ranks in 8 processes, 200 operations per rank" \
         "^recorded +8 processes on 1 host" "^coverage +8 of 8 files read" "^findings +- " \
         "^files +$W/tmp/ncclscope-demo-[0-9-]*/ +trace, [0-9.]+ MB" \
         "[.]pftrace +timeline, [0-9.]+ MB: open it at https://ui.perfetto.dev" \
         "[.]html +report with charts, [0-9.]+ MB: open it in a browser" "MB in all" \
         "^next +D=$W/tmp/ncclscope-demo-" "ncclscope report [$]D"; do
  grep -Eq "$p" "$W/out" || fail "no line matches '$p'"
done
d=$(sed -n 's/^next *D=//p' "$W/out")
[ -d "$d" ] && [ -s "$d.pftrace" ] && [ -s "$d.html" ] || fail "the files it names are not there"
# the HTML report: one distinct colour per busbw series (the demo draws 10 or more)
python3 - "$d.html" <<'PY' || fail "the HTML report's series share colours"
import re, sys
page = open(sys.argv[1], encoding="utf-8").read()
busbw = page.split('<svg id="chart-busbw"', 1)[1].split("</svg>", 1)[0]
cols = re.findall(r'<g class="series" stroke="([^"]+)"', busbw)
assert len(cols) >= 10 and len(cols) == len(set(cols)), cols
PY
# the size it says is the size on disk (to 0.1 MB)
said=$(sed -n 's/^ *\([0-9.]*\) MB in all.*/\1/p' "$W/out")
real=$(du -cb "$d" "$d".* | tail -n 1 | cut -f1)
python3 -c "import sys; s,r=float(sys.argv[1]),int(sys.argv[2])/1e6; sys.exit(abs(s-r)>0.15)" "$said" "$real" ||
  fail "says $said MB, wrote $real bytes"
echo "demo check: ok ($n lines)"
