#!/bin/sh
# report_html.sh SIM PLUGIN NCCLSCOPE WORKDIR CASE [FIXTURES] - `ncclscope report --html FILE`
# (docs/report.md, "The HTML page"). CASE:
#   page      a 4-rank nccl-sim job with a straggler (rank 2), recorded into a directory whose name
#             holds HTML markup: the page has the three charts, the same findings as the terminal
#             report with rank 2 first, rank 2 the latest row of the heatmap, the path escaped, no
#             script and no http(s) reference; headless Chromium loads it (--dump-dom), its DOM
#             has the charts, and it logged no console message (CSP violation, script error);
#             in a window of 1280 and of 700 pixels no word of a table, list or paragraph is
#             split across two lines.
#             Chromium missing is a failure, not a skip (scripts/deps.sh test installs it).
#   errors    an unwritable FILE (no such directory, /dev/full) exits 2 with a message and no
#             report; --html - writes only the page; --json --html - is a usage error; --json
#             with --html FILE still prints the JSON.
#   fixtures  crafted traces (FIXTURES = tracegen's fixtures dir): a host name with a newline and
#             an escape sequence is shown escaped; a damaged file still gives a page, exit 1.
set -eu
SIM=$1 PLUGIN=$2 NCS=$3 W=$4 CASE=$5 FIX=${6:-}
rm -rf "$W" && mkdir -p "$W"
fail() { echo "FAIL: $*"; for f in "$W"/report.err "$W"/chromium.log; do [ -s "$f" ] && tail -n 20 "$f"; done; exit 1; }
job() { # DIR: 4 ranks, rank 2 spends 20 ms before each collective, in model time (the page's
  # findings are then the same on a loaded machine: docs/testing.md, "Known timing"), coupled as
  # NCCL's ranks are (an uncoupled rank would complete before the straggler entered, which the
  # report rejects: docs/report.md, "GPU times that cannot be right")
  NCCLSCOPE_DIR="$1" "$SIM" --plugin "$PLUGIN" --clock model --couple on --scenario allreduce --ranks 4 --iters 16 \
    --slow-rank 2 --slow-us 20000 >"$W/sim.out" || fail "nccl-sim exited $?"
}

case $CASE in
page)
  command -v chromium >/dev/null 2>&1 ||
    fail "chromium not found: apt-get install chromium (scripts/deps.sh test)"
  T="$W/job<b>&\"x'"
  job "$T"
  rc=0
  "$NCS" report --html "$W/r.html" "$T" >"$W/report.txt" 2>"$W/report.err" || rc=$?
  [ $rc -eq 0 ] || fail "report --html exited $rc"
  grep -q "^Findings" "$W/report.txt" || fail "no terminal report next to --html"
  python3 - "$W/r.html" "$W/report.txt" <<'PY' || fail "page structure"
import html, re, sys
page = open(sys.argv[1], encoding="utf-8").read()
text = open(sys.argv[2], encoding="utf-8").read()
for i in ("chart-busbw", "chart-skew", "chart-latency"):
    assert page.count('<svg id="%s"' % i) == 1, "chart %s missing" % i
assert page.count("<svg") == 3, "3 charts"
assert page.startswith("<!DOCTYPE html>") and page.rstrip().endswith("</html>")
# offline: no script, no remote or relative resource, a CSP that forbids them
low = page.lower()
assert not re.search(r"https?:", low), "http(s) reference"
assert "<script" not in low and " src=" not in low and "@import" not in low and "url(" not in low.replace("url(#", "")
assert "default-src 'none'" in page
assert not [h for h in re.findall(r'href="([^"]*)"', page) if not h.startswith("#")], "non-local link"
# the trace path is escaped
assert "job<b>" not in page and "job&lt;b&gt;&amp;&quot;x&#39;" in page, "path not escaped"
# findings: the terminal report's, same order; the straggler first
m = re.search(r'<ul id="findings-list">(.*?)</ul>', page, re.S)
items = [html.unescape(x) for x in re.findall(r"<li[^>]*>(.*?)</li>", m.group(1), re.S)]
t = text.split("Findings\n", 1)[1].split("\n\n", 1)[0]
want = []  # the terminal wraps a finding: continuation lines start with 4 spaces
for l in t.splitlines():
    if l.startswith("  - "): want.append(l[4:])
    elif l.startswith("    ") and want: want[-1] += " " + l.strip()
assert items == want, (items, want)
assert re.match(r"rank 2 \(pid \d+\) arrived last in \d+% of 16 collectives", items[0]), items[0]
# heatmap: 4 ranks x (buckets + all sizes); rank 2 has the largest mean lateness over all sizes
unit = {"ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9}
late = {}
for r, v, u in re.findall(r"<title>rank (\d+) \(pid \d+, host [^)]*\), c0 all sizes: \d+ instances, "
                          r"last to arrive in \d+; mean lateness ([0-9.]+) (ns|us|ms|s)", page):
    late[int(r)] = float(v) * unit[u]
assert sorted(late) == [0, 1, 2, 3], late
assert max(late, key=late.get) == 2, late
assert len(re.findall(r'<rect class="cell"', page)) >= 8
# busbw points and latency rows carry numeric tooltips
assert re.search(r"<title>c0 AllReduce, \d+ [KM]iB \.\. \d+ [KM]iB, \d+ instances: busbw p50 [0-9.]+ GB/s", page)
assert re.search(r"<g class=\"row\"><title>c0 AllReduce, .*p50 [0-9.]+ [mu]?s", page)
for i in ("buckets-table", "ranks-table", "procs-table", "comms-table"):
    assert 'id="%s"' % i in page, i
# busbw: a log y axis; every point shows its sample count, the same as its tooltip's; one
# colour per series
busbw = page.split('<svg id="chart-busbw"', 1)[1].split("</svg>", 1)[0]
assert "busbw GB/s (log scale)" in busbw
pts = re.findall(r'<g class="pt[^"]*"><title>c\d+ [^,]+, [^,]+, (\d+) instances:.*?<text class="n"[^>]*>(\d+)</text></g>', busbw)
assert pts and all(a == b for a, b in pts), pts
cols = re.findall(r'<g class="series" stroke="([^"]+)"', busbw)
assert len(cols) == len(set(cols)), cols
# heatmap: the colour scale is percentile-clipped, and says so
assert "95th percentile of the cells" in page
PY
  # headless Chromium: loads the page, keeps the charts, logs no console message
  rc=0
  timeout 90 chromium --headless --no-sandbox --disable-gpu --no-first-run --disable-sync \
    --disable-background-networking --disable-component-update --user-data-dir="$W/profile" \
    --enable-logging=stderr --v=0 --dump-dom "file://$W/r.html" >"$W/dom.html" 2>"$W/chromium.log" ||
    rc=$?
  [ $rc -eq 0 ] || fail "chromium --dump-dom exited $rc"
  for p in '<svg id="chart-busbw"' '<svg id="chart-skew"' '<svg id="chart-latency"' '<rect class="cell"' \
    '<polyline' '<g class="row">' '<ul id="findings-list">' 'arrived last in'; do
    grep -q "$p" "$W/dom.html" || fail "DOM from chromium lacks $p"
  done
  if grep -i ':CONSOLE' "$W/chromium.log"; then fail "chromium logged console messages"; fi
  # a screenshot of the whole page, kept in the test's directory for a person to look at
  rc=0
  timeout 90 chromium --headless --no-sandbox --disable-gpu --no-first-run --disable-sync \
    --disable-background-networking --disable-component-update --user-data-dir="$W/profile" \
    --hide-scrollbars --window-size=1280,2600 --screenshot="$W/page.png" "file://$W/r.html" \
    >>"$W/chromium.log" 2>&1 || rc=$?
  [ $rc -eq 0 ] && [ "$(wc -c <"$W/page.png")" -gt 20000 ] || fail "no screenshot (chromium exited $rc)"
  echo "screenshot: $W/page.png"
  # no word is split across lines, in a narrow window too ("AllRedu ce"): a copy of the page
  # with a script (the page itself has none, and a CSP that forbids one) that measures every word
  # of every table cell, list item and paragraph with a Range: a word drawn on two lines has
  # boxes at two heights. Paths (a '/') and words over 30 characters may break.
  python3 - "$W/r.html" "$W/probe.html" <<'PY' || fail "cannot make the probe page"
import re, sys
page = open(sys.argv[1], encoding="utf-8").read()
page = re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", page)
probe = """<script>
var split = [];
document.querySelectorAll("td, th, li, p, dd").forEach(function (el) {
  var w = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
  for (var n = w.nextNode(); n; n = w.nextNode()) {
    var re = /\\S+/g, m;
    while ((m = re.exec(n.data))) {
      if (m[0].length < 2 || m[0].length > 30 || m[0].indexOf("/") >= 0) continue;
      var r = document.createRange();
      r.setStart(n, m.index); r.setEnd(n, m.index + m[0].length);
      var tops = {};
      Array.prototype.forEach.call(r.getClientRects(), function (b) { if (b.width > 0) tops[Math.round(b.top)] = 1; });
      if (Object.keys(tops).length > 1) split.push(m[0]);
    }
  }
});
document.body.setAttribute("data-split-words", split.length + ":" + split.slice(0, 10).join(","));
</script></body>"""
open(sys.argv[2], "w", encoding="utf-8").write(page.replace("</body>", probe, 1))
PY
  for size in 1280,2000 700,2000; do
    rc=0
    timeout 90 chromium --headless --no-sandbox --disable-gpu --no-first-run --disable-sync \
      --disable-background-networking --disable-component-update --user-data-dir="$W/profile" \
      --window-size=$size --dump-dom "file://$W/probe.html" >"$W/probe-dom.html" 2>>"$W/chromium.log" || rc=$?
    [ $rc -eq 0 ] || fail "chromium --dump-dom of the probe page exited $rc"
    split=$(sed -n 's/.*data-split-words="\([^"]*\)".*/\1/p' "$W/probe-dom.html" | head -n 1)
    [ -n "$split" ] || fail "the probe did not run"
    [ "${split%%:*}" = 0 ] || fail "words split across lines in a $size window: $split"
  done
  python3 - "$W/r.html" "$W/dom.html" <<'PY' || fail "chromium's DOM differs from the page"
import sys
page, dom = (open(f, encoding="utf-8").read() for f in sys.argv[1:3])
for mark in ('<rect class="cell"', '<g class="pt">', '<g class="row">', "<li class=", "<tr>", "<svg "):
    assert page.count(mark) == dom.count(mark), (mark, page.count(mark), dom.count(mark))
PY
  ;;
errors)
  NCCLSCOPE_DIR="$W/t" "$SIM" --plugin "$PLUGIN" --scenario allreduce --ranks 4 --iters 4 \
    >"$W/sim.out" || fail "nccl-sim exited $?"
  set +e
  "$NCS" report --html "$W/no/such/dir/r.html" "$W/t" >"$W/out" 2>"$W/report.err"
  rc=$?
  [ $rc -eq 5 ] || fail "no such directory: exit $rc, want 5"
  grep -q "cannot write $W/no/such/dir/r.html: No such file" "$W/report.err" || fail "message"
  [ -s "$W/out" ] && fail "report printed although the page could not be written"
  if [ -w /dev/full ]; then
    "$NCS" report --html /dev/full "$W/t" >"$W/out" 2>"$W/report.err"
    rc=$?
    [ $rc -eq 5 ] || fail "/dev/full: exit $rc, want 5"
    FULLERR=$(python3 -c "
import os
fd = os.open('/dev/full', os.O_WRONLY)
try:
    os.write(fd, b'x')
except OSError as e:
    print(e.strerror)")
    grep -qF "cannot write /dev/full: ${FULLERR:-No space left on device}" "$W/report.err" || fail "/dev/full message"
    [ -c /dev/full ] || fail "/dev/full is gone"
  fi
  "$NCS" report --html - "$W/t" >"$W/stdout.html" 2>"$W/report.err"
  rc=$?
  [ $rc -eq 0 ] || fail "--html -: exit $rc"
  head -n 1 "$W/stdout.html" | grep -q '^<!DOCTYPE html>' || fail "--html -: no page on stdout"
  grep -q '^Findings' "$W/stdout.html" && fail "--html -: terminal report mixed into the page"
  tail -n 1 "$W/stdout.html" | grep -q '^</html>' || fail "--html -: page not complete"
  "$NCS" report --json --html - "$W/t" >/dev/null 2>"$W/report.err"
  rc=$?
  [ $rc -eq 2 ] || fail "--json --html -: exit $rc, want 2"
  "$NCS" report --json --html "$W/j.html" "$W/t" >"$W/report.json" 2>"$W/report.err"
  rc=$?
  [ $rc -eq 0 ] || fail "--json --html FILE: exit $rc"
  python3 -c "import json,sys; json.load(open(sys.argv[1]))" "$W/report.json" || fail "--json output"
  grep -q 'id="chart-skew"' "$W/j.html" || fail "--json --html FILE: no page"
  "$NCS" report --html "" "$W/t" >/dev/null 2>&1
  rc=$?
  [ $rc -eq 2 ] || fail "--html '': exit $rc, want 2"
  "$NCS" report --help | grep -q -- '--html FILE' || fail "help"
  ;;
fixtures)
  [ -d "$FIX/escape" ] || fail "no fixtures in '$FIX'"
  set +e
  "$NCS" report --html "$W/escape.html" "$FIX/escape" >/dev/null 2>"$W/report.err"
  rc=$?
  [ $rc -eq 0 ] || fail "escape fixture: exit $rc"
  grep -q 'evil\\x0ahost\\x1b\[31m' "$W/escape.html" || fail "host name not escaped"
  LC_ALL=C grep -q "$(printf '\033')" "$W/escape.html" && fail "raw escape character in the page"
  grep -q 'no collective matched across ranks' "$W/escape.html" || fail "empty heatmap not said"
  grep -q 'evil\\x0ahost\\x1b\[31m\\xff\\xc0end' "$W/escape.html" || fail "bytes that are not UTF-8 not shown as \\xNN"
  # every JSON output is UTF-8 whatever the trace's bytes: the host's 0xFF 0xC0 are U+FFFD there
  "$NCS" report --json "$FIX/escape" >"$W/escape.json" 2>/dev/null || fail "report --json of the escape fixture"
  "$NCS" export -q --force --format chrome -o "$W/escape.chrome.json" "$FIX/escape" 2>/dev/null ||
    fail "chrome export of the escape fixture"
  python3 - "$W/escape.json" "$W/escape.chrome.json" <<'PYEOF' || fail "a JSON output that is not UTF-8, or a host not escaped"
import json, sys
r = json.load(open(sys.argv[1], encoding='utf-8', errors='strict'))
assert [p['host'] for p in r['processes']] == ['evil\nhost\x1b[31m\ufffd\ufffdend'], r['processes']
c = json.load(open(sys.argv[2], encoding='utf-8', errors='strict'))
def strings(x):
    if isinstance(x, str): yield x
    elif isinstance(x, dict): yield from (s for v in list(x.keys()) + list(x.values()) for s in strings(v))
    elif isinstance(x, list): yield from (s for v in x for s in strings(v))
assert any('evil\nhost\x1b[31m\ufffd\ufffdend' in v for v in strings(c)), 'host not in the Chrome trace'
PYEOF
  "$NCS" report --html "$W/damaged.html" "$FIX/damaged" >/dev/null 2>"$W/report.err"
  rc=$?
  [ $rc -eq 4 ] || fail "damaged fixture: exit $rc, want 4"
  grep -q 'Sanitizer\|runtime error' "$W/report.err" && fail "sanitizer report"
  grep -q 'trace files are damaged' "$W/damaged.html" || fail "damaged finding missing"
  ;;
*) echo "unknown case $CASE"; exit 2 ;;
esac
echo "report html $CASE: ok"
