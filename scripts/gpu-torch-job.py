#!/usr/bin/env python3
"""gpu-torch-job.py - the PyTorch job of the real-GPU fixtures (docs/gpu.md, "Real-job fixtures").

One process per GPU, started by torchrun. Each iteration runs a matmul (compute on the default
stream, so NCCL's stream waits for it) and then, on the process group's NCCL communicator:
all_reduce 16 MiB, all_reduce 64 KiB, all_gather (16 MiB per rank), reduce_scatter (16 MiB per
rank out), broadcast 16 MiB (root turns), a ring send/recv of 1 MiB (batch_isend_irecv) and
all_to_all_single 16 MiB. The host synchronizes with the GPU every --sync iterations, so between
syncs the CPU runs ahead of the GPU by up to 8 x sync operations, as a training loop does between
its loss.item() calls.

Scenarios (what the fixture's checks know to be true):
  healthy    nothing injected
  straggler  rank --rank sleeps --sleep-ms before every iteration (after the previous sync)
  stall      rank --rank sleeps 1 s once, before iteration --at
  hang       rank --rank sleeps forever before iteration --at (never enters its all_reduce);
             the others block at their next sync; the harness kills the job
Every rank prints one line per event the checks need:
  job: rank=R scenario=S iters=N sync=K world=W
  job: rank=R injected=KIND at=I ms=X       (the injection, when it happens)
  job: rank=R done wall_s=T                 (a rank that finished)

usage: torchrun --nproc-per-node N gpu-torch-job.py [--scenario S] [--iters N] [--sync K]
                [--rank R] [--at I] [--sleep-ms MS]
"""
import argparse
import os
import sys
import time

import torch
import torch.distributed as dist


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--scenario", default="healthy", choices=["healthy", "straggler", "stall", "hang"])
    ap.add_argument("--iters", type=int, default=60)
    ap.add_argument("--sync", type=int, default=5)
    ap.add_argument("--rank", type=int, default=1, help="the rank the scenario acts on")
    ap.add_argument("--at", type=int, default=20, help="stall/hang: the iteration it happens before")
    ap.add_argument("--sleep-ms", type=float, default=3.0, help="straggler: sleep per iteration")
    a = ap.parse_args()

    local = int(os.environ.get("LOCAL_RANK", "0"))
    torch.cuda.set_device(local)
    dist.init_process_group("nccl", device_id=torch.device("cuda", local))
    rank, world = dist.get_rank(), dist.get_world_size()
    say = lambda s: print("job: rank=%d %s" % (rank, s), flush=True)
    say("scenario=%s iters=%d sync=%d world=%d torch=%s nccl=%s"
        % (a.scenario, a.iters, a.sync, world, torch.__version__,
           ".".join(map(str, torch.cuda.nccl.version()))))

    dev = torch.device("cuda", local)
    mib = 1 << 20
    f = 4  # bytes per float32
    big = torch.ones(16 * mib // f, device=dev)
    small = torch.ones(64 * 1024 // f, device=dev)
    gat_out = torch.empty(world * big.numel(), device=dev)
    rs_in = torch.ones(world * big.numel(), device=dev)
    rs_out = torch.empty(big.numel(), device=dev)
    bc = torch.ones(16 * mib // f, device=dev)
    ring_s = torch.ones(mib // f, device=dev)
    ring_r = torch.empty(mib // f, device=dev)
    a2a_in = torch.ones(16 * mib // f, device=dev)
    a2a_out = torch.empty(16 * mib // f, device=dev)
    m = torch.randn(4096, 4096, device=dev, dtype=torch.bfloat16)
    nxt, prv = (rank + 1) % world, (rank + world - 1) % world

    # warm up: the communicator and every algorithm once, then one sync
    dist.all_reduce(small)
    torch.cuda.synchronize()
    dist.barrier()
    torch.cuda.synchronize()

    t0 = time.time()
    for it in range(a.iters):
        if rank == a.rank:
            if a.scenario == "straggler":
                time.sleep(a.sleep_ms / 1000.0)
            elif a.scenario == "stall" and it == a.at:
                say("injected=stall at=%d ms=1000" % it)
                time.sleep(1.0)
            elif a.scenario == "hang" and it == a.at:
                say("injected=hang at=%d ms=inf" % it)
                while True:
                    time.sleep(3600)
        y = m @ m  # compute before the collectives, on the default stream
        dist.all_reduce(big)
        dist.all_reduce(small)
        dist.all_gather_into_tensor(gat_out, big)
        dist.reduce_scatter_tensor(rs_out, rs_in)
        dist.broadcast(bc, src=it % world)
        reqs = dist.batch_isend_irecv([dist.P2POp(dist.isend, ring_s, nxt),
                                       dist.P2POp(dist.irecv, ring_r, prv)])
        for r in reqs:
            r.wait()
        dist.all_to_all_single(a2a_out, a2a_in)
        del y
        if (it + 1) % a.sync == 0:
            torch.cuda.synchronize()
    torch.cuda.synchronize()
    say("done wall_s=%.3f" % (time.time() - t0))
    dist.barrier()
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
