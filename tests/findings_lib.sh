# Sourced by findings_check.sh and stall_check.sh (after they set SIM PLUGIN NCS W R P): record
# nccl-sim jobs in model time, coupled, and read the report's JSON and text.
fail() { echo "FAIL: $*"; exit 1; }
# job SCENARIO ITERS SEED [sim options]: record it into $W/t, write the report's JSON and text
job() {
  scenario=$1 iters=$2 seed=$3
  shift 3
  rm -rf "$W/t"
  NCCLSCOPE_DIR="$W/t" "$SIM" --plugin "$PLUGIN" --clock model --scenario "$scenario" --ranks "$R" --procs "$P" \
    --iters "$iters" --couple on --seed "$seed" "$@" >"$W/sim.out" 2>&1 || fail "nccl-sim $* (seed $seed)"
  "$NCS" report --json "$W/t" >"$W/r.json" || fail "report --json exited $? (seed $seed)"
  "$NCS" report "$W/t" >"$W/r.txt" || fail "report exited $? (seed $seed)"
}
