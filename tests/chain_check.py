#!/usr/bin/env python3
"""chain_check.py - NCCLSCOPE_CHAIN against nccl-sim's own counts (docs/chain.md, "Tests").

usage: chain_check.py SIM NCCLSCOPE CLI CHAINED WORKDIR CASE [nccl-sim args...]

Runs nccl-sim with ncclscope (NCCLSCOPE_EVENTS from the environment, default all) chaining the
plugin CHAINED (the test logger, tests/chain_logger.c, configured by CHAINLOG_* in the
environment), then compares:
  - the logger's per-type starts, stops and states with nccl-sim's own count of the calls it made
    (its `nccl-sim-types:` line): equal for every type the logger's mask makes NCCL start (and its
    ABI version has), zero for the others; with CHAINLOG_NULL_ANCESTORS the stops and states of
    the ancestors it returned NULL for arrive as NULL-handle calls and are compared in total;
  - the logger's own checks (contexts, parents and their types, handles, double stops): none broken;
  - ncclscope's trace (`ncclscope dump --stats`): starts and stops per recorded type equal to
    nccl-sim's, no bad, stale or NULL handles.
CASE names the expectation: `match` (the above), `initfail` (the logger's first init fails: the
job and ncclscope's trace are whole, the logger gets only the other communicators' events),
`noend` (the logger has no stopEvent/recordEventState/finalize: starts only),
`nochain:REGEX` (the chain must stay off with a log line matching REGEX; ncclscope's trace is
whole), `errors` (startEvent errors are counted in ncclscope's log and otherwise ignored).
"""
import os
import re
import subprocess
import sys

TYPES = ["Group", "Coll", "P2p", "ProxyOp", "ProxyStep", "ProxyCtrl", "KernelCh", "NetPlugin",
         "GroupApi", "CollApi", "P2pApi", "KernelLaunch", "CeColl", "CeSync", "CeBatch", "KernelPhase"]
BIT = {t: 1 << i for i, t in enumerate(TYPES)}
ALL = 0xFFFF
TRIG = {
    "GroupApi": 0x7FFF & ~BIT["ProxyCtrl"],
    "CollApi": sum(BIT[t] for t in ["CollApi", "Coll", "ProxyOp", "ProxyStep", "KernelCh", "NetPlugin",
                                    "CeColl", "CeSync", "CeBatch"]),
    "P2pApi": sum(BIT[t] for t in ["P2pApi", "P2p", "ProxyOp", "ProxyStep", "KernelCh", "NetPlugin"]),
    "KernelLaunch": BIT["KernelLaunch"],
    "Group": sum(BIT[t] for t in ["Group", "Coll", "P2p", "ProxyOp", "ProxyStep", "KernelCh", "NetPlugin"]),
    "Coll": sum(BIT[t] for t in ["Coll", "ProxyOp", "ProxyStep", "KernelCh", "NetPlugin"]),
    "P2p": sum(BIT[t] for t in ["P2p", "ProxyOp", "ProxyStep", "KernelCh", "NetPlugin"]),
    "ProxyOp": sum(BIT[t] for t in ["ProxyOp", "ProxyStep", "NetPlugin"]),
    "ProxyStep": BIT["ProxyStep"] | BIT["NetPlugin"],
    "ProxyCtrl": BIT["ProxyCtrl"], "KernelCh": BIT["KernelCh"], "NetPlugin": BIT["NetPlugin"],
    "CeColl": BIT["CeColl"] | BIT["CeSync"] | BIT["CeBatch"], "CeSync": BIT["CeSync"],
    "CeBatch": BIT["CeBatch"], "KernelPhase": BIT["KernelPhase"],
}


def fail(msg):
    print("chain check: FAILED: " + msg)
    sys.exit(1)


def types_line(text, key):
    m = re.findall(r"^" + key + r":(.*)$", text, re.M)
    tot = {}
    for line in m:
        for kv in line.split():
            k, v = kv.split("=")
            s = [int(x) for x in v.split(",")]
            tot[k] = [a + b for a, b in zip(tot.get(k, [0, 0, 0]), s)]
    return tot


def main():
    sim, plugin, cli, chained, work, case = sys.argv[1:7]
    args = sys.argv[7:]
    os.makedirs(work, exist_ok=True)
    trace = os.path.join(work, "trace")
    out = os.path.join(work, "chainlog.txt")
    subprocess.run(["rm", "-rf", trace, out], check=True)
    env = dict(os.environ, NCCLSCOPE_DIR=trace, NCCLSCOPE_CHAIN=chained, CHAINLOG_OUT=out)
    env.setdefault("NCCLSCOPE_EVENTS", "all")
    r = subprocess.run([sim, "--plugin", plugin, "--verbose"] + args, env=env, capture_output=True, text=True,
                       timeout=240)
    log = r.stdout + r.stderr
    if r.returncode != 0:
        fail("nccl-sim exited %d: %s" % (r.returncode, log[-2000:]))
    simc = types_line(r.stdout, "nccl-sim-types")
    abi = int(re.search(r"\babi=(\d+)", r.stdout).group(1))
    # ncclscope's side: its trace holds what nccl-sim sent for the types it records
    st = subprocess.run([cli, "dump", trace, "--stats"], capture_output=True, text=True)
    if st.returncode != 0:
        fail("ncclscope dump --stats: " + st.stderr)
    rec = {}
    for m in re.finditer(r"^  (\w+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)$", st.stdout, re.M):
        rec[m.group(1)] = [int(m.group(i)) for i in range(2, 7)]
    hm = re.search(r"handles: bad (\d+), stale (\d+), NULL (\d+)", st.stdout)
    if not hm or hm.groups() != ("0", "0", "0"):
        fail("ncclscope saw bad handles: " + (hm.group(0) if hm else "no handle line"))
    if not rec:
        fail("ncclscope recorded nothing:\n" + st.stdout)
    for t, v in rec.items():
        s = simc.get(t, [0, 0, 0])
        if v[0] != s[0] or v[1] != s[1]:
            fail("ncclscope recorded %s starts/stops %d/%d, nccl-sim made %d/%d" % (t, v[0], v[1], s[0], s[1]))
    print("chain check: ncclscope recorded %d types as nccl-sim sent them (%s)" % (
        len(rec), ", ".join("%s=%d" % (t, v[0]) for t, v in rec.items())))
    if case.startswith("nochain:"):
        if not re.search(case[len("nochain:"):], log):
            fail("no log line matching '%s':\n%s" % (case[8:], log[-3000:]))
        if os.path.exists(out) and "chainlog-types:" in open(out).read():
            fail("the chained plugin got calls although the chain should be off")
        print("chain check: ok (chain off: %s)" % case[8:])
        return
    if not os.path.exists(out):
        fail("the chained plugin wrote no summary (was it loaded?)\n" + log[-3000:])
    text = open(out).read()
    got = types_line(text, "chainlog-types")
    summ = re.findall(r"^chainlog: .*$", text, re.M)
    viol = sum(int(re.search(r"violations=(\d+)", s).group(1)) for s in summ)
    if viol:
        fail("the chained plugin saw %d violations: %s" % (viol, summ))
    mask = int(re.search(r"mask=0x([0-9a-f]+)", summ[0]).group(1), 16)
    their_abi = int(re.search(r"abi=(\d+)", summ[0]).group(1))
    vtypes = 0x3F if their_abi <= 2 else 0xFF if their_abi <= 4 else 0xFFF if their_abi == 5 else \
        0x7FFF if their_abi == 6 else ALL
    if abi >= 7 and mask & BIT["KernelPhase"]:
        mask |= BIT["KernelCh"]  # NCCL 2.31 turns KernelCh on for KernelPhase
    nulls = os.environ.get("CHAINLOG_NULL_ANCESTORS") == "1"
    null_stops = sum(int(re.search(r"null_stops=(\d+)", s).group(1)) for s in summ)
    null_states = sum(int(re.search(r"null_states=(\d+)", s).group(1)) for s in summ)
    want_null = [0, 0]
    for t in TYPES:
        s, g = simc.get(t, [0, 0, 0]), got.get(t, [0, 0, 0])
        asked = bool(TRIG[t] & mask) and bool(BIT[t] & vtypes)
        exp = list(s) if asked else [0, 0, 0]
        if case == "initfail" and asked:
            # the first communicator's events are missing: fewer, never more
            if any(a > b for a, b in zip(g, exp)):
                fail("%s: the logger got %s, more than nccl-sim's %s" % (t, g, exp))
            continue
        if (nulls and asked and not (BIT[t] & mask)) or (case == "noend" and asked):
            exp = [exp[0], 0, 0]  # NCCL stops no NULL handle; the noend logger has no stop
        if g != exp:
            fail("%s: the chained plugin got starts,stops,states %s; nccl-sim made %s (asked=%s)" % (t, g, s, asked))
    if [null_stops, null_states] != want_null:
        fail("NULL-handle stops/states %d/%d, expected none" % (null_stops, null_states))
    if case == "initfail":
        if not re.search(r"chained plugin's init failed", log):
            fail("no log line about the failed init")
        if sum(v[0] for v in got.values()) == 0:
            fail("the chained plugin got nothing from the other communicators")
    if case == "errors":
        m = re.search(r"NCCLSCOPE_CHAIN: table_full=0 parent_lost=0 stale=0 errors=(\d+)", log)
        starts = sum(v[0] for v in got.values())
        if not m or int(m.group(1)) != starts:
            fail("expected errors=%d in ncclscope's log: %s" % (starts, m.group(0) if m else "none"))
    elif case != "initfail" and abi >= 4:  # v1-v3 init passes no logger: ncclscope's INFO lines are not shown
        if not re.search(r"NCCLSCOPE_CHAIN: table_full=0 parent_lost=0 stale=0 errors=0 init_failed=0", log):
            fail("ncclscope's chain counters are not all 0:\n" + "\n".join(
                l for l in log.splitlines() if "NCCLSCOPE_CHAIN" in l))
    print("chain check: the chained plugin (v%d under NCCL v%d, mask 0x%x) got %s" % (
        their_abi, abi, mask, ", ".join("%s=%s" % (t, ",".join(map(str, v))) for t, v in got.items() if any(v))))
    print("chain check: ok")


if __name__ == "__main__":
    main()
