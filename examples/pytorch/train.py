#!/usr/bin/env python3
"""A small PyTorch training loop with injectable faults, instrumented with stepwatch.

    python -m stepwatch run --output-dir out -- python examples/pytorch/train.py --fault dataloader

Faults (each one a pattern stepwatch's detectors name):
  none        clean loop: pinned memory, non-blocking copies, no host syncs
  dataloader  a slow Dataset (decoding/augmentation on the main process): input_starvation
  item        loss.item() then 1 ms of host work, 3 times a step: hidden_sync
  pageable    a 64 MiB pageable (not pinned) host-to-device copy then 2 ms of host work every step:
              hidden_sync (pageable copy)

Steps are marked by stepwatch.torch.watch(optimizer, loader): the optimizer post-hook ends a
step, and every fetch from the loader is a "DataLoader" phase. Step times come from CUDA events
(no extra syncs); they are printed after the loop with their median. --profiler runs a few steps
under torch.profiler too (stepwatch pauses around it); --json writes the figures.
"""
import argparse
import json
import os
import statistics
import sys
import time

import torch
import torch.nn as nn
import torch.utils.data

try:
    import stepwatch
    import stepwatch.torch
except ImportError:  # the example still runs without the shim (PYTHONPATH=python_shim/src)
    stepwatch = None


class RandomBatches(torch.utils.data.Dataset):
    """`length` batches of random inputs/targets, cycled from a few pre-made ones (cheap to fetch).

    With `delay_ms` every fetch sleeps first: a decoding/augmentation pipeline that is too slow.
    """

    def __init__(self, length, batch, in_dim, out_dim, delay_ms=0.0, aux_mb=0, pin=False):
        self.length = length
        self.delay_s = delay_ms / 1000.0
        self.samples = []
        for _ in range(4):
            x = torch.randn(batch, in_dim)
            y = torch.randn(batch, out_dim)
            aux = torch.zeros(aux_mb * (1 << 20) // 4) if aux_mb else torch.zeros(0)
            if pin and torch.cuda.is_available():
                x, y, aux = x.pin_memory(), y.pin_memory(), aux.pin_memory()
            self.samples.append((x, y, aux))

    def __len__(self):
        return self.length

    def __getitem__(self, i):
        if self.delay_s:
            time.sleep(self.delay_s)
        return self.samples[i % len(self.samples)]


def make_model(in_dim, hidden, layers, out_dim):
    mods = [nn.Linear(in_dim, hidden), nn.ReLU()]
    for _ in range(layers - 1):
        mods += [nn.Linear(hidden, hidden), nn.ReLU()]
    mods.append(nn.Linear(hidden, out_dim))
    return nn.Sequential(*mods)


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description="A small PyTorch training loop with injectable faults (stepwatch example)")
    ap.add_argument("--fault", choices=["none", "dataloader", "item", "pageable"], default="none")
    ap.add_argument("--steps", type=int, default=60, help="measured steps (default 60)")
    ap.add_argument("--warmup", type=int, default=5, help="steps before the measured ones (default 5)")
    ap.add_argument("--batch", type=int, default=2048)
    ap.add_argument("--in-dim", type=int, default=1024)
    ap.add_argument("--hidden", type=int, default=4096)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--data-ms", type=float, default=None,
                    help="dataloader: sleep per fetch (default 30 ms for --fault dataloader, else 0)")
    ap.add_argument("--syncs", type=int, default=3, help="item: .item() calls per step (default 3)")
    ap.add_argument("--host-work-ms", type=float, default=None,
                    help="host work after each .item() (item, default 1) / after the pageable copy (pageable, default 2)")
    ap.add_argument("--pageable-mb", type=int, default=64, help="pageable: size of the pageable copy (default 64)")
    ap.add_argument("--profiler", action="store_true", help="run some steps under torch.profiler too")
    ap.add_argument("--profiler-steps", default="5",
                    help="with --profiler: that many steps from the middle of the run, or 'all' (default 5)")
    ap.add_argument("--trace-dir", default=None, help="with --profiler: write the Kineto trace there")
    ap.add_argument("--no-stepwatch", action="store_true", help="do not call the stepwatch shim (baseline runs)")
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--json", default=None, help="write per-step times and the median to this file")
    return ap.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    device = torch.device(args.device)
    cuda = device.type == "cuda"
    total = args.warmup + args.steps
    data_ms = args.data_ms if args.data_ms is not None else (30.0 if args.fault == "dataloader" else 0.0)
    pinned = args.fault != "pageable"
    host_work_s = (args.host_work_ms if args.host_work_ms is not None
                   else {"item": 1.0, "pageable": 2.0}.get(args.fault, 0.0)) / 1000.0
    out_dim = 16

    dataset = RandomBatches(total, args.batch, args.in_dim, out_dim, delay_ms=data_ms,
                            aux_mb=args.pageable_mb if args.fault == "pageable" else 0, pin=pinned)
    # batch_size=None: the dataset yields whole batches (no collation on the hot path).
    loader = torch.utils.data.DataLoader(dataset, batch_size=None, shuffle=False, num_workers=0)
    model = make_model(args.in_dim, args.hidden, args.layers, out_dim).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
    loss_fn = nn.MSELoss()

    watch = None
    if stepwatch is not None and not args.no_stepwatch:
        watch = stepwatch.torch.watch(optimizer, loader)
        loader = watch.loader
        print("stepwatch: %s (library %s)" % ("enabled" if stepwatch.enabled() else "no-op",
                                             stepwatch.library_path() or "not found"), file=sys.stderr)

    if args.profiler:
        if args.profiler_steps == "all":
            prof_from, prof_to = args.warmup, total
        else:
            n = int(args.profiler_steps)
            prof_from = args.warmup + max(0, (args.steps - n) // 2)
            prof_to = min(total, prof_from + n)
    else:
        prof_from = prof_to = -1
    activities = [torch.profiler.ProfilerActivity.CPU] + ([torch.profiler.ProfilerActivity.CUDA] if cuda else [])
    prof = None

    marks = []  # per iteration: a CUDA event (or a host time) at the end of the step
    t_start = time.perf_counter()
    for i, (x, y, aux) in enumerate(loader):
        if i == prof_from:
            prof = torch.profiler.profile(activities=activities)
            prof.start()
        x = x.to(device, non_blocking=pinned)
        y = y.to(device, non_blocking=pinned)
        if args.fault == "pageable":
            aux.to(device)  # pageable source: the copy waits for the GPU to drain, then for itself ...
            time.sleep(host_work_s)  # ... and the host works on while the GPU idles
        out = model(x)
        loss = loss_fn(out, y)
        if args.fault == "item":
            for _ in range(args.syncs):
                loss.item()  # the host waits for the GPU to drain ...
                time.sleep(host_work_s)  # ... then works while the GPU idles
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()  # stepwatch's post-hook: this step ends, the next begins
        if cuda:
            ev = torch.cuda.Event(enable_timing=True)
            ev.record()
            marks.append(ev)
        else:
            marks.append(time.perf_counter())
        if prof is not None and i + 1 == prof_to:
            prof.stop()
            if args.trace_dir:
                os.makedirs(args.trace_dir, exist_ok=True)
                prof.export_chrome_trace(os.path.join(args.trace_dir, "trace-%d.json" % os.getpid()))
            prof = None
    if cuda:
        torch.cuda.synchronize()
    wall_s = time.perf_counter() - t_start

    if cuda:
        step_ms = [marks[i - 1].elapsed_time(marks[i]) for i in range(1, len(marks))]
    else:
        step_ms = [(marks[i] - marks[i - 1]) * 1e3 for i in range(1, len(marks))]
    measured = step_ms[max(0, args.warmup - 1):]
    for n, ms in enumerate(measured):
        print("step %d: %.2f ms" % (n, ms))
    median = statistics.median(measured) if measured else float("nan")
    print("fault=%s steps=%d median step time: %.2f ms (wall %.2f s)" % (args.fault, len(measured), median, wall_s))

    summary = None
    if watch is not None:
        stepwatch.flush()
        s = stepwatch.last_step()
        if s is not None:
            summary = s.__dict__
            print("stepwatch last step %d: %.2f ms, GPU busy %.1f%%, findings %d"
                  % (s.step, s.duration_ms, s.gpu_busy_pct, s.findings))
        watch.close()
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"fault": args.fault, "device": str(device), "profiler": args.profiler,
                       "stepwatch": watch is not None, "step_ms": measured, "median_ms": median, "wall_s": wall_s,
                       "stepwatch_last_step": summary}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
