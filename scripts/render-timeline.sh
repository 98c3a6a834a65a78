#!/usr/bin/env bash
# Render an ncclscope timeline to a PNG without a Perfetto UI: export the trace as Chrome JSON,
# draw it with the small canvas viewer below (one row per track, lanes of a row stacked the way
# Perfetto merges them, slices coloured by kind, flow arrows, counters) in headless Chromium,
# and take a screenshot. This is how docs/img/timeline.png is made (docs/timeline.md).
#
# Usage: scripts/render-timeline.sh [-b BUILD] [-o PNG] [-r RANKS] [-w FROM_MS:LEN_MS] [TRACE]
#   TRACE   a trace directory or an exported .json (default: record a small job with nccl-sim:
#           allreduce, 4 ranks in 4 processes, 3 iterations, 2 channels)
#   -b      build directory (default build/)
#   -o      output PNG (default timeline.png)
#   -r      ranks to draw, besides the job tracks (default 2)
#   -w      time window in ms from the start of the trace (default: the first two collectives
#           of the first rank drawn)
#   -s      size WxH (default 1600x900)
# Needs: chromium (apt-get install chromium), python3.
set -euo pipefail
B=build OUTPNG=timeline.png RANKS=2 WIN= SIZE=1600x900
while getopts "b:o:r:w:s:h" c; do
  case $c in
  b) B=$OPTARG ;;
  o) OUTPNG=$OPTARG ;;
  r) RANKS=$OPTARG ;;
  w) WIN=$OPTARG ;;
  s) SIZE=$OPTARG ;;
  *) sed -n '2,18p' "$0"; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
command -v chromium >/dev/null || { echo "needs chromium: apt-get install chromium" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
in=${1:-}
if [ -z "$in" ]; then
  in=$tmp/trace
  NCCLSCOPE_DIR=$in NCCLSCOPE_EVENTS=all NCCLSCOPE_CLOCK=monotonic "$B/nccl-sim" \
    --plugin "$B/libnccl-profiler-ncclscope.so" --scenario allreduce --ranks 4 --procs 4 \
    --iters 3 --channels 2 >/dev/null
fi
json=$in
if [ -d "$in" ]; then
  json=$tmp/trace.json
  "$B/ncclscope" export -q -f chrome "$in" -o "$json"
fi

python3 - "$json" "$tmp/view.html" "$RANKS" "$WIN" <<'PY'
import json, sys
src, out, ranks, win = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
data = open(src).read()
json.loads(data)  # must parse
page = open(out, "w")
page.write("<!doctype html><meta charset=utf-8><body style='margin:0;background:#fff'>"
           "<canvas id=c></canvas><script>\n")
page.write("const T=" + data + ";\nconst RANKS=%d, WIN=%s;\n" % (ranks, json.dumps(win)))
page.write(r"""
const W = innerWidth, H = innerHeight, LABEL = 230, TOP = 34, LANE = 10, GAP = 4, MAXLANES = 4;
const cv = document.getElementById('c'); cv.width = W; cv.height = H;
const g = cv.getContext('2d');
const col = {api:'#7aa6da', group:'#b7a0d8', coll:'#e07b39', p2p:'#d9a13b', ce:'#9c9c9c',
  kernel:'#5aa469', proxyop:'#4f81bd', proxystep:'#8fb9e8', proxyctrl:'#a0a0a0', net:'#c9a0dc',
  phase:'#cfe2f3', state:'#444', job:'#c0504d', other:'#888'};
const pname = {}, psort = {}, tname = {}, tsort = {}, sl = {}, flows = {}, ctr = {};
for (const e of T.traceEvents) {
  if (e.ph === 'M') {
    if (e.name === 'process_name') pname[e.pid] = e.args.name;
    else if (e.name === 'process_sort_index') psort[e.pid] = e.args.sort_index;
    else if (e.name === 'thread_name') tname[e.pid + ':' + e.tid] = e.args.name;
    else if (e.name === 'thread_sort_index') tsort[e.pid + ':' + e.tid] = e.args.sort_index;
  } else if (e.ph === 'X') (sl[e.pid + ':' + e.tid] ||= []).push(e);
  else if (e.ph === 's' || e.ph === 'f') (flows[e.id] ||= {})[e.ph] = e;
  else if (e.ph === 'C') (ctr[e.pid + ':' + e.name] ||= []).push(e);
}
// the window: the first two collectives of the first rank drawn, unless given
let t0 = 1e300, t1 = -1e300;
const jobPid = Object.keys(pname).find(p => pname[p] === 'job');
const first = Object.keys(pname).filter(p => p !== jobPid)
  .sort((a, b) => (psort[a] ?? 0) - (psort[b] ?? 0))[0];
const colls = Object.keys(sl).filter(k => k.split(':')[0] === first).flatMap(k => sl[k])
  .filter(e => e.cat === 'coll' || e.cat === 'p2p').sort((a, b) => a.ts - b.ts);
if (WIN) { const [a, l] = WIN.split(':').map(Number); t0 = a * 1000; t1 = t0 + l * 1000; }
else if (colls.length) {
  for (const j of colls.slice(0, 2)) { t0 = Math.min(t0, j.ts); t1 = Math.max(t1, j.ts + j.dur); }
  const pad = (t1 - t0) * 0.08; t0 -= pad; t1 += pad;
} else for (const k in sl) for (const e of sl[k]) { t0 = Math.min(t0, e.ts); t1 = Math.max(t1, e.ts + e.dur); }
const X = t => LABEL + (t - t0) / (t1 - t0) * (W - LABEL - 8);
// processes: the job, then the first RANKS ranks
const pids = Object.keys(pname).sort((a, b) => (psort[a] ?? 0) - (psort[b] ?? 0))
  .filter(p => p === jobPid || (psort[p] ?? 0) < RANKS);
// rows: lanes "name #k" of one track merge into one row (as sibling_merge_key does in Perfetto)
let y = TOP; const pos = {};
g.font = '11px sans-serif'; g.textBaseline = 'middle';
for (const p of pids) {
  g.fillStyle = '#222'; g.font = 'bold 12px sans-serif'; g.fillText(pname[p], 6, y + 8);
  g.fillStyle = '#eee'; g.fillRect(0, y + 17, W, 1); y += 20; g.font = '11px sans-serif';
  const rows = {};
  for (const k in sl) {
    if (k.split(':')[0] !== p) continue;
    const vis = sl[k].filter(e => e.ts < t1 && e.ts + e.dur > t0);
    if (!vis.length) continue;
    const base = (tname[k] || k).replace(/ #\d+$/, '');
    (rows[base] ||= {sort: 1e18, lanes: []}).lanes.push(k);
    rows[base].sort = Math.min(rows[base].sort, tsort[k] ?? 0);
  }
  let group = '';
  for (const name of Object.keys(rows).sort((a, b) => rows[a].sort - rows[b].sort)) {
    const r = rows[name]; let sub = 0;
    r.lanes.sort((a, b) => (tsort[a] ?? 0) - (tsort[b] ?? 0));
    if (y > H - 20) break;
    const parts = name.split(' / '), leaf = parts.pop(), grp = parts.join(' / ');
    if (grp !== group) {   // a communicator's group track: a header, its rows indented
      group = grp;
      if (grp) { g.fillStyle = '#222'; g.fillText(grp.length > 34 ? grp.slice(0, 33) + '\u2026' : grp, 10, y + 5); y += 12; }
    }
    g.fillStyle = '#444'; g.fillText(leaf, grp ? 22 : 10, y + 5);
    let nl = 0;
    for (const k of r.lanes) {
      if (++nl > MAXLANES) { g.fillStyle = '#888';
        g.fillText('+' + (r.lanes.length - MAXLANES) + ' more lanes', LABEL - 80, y + sub * LANE - 4); break; }
      // nested slices (phases in their step) one level down within the lane
      const ev = sl[k].filter(e => e.ts < t1 && e.ts + e.dur > t0).sort((a, b) => a.ts - b.ts || b.dur - a.dur);
      const stack = []; let maxd = 0;
      for (const e of ev) {
        while (stack.length && stack[stack.length - 1] <= e.ts) stack.pop();
        const d = stack.length; stack.push(e.ts + e.dur); maxd = Math.max(maxd, d);
        const x0 = Math.max(LABEL, X(e.ts)), x1 = Math.min(W - 8, X(e.ts + e.dur));
        const yy = y + (sub + d) * LANE;
        if (yy > H - 4) continue;
        g.fillStyle = col[e.cat] || '#888'; g.fillRect(x0, yy, Math.max(1, x1 - x0 - 0.5), LANE - 1);
        pos[k + '@' + e.ts] = [x0, yy + LANE / 2];
        if (x1 - x0 > 40) { g.fillStyle = e.cat === 'phase' ? '#333' : '#fff';
          g.save(); g.beginPath(); g.rect(x0, yy, x1 - x0, LANE); g.clip();
          g.font = '9px sans-serif'; g.fillText(e.name, x0 + 2, yy + LANE / 2); g.restore(); g.font = '11px sans-serif'; }
      }
      sub += maxd + 1;
    }
    r.y = y; y += sub * LANE + GAP;
    for (const k of r.lanes) pos[k] = r;
  }
  for (const key in ctr) {   // counters of this process
    if (key.split(':')[0] !== p || y > H - 30) continue;
    const ev = ctr[key].sort((a, b) => a.ts - b.ts); let mx = 0;
    for (const e of ev) mx = Math.max(mx, e.args.value);
    g.fillStyle = '#444'; g.fillText(key.split(':').slice(1).join(':'), 10, y + 10);
    g.strokeStyle = '#2a7'; g.beginPath(); let last = y + 20;
    g.moveTo(LABEL, last);
    for (const e of ev) { if (e.ts > t1) break; const yy = y + 20 - (mx ? e.args.value / mx * 18 : 0);
      const x = Math.max(LABEL, X(e.ts)); g.lineTo(x, last); g.lineTo(x, yy); last = yy; }
    g.lineTo(W - 8, last); g.stroke(); y += 26;
  }
  y += 4;
}
// flows: the arrows between slices that are drawn
g.strokeStyle = 'rgba(30,30,30,0.55)'; g.lineWidth = 1;
for (const id in flows) {
  const f = flows[id]; if (!f.s || !f.f) continue;
  const a = nearest(f.s), b = nearest(f.f); if (!a || !b) continue;
  g.beginPath(); g.moveTo(a[0], a[1]); g.lineTo(b[0], b[1]); g.stroke();
  const ang = Math.atan2(b[1] - a[1], b[0] - a[0]);
  g.beginPath(); g.moveTo(b[0], b[1]);
  g.lineTo(b[0] - 6 * Math.cos(ang - 0.4), b[1] - 6 * Math.sin(ang - 0.4));
  g.lineTo(b[0] - 6 * Math.cos(ang + 0.4), b[1] - 6 * Math.sin(ang + 0.4)); g.fill();
}
function nearest(e) {   // the slice of that lane around the flow event
  const k = e.pid + ':' + e.tid; let best = null;
  for (const s of sl[k] || []) if (s.ts <= e.ts && s.ts + s.dur >= e.ts && pos[k + '@' + s.ts]) best = pos[k + '@' + s.ts];
  return best;
}
// time axis and legend
g.fillStyle = '#fff'; g.fillRect(0, 0, W, TOP - 4); g.fillStyle = '#222'; g.font = '11px sans-serif';
const span = t1 - t0, step = Math.pow(10, Math.floor(Math.log10(span / 8)));
const st = span / step > 40 ? step * 5 : span / step > 16 ? step * 2 : step;
for (let t = Math.ceil(t0 / st) * st; t < t1; t += st) {
  g.fillRect(X(t), 18, 1, 6); g.fillText((t / 1000).toFixed(st < 1000 ? 2 : 1) + ' ms', X(t) + 2, 12);
}
let lx = 6; g.font = '10px sans-serif';
for (const c of ['job', 'coll', 'p2p', 'api', 'kernel', 'proxyop', 'proxystep', 'phase', 'net']) {
  g.fillStyle = col[c]; g.fillRect(lx, 24, 10, 8); g.fillStyle = '#222'; g.fillText(c, lx + 13, 28);
  lx += 20 + g.measureText(c).width;
}
""")
page.write("</script>\n")
page.close()
PY

w=${SIZE%x*} h=${SIZE#*x}
chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
  --disable-background-networking --disable-component-update --disable-sync \
  --user-data-dir="$tmp/profile" --virtual-time-budget=10000 --hide-scrollbars \
  --screenshot="$OUTPNG" --window-size="$w,$h" "file://$tmp/view.html" 2>"$tmp/chromium.log" ||
  { cat "$tmp/chromium.log" >&2; exit 1; }
echo "wrote $OUTPNG"
