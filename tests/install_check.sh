#!/bin/sh
# install_check.sh - the installed ncclscope works on its own (docs/install.md).
#   install_check.sh tree BUILD WORK   cmake --install into WORK/inst, then record and demo from
#                                      there, with the build directory out of reach
#   install_check.sh deb BUILD WORK    cpack -G DEB, then dpkg -i into a scratch root (WORK/root)
#                                      and the same checks there; needs root (dpkg), exits 77
#                                      (skipped, with the reason) otherwise
set -u
mode=$1 B=$2 W=$3
fail() { echo "FAIL: $*"; for f in "$W"/*.err "$W"/*.log; do [ -s "$f" ] && { echo "--- $f"; tail -n 20 "$f"; }; done; exit 1; }
rm -rf "$W" && mkdir -p "$W" || fail "cannot create $W"

# checks on an installed tree at prefix $1 (bin, lib*, share/doc)
check_tree() {
  P=$1
  for f in bin/ncclscope bin/nccl-sim share/doc/ncclscope/README.md share/doc/ncclscope/cli.md \
           share/doc/ncclscope/glossary.md include/ncclscope.h share/ncclscope/dashboards/ncclscope.json; do
    [ -e "$P/$f" ] || fail "$f is not installed under $P"
  done
  # what the docs tell users to use works from the installed tree: the range API's header
  # compiles on its own (docs/ranges.md), the dashboard is Grafana JSON (docs/metrics.md)
  printf '#include <ncclscope.h>\nint main(void) { ncclscope_range_push("step"); ncclscope_range_pop(); return 0; }\n' \
    >"$W/ranges.c"
  cc -std=c11 -Wall -Werror -I"$P/include" -o "$W/ranges" "$W/ranges.c" -ldl >"$W/cc.log" 2>&1 ||
    fail "a program cannot use the installed include/ncclscope.h"
  "$W/ranges" || fail "a program of the installed header fails without ncclscope"
  python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert d['panels'] and d['title'], d.keys()" \
    "$P/share/ncclscope/dashboards/ncclscope.json" || fail "the installed dashboard is not Grafana JSON"
  so=$(find "$P" -name libnccl-profiler-ncclscope.so | head -n 1)
  [ -n "$so" ] || fail "the plugin is not installed under $P"
  case "$so" in "$P"/lib*) ;; *) fail "the plugin is not in a library directory: $so" ;; esac
  # record finds the plugin relative to itself: no NCCLSCOPE_PLUGIN, run from elsewhere
  mkdir -p "$W/cwd"
  (cd "$W/cwd" && env -u NCCLSCOPE_PLUGIN -u NCCLSCOPE_SIM "$P/bin/ncclscope" record -o "$W/rec" -- \
     "$P/bin/nccl-sim" --scenario allreduce --ranks 2 --iters 5 >"$W/record.log" 2>"$W/record.err") ||
    fail "installed record failed"
  grep -q "trace written to .*(1 file)" "$W/record.err" || fail "record wrote no trace"
  grep -q "$so" "$W/record.err" && fail "record names the plugin as missing"
  "$P/bin/ncclscope" report "$W/rec" >"$W/report.log" 2>"$W/report.err" || fail "installed report failed"
  grep -q "AllReduce" "$W/report.log" || fail "the report lacks AllReduce"
  (cd "$W/cwd" && env -u NCCLSCOPE_PLUGIN -u NCCLSCOPE_SIM "$P/bin/ncclscope" demo --ranks 2 \
     --iters 10 >"$W/demo.log" 2>"$W/demo.err") || fail "installed demo failed"
  grep -q "timeline" "$W/demo.log" "$W/demo.err" || fail "the demo names no timeline"
  echo "ok: $P: record, report and demo run from the installed tree"
}

case "$mode" in
tree)
  cmake --install "$B" --prefix "$W/inst" >"$W/install.log" 2>&1 || fail "cmake --install failed"
  check_tree "$W/inst"
  ;;
deb)
  if [ "$(id -u)" -ne 0 ]; then
    echo "SKIP: dpkg -i needs root (uid $(id -u)); .ci/run runs this test as root"
    exit 77
  fi
  for t in cpack dpkg dpkg-deb dpkg-shlibdeps; do
    command -v $t >/dev/null 2>&1 || fail "$t not found (apt-get install dpkg-dev cmake)"
  done
  (cd "$B" && cpack -G DEB -B "$W/pkg" >"$W/cpack.log" 2>&1) || fail "cpack -G DEB failed"
  deb=$(ls "$W"/pkg/ncclscope_*.deb 2>/dev/null | head -n 1)
  [ -n "$deb" ] || fail "cpack wrote no ncclscope_*.deb"
  dpkg-deb -f "$deb" Depends | grep -q libc6 || fail "the package declares no Depends on libc6"
  # its dependencies are there on this machine (a dry run against the machine's own database)
  dpkg --dry-run -i "$deb" >"$W/dryrun.log" 2>&1 || fail "dpkg --dry-run -i: dependencies not met"
  # installed into a scratch root with a database of its own: the machine is left alone. The
  # root holds only this package, so its Depends (checked above) are waived there.
  R=$W/root
  mkdir -p "$R/var/lib/dpkg/info" "$R/var/lib/dpkg/updates" && : >"$R/var/lib/dpkg/status" &&
    : >"$R/var/lib/dpkg/available" || fail "cannot make the scratch root"
  dpkg --root="$R" --force-depends --force-script-chrootless -i "$deb" >"$W/dpkg.log" 2>&1 ||
    fail "dpkg -i into the scratch root failed"
  dpkg --root="$R" -s ncclscope | grep -q "Status: install ok installed" || fail "not installed"
  dpkg --root="$R" -L ncclscope >"$W/files.log" || fail "dpkg -L failed"
  check_tree "$R/usr"
  dpkg --root="$R" --force-script-chrootless -r ncclscope >"$W/remove.log" 2>&1 || fail "dpkg -r failed"
  [ -e "$R/usr/bin/ncclscope" ] && fail "dpkg -r left bin/ncclscope behind"
  echo "ok: $(basename "$deb") installed, used and removed"
  ;;
*) echo "usage: install_check.sh tree|deb BUILD WORK"; exit 2 ;;
esac
