#!/usr/bin/env bash
# Install the Debian packages ncclscope needs to build and test. Safe to run again: it only
# installs what is missing. Usage: scripts/deps.sh [build|test]
set -euo pipefail
# libmicrohttpd-dev and libcurl4-openssl-dev: the headers of the live metrics' libraries, which
# the plugin loads at run time (docs/metrics.md); the tests run Debian's prometheus and node_exporter.
# libopen-trace-format2-dev: the OTF2 export (optional at build time, docs/otf2.md); otf2-tools: its tests
want=(cmake make gcc pkg-config libcmocka-dev libsqlite3-dev libmicrohttpd-dev libcurl4-openssl-dev
      libopen-trace-format2-dev)
if [ "${1:-build}" = test ]; then
  want+=(python3 clang libclang-rt-14-dev protobuf-compiler chromium sqlite3 valgrind procps
         prometheus prometheus-node-exporter otf2-tools dpkg-dev)
fi
missing=()
for p in "${want[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "deps: installing ${missing[*]}"
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO=sudo
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
