#!/usr/bin/env python3
"""gpu_analysis_check.py MODE REPORT.json TRUTH [SQLITE.db|- [CHROME.json]] - the analysis of CUPTI's kernels
(docs/gpu-truth.md, "Analysis") against what nccl-sim says ran (its --gpu-truth file).

MODE full: every GPU's overlap and exposed communication equal those computed here from the
truth (unions of NCCL and other kernel intervals per process and device), every eager NCCL
operation has its GPU time from CUPTI, replays match the truth's graph kernels.
MODE off: no CUPTI data: no GPU entry, no overlap number, sources KernelCh or none only.
MODE fixture: a capture from a real GPU (TRUTH is `ncclscope dump` of it): every kernel is a
compute kernel, the compute time is the union of the KERNEL records' [start, end) (CUPTI's clock;
a union's length does not depend on the offset), no NCCL time and no source is invented.
MODE lost: CUPTI lost records: every GPU of the job says "cannot tell" with the reason, and no
overlap number is given.
"""
import json, sqlite3, sys

def fail(msg):
    print("gpu analysis check: FAILED: " + msg)
    sys.exit(1)

def union(iv):
    iv = sorted(x for x in iv if x[1] > x[0])
    out = []
    for a, b in iv:
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return out

def inter(u, v):
    s, i, k = 0, 0, 0
    while i < len(u) and k < len(v):
        lo, hi = max(u[i][0], v[k][0]), min(u[i][1], v[k][1])
        if hi > lo:
            s += hi - lo
        if u[i][1] < v[k][1]:
            i += 1
        else:
            k += 1
    return s

def truth_kernels(path):
    ks = []
    for line in open(path):
        if not line.startswith("K "):
            continue
        f = dict(kv.split("=", 1) for kv in line.split()[1:] if "=" in kv)
        ks.append(f)
    return ks

def main():
    mode, rep, truth = sys.argv[1], json.load(open(sys.argv[2])), sys.argv[3]
    db = sys.argv[4] if len(sys.argv) > 4 and sys.argv[4] != "-" else None
    tl = None
    if len(sys.argv) > 5:
        d = json.load(open(sys.argv[5]))
        tl = d["traceEvents"] if isinstance(d, dict) else d
    def tl_count(cat):
        return sum(1 for e in tl if e.get("cat") == cat and e.get("ph") in ("X", "B"))
    g = rep.get("gpu")
    if g is None:
        fail("the report has no 'gpu' section")
    src = g["sources"]
    nops = sum(src.values())
    if mode == "off":
        if g["devices"] or g["replays"] or g["files_cupti"]:
            fail("no CUPTI data, yet GPU entries: %s" % json.dumps(g)[:300])
        if src["cupti"]:
            fail("%d operations claim CUPTI times without CUPTI" % src["cupti"])
        if any(r["gpu_sources"]["cupti"] for r in rep["ranks"]):
            fail("a rank has CUPTI times without CUPTI")
        if src["kernelch"] + src["none"] != nops or nops == 0:
            fail("sources do not add up: %s" % src)
        keys = [w["key"] for w in rep["warnings"]]
        asked = [f for f in g["files"] if f["state"] not in ("off", "none")]
        if asked and "cupti_unused" not in keys:
            fail("CUPTI asked for (%s) but not used, and no warning says so: %s" % (asked[0]["state"], keys))
        if not asked and "cupti_unused" in keys:
            fail("a cupti_unused warning with CUPTI off")
        if tl is not None and (tl_count("cupti") or tl_count("replay")):
            fail("timeline: CUPTI slices without CUPTI")
        print("gpu analysis check: ok off: sources %s, no overlap numbers" % src)
        return
    if mode == "lost":
        if not g["devices"]:
            fail("no GPU entries although CUPTI ran")
        for d in g["devices"]:
            if not d["cannot_tell"] or d["overlap_ns"] is not None or d["exposed_ns"] is not None:
                fail("CUPTI lost records but a GPU has numbers: %s" % d)
        if not g["files_cupti_lost"]:
            fail("files_cupti_lost is 0")
        if "cupti_lost" not in [w["key"] for w in rep["warnings"]]:
            fail("no cupti_lost warning")
        print("gpu analysis check: ok lost: %d GPUs cannot tell (%s)" % (len(g["devices"]), g["devices"][0]["cannot_tell"]))
        return
    if mode == "fixture":
        iv, nk = [], 0
        for line in open(truth):
            if " GPU KERNEL " not in line:
                continue
            f = dict(kv.split("=", 1) for kv in line.split() if "=" in kv)
            nk += 1
            iv.append((int(f["start"]), int(f["end"])))
        u = union(iv)
        want = sum(b - a for a, b in u)
        if len(g["devices"]) != 1:
            fail("fixture: %d GPUs, one ran" % len(g["devices"]))
        d = g["devices"][0]
        if d["compute_kernels"] != nk or d["nccl_kernels"] != 0 or d["comm_ns"] != 0 or d["exposed_ns"] != 0:
            fail("fixture: %s, %d kernels in the dump" % (d, nk))
        if abs(d["compute_ns"] - want) > 100 * len(u) or d["cannot_tell"]:
            fail("fixture: compute %s ns, the dump's union %d ns" % (d["compute_ns"], want))
        if any(src.values()) or g["replays"]:
            fail("fixture: sources or replays invented: %s" % json.dumps(g)[:300])
        if tl is not None and (tl_count("cupti") != nk or tl_count("replay")):
            fail("fixture timeline: %d CUPTI slices, %d replay slices; %d kernels" %
                 (tl_count("cupti"), tl_count("replay"), nk))
        print("gpu analysis check: ok fixture: %d kernels, compute %d ns (%d intervals)" % (nk, want, len(u)))
        return
    ks = truth_kernels(truth)
    per = {}
    for k in ks:
        key = (int(k["device"]),)
        e = per.setdefault(key, {"nccl": [], "compute": [], "ranks": set()})
        iv = (int(k["start"]), int(k["end"]))
        if k["kind"] == "nccl":
            e["nccl"].append(iv)
            e["ranks"].add(int(k["rank"]))
        else:
            e["compute"].append(iv)
    if len(g["devices"]) != len(per):
        fail("%d GPUs in the report, %d in the truth" % (len(g["devices"]), len(per)))
    for d in g["devices"]:
        e = per.get((d["device"],))
        if e is None:
            fail("device %d not in the truth" % d["device"])
        if d["cannot_tell"]:
            fail("device %d: cannot tell (%s) with nothing lost" % (d["device"], d["cannot_tell"]))
        if d["nccl_kernels"] != len(e["nccl"]) or d["compute_kernels"] != len(e["compute"]):
            fail("device %d: %d/%d kernels, truth %d/%d" % (d["device"], d["nccl_kernels"],
                 d["compute_kernels"], len(e["nccl"]), len(e["compute"])))
        if e["ranks"] and d["rank"] != min(e["ranks"]):
            fail("device %d: rank %d, truth %s" % (d["device"], d["rank"], sorted(e["ranks"])))
        un, uc = union(e["nccl"]), union(e["compute"])
        want = {"comm_ns": sum(b - a for a, b in un), "compute_ns": sum(b - a for a, b in uc),
                "overlap_ns": inter(un, uc)}
        want["exposed_ns"] = want["comm_ns"] - want["overlap_ns"]
        tol = 200 * (len(e["nccl"]) + len(e["compute"]))  # clock pair half-width per boundary
        for k, v in want.items():
            if abs(d[k] - v) > tol:
                fail("device %d: %s %d, truth %d (tolerance %d)" % (d["device"], k, d[k], v, tol))
        if want["overlap_ns"] <= 0 or want["exposed_ns"] <= 0:
            fail("device %d: the scenario must have both overlap and exposed time to test them" % d["device"])
    graph_nccl = [k for k in ks if k["kind"] == "nccl" and k["graph"] != "0"]
    want_rk = sum(len(k["ops"].split(",")) for k in graph_nccl)
    got_rk = sum(r["kernels"] for r in g["replays"])
    if got_rk != want_rk:
        fail("%d replay records, truth %d (graph kernels x captured operations)" % (got_rk, want_rk))
    eager = sum(len(k["ops"].split(",")) for k in ks if k["kind"] == "nccl" and k["graph"] == "0")
    for r in rep["ranks"]:  # per rank: its eager collectives from CUPTI, as the truth's
        want_r = sum(len(k["ops"].split(",")) for k in ks
                     if k["kind"] == "nccl" and k["graph"] == "0" and int(k["rank"]) == r["rank"])
        if r["gpu_sources"]["cupti"] != want_r:
            fail("rank %d: %d operations from CUPTI, truth %d" % (r["rank"], r["gpu_sources"]["cupti"], want_r))
    if src["cupti"] != eager:
        fail("%d operations with CUPTI times, %d eager operations ran" % (src["cupti"], eager))
    if db:
        c = sqlite3.connect(db)
        n = c.execute("select count(*) from kernels").fetchone()[0]
        if n != len(ks):
            fail("sqlite: %d kernels, truth %d" % (n, len(ks)))
        for d in g["devices"]:
            r = c.execute("select exposed_ns from gpu_devices where device=? and process_id is not null",
                          (d["device"],)).fetchone()
            if r is None or r[0] != d["exposed_ns"]:
                fail("sqlite: device %d exposed %s, report %s" % (d["device"], r, d["exposed_ns"]))
        m = c.execute("select count(*) from operations where gpu_source='cupti'").fetchone()[0]
        if m != eager:
            fail("sqlite: %d operations with gpu_source cupti, truth %d" % (m, eager))
    if tl is not None:
        if tl_count("cupti") != len(ks):
            fail("timeline: %d CUPTI kernel slices, truth %d kernels" % (tl_count("cupti"), len(ks)))
        if tl_count("replay") != want_rk:
            fail("timeline: %d replay slices, truth %d" % (tl_count("replay"), want_rk))
        for e in tl:
            if e.get("cat") == "replay":
                a = e["args"]
                if a["gpu_source"] != "cupti" or a["replay"] < 1 or "capture_seqNumber" not in a or a["func"] != e["name"]:
                    fail("timeline: a replay slice without its metadata: %s" % e)
    if [w for w in rep["warnings"] if w["key"].startswith("cupti")]:
        fail("CUPTI warnings with nothing lost: %s" % rep["warnings"])
    print("gpu analysis check: ok full: %d GPUs, %d kernels, %d replay records, sources %s" %
          (len(per), len(ks), got_rk, src))

main()
