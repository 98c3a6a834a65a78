#!/bin/sh
# Replay a GPU capture through the plugin, then hold the result to the same checks the GPU run
# applied (ncs-trace-check): footers, no drops, completions, seqNumbers across ranks.
# Usage: replay_check.sh NCCL_SIM PLUGIN TRACE_CHECK CAPTURE_DIR WORKDIR [checker flags...]
set -eu
sim=$1 plugin=$2 check=$3 capture=$4 work=$5
shift 5
rm -rf "$work"
NCCLSCOPE_EVENTS=all NCCLSCOPE_DIR="$work" "$sim" --plugin "$plugin" --replay "$capture" --speed 0 >/dev/null
"$check" "$work" "$@"
