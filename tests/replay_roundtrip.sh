#!/bin/sh
# Capture a nccl-sim run with NCCLSCOPE_CAPTURE=1, replay it against the plugin, and check that
# the replay recorded the same job: the job-wide `dump --stats` tables must be identical.
# Usage: replay_roundtrip.sh NCCL_SIM PLUGIN NCCLSCOPE WORKDIR [nccl-sim args...]
set -eu
sim=$1 plugin=$2 cli=$3 work=$4
shift 4
rm -rf "$work" && mkdir -p "$work"
NCCLSCOPE_CAPTURE=1 NCCLSCOPE_EVENTS=all NCCLSCOPE_DIR="$work/capture" \
  "$sim" --plugin "$plugin" "$@" > "$work/capture.out"
NCCLSCOPE_EVENTS=all NCCLSCOPE_DIR="$work/replay" \
  "$sim" --plugin "$plugin" --replay "$work/capture" --speed 0 > "$work/replay.out"
# the job table: everything from "== job" on, which has no times or pids in it; but for the lines
# of completions and GPU times, which the writer derives with wall-clock rules (an operation with
# no event for 20 ms completes from its group, and is revised when its KernelCh comes later): a
# loaded host that stalls the replaying thread changes them, not what was recorded
stats() {
  "$cli" dump --stats "$1" | sed -n '/^== job/,$p' | grep -v '^  completions \|^  GPU times of operations:'
}
stats "$work/capture" > "$work/capture.stats"
stats "$work/replay" > "$work/replay.stats"
grep -q '^  Coll ' "$work/capture.stats" || { echo "FAIL: the capture recorded no Coll"; exit 1; }
if ! diff -u "$work/capture.stats" "$work/replay.stats"; then
  echo "FAIL: the replay recorded a different job than the capture"
  exit 1
fi
echo "replay round trip: ok ($(grep -c . "$work/capture.stats") lines identical)"
