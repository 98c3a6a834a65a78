#!/bin/sh
# fake_sim.sh - stands in for nccl-sim in the `ncclscope demo` test: checks what demo passes and
# copies a crafted trace ($NCS_FAKE_TRACE) into $NCCLSCOPE_DIR as the plugin would write it.
case " $* " in
*" --plugin "*" --scenario mixed --ranks 2 --iters 5 --procs 2 "*) ;;
*) echo "fake_sim: unexpected arguments: $*" >&2; exit 9 ;;
esac
[ -n "$NCCL_PROFILER_PLUGIN" ] && [ -d "$NCCLSCOPE_DIR" ] || { echo "fake_sim: env not set" >&2; exit 9; }
cp "$NCS_FAKE_TRACE" "$NCCLSCOPE_DIR/simhost-$$.nstrace" || exit 9
echo "nccl-sim (fake): 2 ranks, 5 iterations"
