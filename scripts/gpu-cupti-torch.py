#!/usr/bin/env python3
"""gpu-cupti-torch.py - torch.profiler (Kineto) and ncclscope in one process: who gets CUPTI, and
what each tool records (docs/gpu-truth.md, "Other CUPTI users"). Run by scripts/gpu-cupti.sh.

CUDA 13.0 lets one CUPTI client trace a process. Three runs, each a child process with a one-rank
NCCL process group, matmuls and all_reduces inside torch.profiler, ncclscope loaded into NCCL:
  ncclscope-first  NCCLSCOPE_CUPTI=on; NCCL (and so ncclscope) starts before the profiler
  profiler-first   NCCLSCOPE_CUPTI=on; the profiler starts before NCCL does
  cupti-off        NCCLSCOPE_CUPTI unset (the default): ncclscope leaves CUPTI alone
For each it prints how many CUDA kernel events the profiler got and what ncclscope's trace says
(`ncclscope dump --stats`: CUPTI's state and the kernels it recorded).

usage: gpu-cupti-torch.py --plugin LIB --ncclscope EXE --out DIR
"""
import argparse
import os
import re
import socket
import subprocess
import sys

CHILD = r"""
import os, sys, torch, torch.distributed as dist
from torch.profiler import profile, ProfilerActivity
order, port = sys.argv[1], sys.argv[2]
torch.cuda.set_device(0)
dist.init_process_group("nccl", init_method="tcp://127.0.0.1:" + port, rank=0, world_size=1)
x = torch.randn(1024, 1024, device="cuda")
def work():
    for _ in range(10):
        y = x @ x
        dist.all_reduce(y)
    torch.cuda.synchronize()
if order == "profiler-first":
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as p:
        work()  # NCCL's communicator is created here, after the profiler started
else:
    dist.all_reduce(x)  # NCCL's communicator first: the plugin's init
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as p:
        work()
cuda = [e for e in p.events() if e.device_type == torch.autograd.DeviceType.CUDA]
print("profiler: order=%s cuda_events=%d torch=%s nccl=%s" % (order, len(cuda), torch.__version__,
      ".".join(map(str, torch.cuda.nccl.version()))))
dist.destroy_process_group()
"""


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--plugin", required=True)
    ap.add_argument("--ncclscope", required=True)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    rows, ok = [], True
    for order in ("ncclscope-first", "profiler-first", "cupti-off"):
        trace = os.path.join(a.out, "trace-" + order)
        env = dict(os.environ, NCCL_PROFILER_PLUGIN=a.plugin, NCCLSCOPE_DIR=trace,
                   NCCL_DEBUG="WARN")
        env.pop("NCCLSCOPE_CUPTI", None)
        if order != "cupti-off":
            env["NCCLSCOPE_CUPTI"] = "on"
        r = subprocess.run([sys.executable, "-c", CHILD, order, str(free_port())], env=env,
                           capture_output=True, text=True, timeout=300)
        log = os.path.join(a.out, order + ".log")
        with open(log, "w") as f:
            f.write(r.stdout + r.stderr)
        m = re.search(r"profiler: .*cuda_events=(\d+).*", r.stdout)
        events = m.group(1) if m else "?"
        st = subprocess.run([a.ncclscope, "dump", "--stats", trace], capture_output=True, text=True)
        with open(os.path.join(a.out, order + "-stats.txt"), "w") as f:
            f.write(st.stdout + st.stderr)
        cupti = re.search(r"^  CUPTI: (.*)$", st.stdout, re.M)
        kern = re.search(r"^  kernels \(CUPTI\): (\d+)", st.stdout, re.M)
        warned = [l for l in (r.stdout + r.stderr).splitlines() if "CUPTI" in l or "cupti" in l.lower()]
        rows.append((order, r.returncode, events, cupti.group(1) if cupti else "no trace",
                     kern.group(1) if kern else "0", warned[:3]))
        ok &= r.returncode == 0
    for order, rc, events, cupti, kern, warned in rows:
        print("%-16s exit %d | torch.profiler CUDA events: %s | ncclscope: CUPTI %s; kernels recorded: %s"
              % (order, rc, events, cupti, kern))
        for w in warned:
            print("    log: " + w.strip()[:200])
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
