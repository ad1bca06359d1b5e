"""What the live library's job log says about delivery and coexistence (standard library only),
for tests/gpu/gpu_results.py.

  delivery(stderr)     the per-flush lines (STEPWATCH_LOG_LEVEL=debug) and the exit "judgement:" line:
                       how many buffers/records CUPTI handed back per flush, how far the watermark was
                       held, how many steps were judged or incomplete, the judgement lag — so that a
                       first GPU run tells a watermark problem (records late or missing: incomplete
                       steps, a hold near the bound) from a detector problem (steps judged, wrong finding)
  coexistence(stderr)  torch.profiler inside an injected run: paused, resumed or the one line naming
                       the holder, CUPTI's clock changed and converted (or stood down)
  pytorch_cmd(args)    judges the PyTorch runs of validate.sh's pytorch_checks into pytorch.json
"""
import glob
import json
import os
import re

_FLUSH = re.compile(
    r"flush: (\d+) buffers, (\d+) records delivered \(buffer size (\d+) KiB\), (\d+) calls waited for, "
    r"watermark held ([0-9.]+) ms; steps judged (\d+), incomplete (\d+)")
_JUDGEMENT = re.compile(
    r"judgement: (\d+) of (\d+) traced steps judged complete \(([0-9.]+)%\), (\d+) incomplete.*"
    r"median ([0-9.]+) ms, p90 ([0-9.]+) ms, max ([0-9.]+) ms")


def delivery(stderr):
    flushes = [m.groups() for m in map(_FLUSH.search, stderr.splitlines()) if m]
    out = {"flush_lines": len(flushes)}
    if flushes:
        out["buffers"] = sum(int(f[0]) for f in flushes)
        out["records"] = sum(int(f[1]) for f in flushes)
        out["buffer_kib_last"] = int(flushes[-1][2])
        out["calls_waited_for_max"] = max(int(f[3]) for f in flushes)
        out["watermark_hold_ms_max"] = max(float(f[4]) for f in flushes)
        out["watermark_hold_ms_median"] = sorted(float(f[4]) for f in flushes)[len(flushes) // 2]
        out["flushes_without_buffers"] = sum(1 for f in flushes if f[0] == "0")
        out["first_lines"] = [l[:300] for l in stderr.splitlines() if "flush:" in l][:5]
    m = _JUDGEMENT.search(stderr)
    if m:
        g = m.groups()
        out["judgement"] = {"judged": int(g[0]), "traced": int(g[1]), "judged_pct": float(g[2]),
                            "incomplete": int(g[3]), "lag_ms_median": float(g[4]), "lag_ms_p90": float(g[5]),
                            "lag_ms_max": float(g[6])}
    return out


def delivery_notes(d):
    """Diagnostic notes (never assertions) for a run's record."""
    notes = []
    j = d.get("judgement")
    if j and j["traced"] and j["incomplete"] > 0.05 * j["traced"]:
        notes.append("watermark: %d of %d traced steps incomplete (their GPU records came late or not at all): "
                     "look at the per-flush lines before the detectors" % (j["incomplete"], j["traced"]))
    if d.get("flush_lines") and d.get("flushes_without_buffers", 0) > 0.8 * d["flush_lines"]:
        notes.append("CUPTI handed back a buffer on only %d of %d flushes"
                     % (d["flush_lines"] - d["flushes_without_buffers"], d["flush_lines"]))
    return notes


def coexistence(stderr):
    def has(text):
        return any(text in l for l in stderr.splitlines())
    return {
        "paused": has("paused: CUPTI released for another client"),
        "resumed": has("resumed: GPU tracing again") or has("resumed: the other CUPTI client let go"),
        "explained": has("could not resume GPU tracing"),
        "holder_line": next((l[:400] for l in stderr.splitlines() if "could not resume GPU tracing" in l), None),
        "clock_changed": has("CUPTI's clock no longer reads the host clock"),
        "clock_converted": has("converts its timestamps to the host clock"),
        "clock_stood_down": has("does not map linearly onto the host clock"),
        "liveness_warning": has("has delivered no activity buffer"),
    }


def _finding_records(run_dir):
    """Every finding record of the run's findings.jsonl files."""
    for p in glob.glob(os.path.join(run_dir, "sw", "*", "findings.jsonl")):
        with open(p) as fh:
            for line in fh:
                try:
                    r = json.loads(line)
                except ValueError:
                    continue
                if r.get("type") == "finding":
                    yield r


def _findings(run_dir):
    return [(r.get("detector"), r.get("severity")) for r in _finding_records(run_dir)]


def _sites(run_dir, detector):
    """The top site of each `detector` finding (evidence.sites[0].site)."""
    out = []
    for r in _finding_records(run_dir):
        if r.get("detector") == detector:
            sites = (r.get("evidence") or {}).get("sites") or []
            out.append(sites[0].get("site") if sites else None)
    return out


def item_line(train_py):
    """The line of examples/pytorch/train.py that calls loss.item() (the site the run must report)."""
    with open(train_py) as fh:
        for number, line in enumerate(fh, start=1):
            if "loss.item()" in line and not line.lstrip().startswith("#"):
                return number
    return None


def _steps(run_dir):
    out = []
    for p in glob.glob(os.path.join(run_dir, "sw", "*", "steps.jsonl")):
        with open(p) as fh:
            for line in fh:
                try:
                    r = json.loads(line)
                except ValueError:
                    continue
                if r.get("type") == "step":
                    out.append(r)
    return out


def _read(path):
    try:
        with open(path) as fh:
            return fh.read()
    except OSError:
        return ""


def pytorch_cmd(args):
    runs = args.runs
    expect = {"none": None, "dataloader": "input_starvation", "item": "hidden_sync", "pageable": "hidden_sync"}
    result = {"status": "ran", "runs": {}, "coexistence": {}}
    ok = True

    def median(d):
        try:
            with open(os.path.join(runs, d, "result.json")) as fh:
                return json.load(fh)["median_ms"]
        except (OSError, ValueError, KeyError):
            return None

    for fault, want in expect.items():
        d = os.path.join(runs, fault)
        if not os.path.isdir(d):
            result["runs"][fault] = {"status": "skipped"}
            continue
        rc = _read(os.path.join(d, "rc")).strip()
        found = _findings(d)
        detectors = sorted({f for f, _ in found})
        good = rc == "0" and (all(sev == "info" for _, sev in found) if want is None else want in detectors)
        ok &= good
        stderr = _read(os.path.join(d, "stderr.txt"))
        result["runs"][fault] = {"rc": rc, "expected": want, "found": detectors, "ok": good,
                                 "median_ms": median(fault), "delivery": delivery(stderr)}
        print("  %-18s rc=%s expected=%-16s found=%s %s" % (fault, rc, want, ",".join(detectors) or "-",
                                                             "ok" if good else "FAIL"))
        if fault == "item":
            # Issue 15: the hidden_sync findings name the line of loss.item(), read live from the
            # interpreter's frames with the GIL released (torch releases it before the sync).
            line = item_line(getattr(args, "train", None) or os.path.join(
                os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples", "pytorch", "train.py"))
            want_site = "examples/pytorch/train.py:%s in main" % line
            sites = _sites(d, "hidden_sync")
            sited = [x for x in sites if x and x.endswith(want_site)]
            site_ok = bool(sites) and len(sited) * 2 >= len(sites)
            ok &= site_ok
            result["runs"][fault]["call_site"] = {"expected": want_site, "top_sites": sorted(set(map(str, sites))),
                                                  "sited": len(sited), "findings": len(sites), "ok": site_ok}
            print("  %-18s expected site ...%s: %d of %d findings %s" % ("item call site", want_site, len(sited),
                                                                         len(sites), "ok" if site_ok else "FAIL"))
    # torch.profiler inside an injected run: resumed, or one line naming the holder; no finding above
    # info (missing records or mixed clocks would make them); the steps after it keep GPU busy.
    for mode in ("profiler", "profiler-teardown"):
        d = os.path.join(runs, mode)
        if not os.path.isdir(d):
            result["coexistence"][mode] = {"status": "skipped"}
            continue
        rc = _read(os.path.join(d, "rc")).strip()
        stderr = _read(os.path.join(d, "stderr.txt"))
        c = coexistence(stderr)
        found = _findings(d)
        above_info = sorted({f for f, s in found if s != "info"})
        steps = _steps(d)
        tail = steps[-10:]
        c["gpu_busy_pct_last_steps"] = (sum(s.get("gpu_busy_pct", 0.0) for s in tail) / len(tail)) if tail else None
        c["steps_written"] = len(steps)
        c["findings_above_info"] = above_info
        c["rc"] = rc
        c["delivery"] = delivery(stderr)
        # Either outcome is correct: what must never happen is a silent loss or a false finding.
        c["ok"] = rc == "0" and c["paused"] and (c["resumed"] != c["explained"]) and not above_info
        if mode == "profiler-teardown" and not c["resumed"]:
            c["note"] = ("TEARDOWN_CUPTI=1 did not let stepwatch take CUPTI back: Kineto kept it (CUDA graphs "
                         "in use?) — see holder_line")
        ok &= c["ok"]
        result["coexistence"][mode] = c
        print("  %-18s rc=%s paused=%s resumed=%s explained=%s clock_converted=%s above_info=%s %s"
              % (mode, rc, c["paused"], c["resumed"], c["explained"], c["clock_converted"],
                 ",".join(above_info) or "-", "ok" if c["ok"] else "FAIL"))
    base, prof, inj = median("baseline"), median("profiler-only"), median("none")
    result["median_ms"] = {"baseline": base, "injected": inj, "torch_profiler": prof}
    if base and inj:
        result["overhead_pct_vs_baseline"] = 100.0 * (inj - base) / base
    if base and prof:
        result["torch_profiler_overhead_pct"] = 100.0 * (prof - base) / base
    print("  median step ms: baseline %s, stepwatch %s, torch.profiler %s" % (base, inj, prof))
    result["ok"] = ok
    with open(args.out, "w") as fh:
        json.dump(result, fh, indent=2)
    return 0 if ok else 1
