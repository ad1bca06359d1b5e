#!/usr/bin/env python3
"""Result handling for tests/gpu/validate.sh (standard library only: it runs under whatever
python3 the GPU machine has).

  evaluate   judge one run from its folder (stdout.txt, stderr.txt, sw/rank*-pid*/*.jsonl) and
             append one JSON record to a records file
  report     turn the records and the environment into gpu-validation.json, print the table,
             exit 1 when an assertion failed
  fake-run   write plausible outputs of one run into a run folder (the dry run feeds these to
             `evaluate` and `report`, so the JSON-writing path is exercised without a GPU)
  check      validate a gpu-validation.json against the schema below
  selftest   the dry run's self-test: fake passing and failing result sets through evaluate,
             report and check

The live library's outputs this reads (ARCHITECTURE.md "Output contracts"):
  $STEPWATCH_OUTPUT_DIR/rank<R>-pid<P>/steps.jsonl     {"type":"step","step",...,"dur_ms","idle_ms":{...}}
  $STEPWATCH_OUTPUT_DIR/rank<R>-pid<P>/findings.jsonl  {"type":"finding","step","detector","severity",
                                                        "cost_ms","cost_pct",...}  (created at the first finding)
  $STEPWATCH_OUTPUT_DIR/rank<R>-pid<P>/summary.json    (optional, recorded when present)
  stderr lines containing "[stepwatch]"                 (the job log)
and fault_loop's stdout: "step N X ms" lines, "median_step_ms X", "kernel_iters N", ...
"""

import argparse
import contextlib
import datetime
import glob
import json
import os
import random
import re
import statistics
import sys

import gpu_live_lines  # the job log's delivery and coexistence lines (same folder)

SCHEMA = 1
# Overhead budgets (ARCHITECTURE.md "Overhead budget"): compute-bound and launch-bound loops.
BUDGET_PCT = {"none": 1.0, "launch-bound": 3.0}
EXPECTED = {
    "none": "none-clean",
    "starvation": "input_starvation",
    "item-sync": "hidden_sync",
    "pageable": "hidden_sync",
    "exposed-comm": "exposed_collective",
    "launch-bound": "launch_bound",
}


# ------------------------------------------------------------------------------------------------
# Reading one run


def read_text(path, limit=None):
    try:
        with open(path, "r", errors="replace") as f:
            data = f.read()
    except OSError:
        return ""
    return data if limit is None else data[-limit:]


def read_jsonl(path):
    """Records of a JSONL file; malformed lines are counted, not fatal."""
    records, bad = [], 0
    try:
        with open(path, "r", errors="replace") as f:
            for line in f:
                line = line.strip()
                if not line:
                    continue
                try:
                    obj = json.loads(line)
                except ValueError:
                    bad += 1
                    continue
                if isinstance(obj, dict):
                    records.append(obj)
                else:
                    bad += 1
    except OSError:
        return None, 0
    return records, bad


def parse_loop_stdout(text):
    out = {"step_ms": [], "median_step_ms": None, "info": {}}
    for line in text.splitlines():
        m = re.match(r"^step (\d+) ([0-9.]+) ms$", line)
        if m:
            out["step_ms"].append(float(m.group(2)))
            continue
        m = re.match(r"^(median_step_ms|mean_step_ms|p90_step_ms|kernel_ms|gpu_compute_ms_per_step) ([0-9.]+)$", line)
        if m:
            if m.group(1) == "median_step_ms":
                out["median_step_ms"] = float(m.group(2))
            else:
                out["info"][m.group(1)] = float(m.group(2))
            continue
        m = re.match(r"^kernel_iters (\d+)$", line)
        if m:
            out["info"]["kernel_iters"] = int(m.group(1))
            continue
        if line.startswith("fault_loop: "):
            out["info"].setdefault("lines", []).append(line[len("fault_loop: "):][:300])
    return out


def mean(values):
    return round(statistics.fmean(values), 3) if values else None


def summarize_steps(steps):
    """Mean of the per-step breakdown (for diagnosing a failed assertion)."""
    if not steps:
        return {}
    keys = ["dur_ms", "gpu_busy_pct", "compute_ms", "comm_ms", "exposed_comm_ms", "copy_ms", "copy_only_ms",
            "blocked_idle_ms", "kernels", "syncs"]
    out = {}
    for k in keys:
        vals = [s[k] for s in steps if isinstance(s.get(k), (int, float))]
        if vals:
            out[k] = mean(vals)
    idle = {}
    for s in steps:
        for k, v in (s.get("idle_ms") or {}).items():
            if isinstance(v, (int, float)):
                idle.setdefault(k, []).append(v)
    if idle:
        out["idle_ms"] = {k: mean(v) for k, v in sorted(idle.items())}
    return out


def summarize_findings(findings):
    by = {}
    for f in findings:
        det = str(f.get("detector", "?"))
        e = by.setdefault(det, {"count": 0, "severity": {}, "cost_ms": [], "cost_pct": [], "first_message": None})
        e["count"] += 1
        sev = str(f.get("severity", "?"))
        e["severity"][sev] = e["severity"].get(sev, 0) + 1
        if isinstance(f.get("cost_ms"), (int, float)):
            e["cost_ms"].append(f["cost_ms"])
        if isinstance(f.get("cost_pct"), (int, float)):
            e["cost_pct"].append(f["cost_pct"])
        if e["first_message"] is None and f.get("message"):
            e["first_message"] = str(f["message"])[:400]
    for e in by.values():
        e["median_cost_ms"] = round(statistics.median(e["cost_ms"]), 3) if e["cost_ms"] else None
        e["median_cost_pct"] = round(statistics.median(e["cost_pct"]), 1) if e["cost_pct"] else None
        del e["cost_ms"], e["cost_pct"]
    return by


def evaluate(args):
    run_dir = args.run_dir
    rec = {
        "name": args.name,
        "kind": args.kind,
        "fault": args.fault,
        "injected": bool(args.injected),
        "steps_requested": args.steps,
        "command": read_text(os.path.join(run_dir, "command.txt")).strip(),
        "rc": None,
        "wall_s": round(args.wall, 2) if args.wall is not None else None,
        "expected": args.expect,
        "status": "ok",
        "problems": [],
        "notes": [],
    }
    if args.rc == "skipped":
        rec["status"] = "skipped"
        rec["notes"].append(args.skip_reason or "skipped")
        return finish(rec, args)
    rec["rc"] = int(args.rc)

    stdout = read_text(os.path.join(run_dir, "stdout.txt"))
    stderr = read_text(os.path.join(run_dir, "stderr.txt"))
    loop = parse_loop_stdout(stdout)
    rec["median_step_ms"] = loop["median_step_ms"]
    rec["steps_printed"] = len(loop["step_ms"])
    rec["loop_info"] = loop["info"]
    sw_lines = [l for l in stderr.splitlines() if "[stepwatch]" in l]
    rec["stepwatch_log_lines"] = len(sw_lines)
    rec["stepwatch_log_head"] = [l[:400] for l in sw_lines[:12] if "flush:" not in l]
    if args.injected:
        # Per flush (debug level) and at exit: what CUPTI delivered, how long steps waited for it.
        rec["delivery"] = gpu_live_lines.delivery(stderr)
        rec["notes"] += gpu_live_lines.delivery_notes(rec["delivery"])
    rec["stderr_tail"] = [l[:400] for l in stderr.splitlines()[-15:]]

    if rec["rc"] == 124 or rec["rc"] == 137:
        rec["problems"].append("timed out (rc %d)" % rec["rc"])
    elif rec["rc"] != 0:
        rec["problems"].append("fault_loop exited %d: %s" % (rec["rc"], (stderr.strip().splitlines() or ["(no stderr)"])[-1][:300]))
    if rec["rc"] == 0 and args.kind in ("fault", "overhead") and loop["median_step_ms"] is None:
        rec["problems"].append("no median_step_ms line on stdout")

    if args.injected:
        run_dirs = sorted(glob.glob(os.path.join(run_dir, "sw", "rank*-pid*")))
        rec["stepwatch_run_dirs"] = [os.path.relpath(d, run_dir) for d in run_dirs]
        steps, findings, bad = [], [], 0
        findings_file = False
        for d in run_dirs:
            s, b = read_jsonl(os.path.join(d, "steps.jsonl"))
            if s is not None:
                steps += [r for r in s if r.get("type") == "step"]
                bad += b
            f, b = read_jsonl(os.path.join(d, "findings.jsonl"))
            if f is not None:
                findings_file = True
                findings += [r for r in f if r.get("type") == "finding"]
                bad += b
            summ = os.path.join(d, "summary.json")
            if os.path.exists(summ):
                try:
                    with open(summ) as fh:
                        s_obj = json.load(fh)
                    rec["summary_json_keys"] = sorted(s_obj.keys())[:40] if isinstance(s_obj, dict) else []
                    if os.path.getsize(summ) <= 16384:  # the library's own summary (self-overhead, …)
                        rec["stepwatch_summary"] = s_obj
                except (OSError, ValueError):
                    rec["notes"].append("summary.json is not valid JSON")
        rec["stepwatch_steps"] = len(steps)
        rec["findings_file"] = findings_file
        rec["malformed_jsonl_lines"] = bad
        rec["findings"] = summarize_findings(findings)
        rec["found"] = sorted(rec["findings"].keys())
        rec["step_breakdown_mean"] = summarize_steps(steps)
        if bad:
            rec["problems"].append("%d malformed JSONL line(s)" % bad)
        if not run_dirs:
            rec["problems"].append("no rank*-pid* folder under STEPWATCH_OUTPUT_DIR: the library wrote nothing")
        elif not steps:
            rec["problems"].append("steps.jsonl has no step records: the library saw no step")
        if rec["rc"] == 0 and steps and args.steps and len(steps) != args.steps:
            rec["notes"].append("stepwatch saw %d steps, the loop ran %d" % (len(steps), args.steps))
        if args.kind == "fault":
            judge_fault(rec, findings, args)

    if args.kind == "probe":  # diagnostic only: never an assertion
        rec["status"] = "info"
        rec["notes"] += rec["problems"]
        rec["problems"] = []
    if rec["problems"] and rec["status"] == "ok":
        rec["status"] = "fail"
    return finish(rec, args)


def judge_fault(rec, findings, args):
    expect = args.expect
    if expect == "none-clean":
        non_info = [f for f in findings if f.get("severity") != "info"]
        rec["non_info_findings"] = len(non_info)
        if non_info:
            dets = sorted({str(f.get("detector")) for f in non_info})
            rec["problems"].append("healthy loop got %d non-info finding(s): %s" % (len(non_info), ", ".join(dets)))
        return
    if expect.startswith("unchecked:"):
        rec["status"] = "not_checked"
        rec["notes"].append(expect[len("unchecked:"):])
        if rec["problems"]:  # a crash or missing output under injection is still a failure
            rec["status"] = "fail"
        return
    count = rec["findings"].get(expect, {}).get("count", 0)
    rec["expected_count"] = count
    if count == 0:
        rec["problems"].append("expected detector %s not in findings.jsonl (found: %s)"
                               % (expect, ", ".join(rec["found"]) or "nothing"))
    else:
        judged = max(1, rec["stepwatch_steps"] - 2)  # live warm-up: the first 2 steps are not judged
        if count < 0.5 * judged:
            rec["notes"].append("%s fired on %d of ~%d judged steps only" % (expect, count, judged))


def finish(rec, args):
    with open(args.records, "a") as f:
        f.write(json.dumps(rec, sort_keys=True) + "\n")
    if getattr(args, "quiet", False):
        return 0
    found = ",".join(rec.get("found", [])) if rec.get("injected") else "-"
    print("  -> %-8s rc=%s median_step_ms=%s stepwatch_steps=%s found=%s%s" % (
        rec["status"], rec["rc"], rec.get("median_step_ms"), rec.get("stepwatch_steps", "-"), found or "-",
        ("  [" + "; ".join(rec["problems"]) + "]") if rec["problems"] else ""))
    return 0


# ------------------------------------------------------------------------------------------------
# The report


def overhead_groups(runs, strict):
    groups = {}
    for r in runs:
        if r["kind"] != "overhead":
            continue
        g = groups.setdefault(r["fault"], {"fault": r["fault"], "steps": r.get("steps_requested"), "baseline_ms": [],
                                           "injected_ms": [], "problems": []})
        if r["status"] == "ok" and r.get("median_step_ms") is not None:
            (g["injected_ms"] if r["injected"] else g["baseline_ms"]).append(r["median_step_ms"])
        elif r["status"] != "skipped":
            g["problems"].append("%s: %s" % (r["name"], "; ".join(r["problems"]) or r["status"]))
    out = []
    for fault, g in groups.items():
        g["budget_pct"] = BUDGET_PCT.get(fault)
        if g["baseline_ms"] and g["injected_ms"]:
            b = statistics.median(g["baseline_ms"])
            i = statistics.median(g["injected_ms"])
            g["baseline_median_ms"] = round(b, 3)
            g["injected_median_ms"] = round(i, 3)
            g["overhead_pct"] = round((i - b) / b * 100.0, 2) if b > 0 else None
            g["within_budget"] = g["overhead_pct"] is not None and g["budget_pct"] is not None and \
                g["overhead_pct"] <= g["budget_pct"]
        else:
            g["baseline_median_ms"] = g["injected_median_ms"] = g["overhead_pct"] = g["within_budget"] = None
            g["problems"].append("not enough runs to compare")
        g["status"] = "ok"
        if g["overhead_pct"] is None:
            g["status"] = "fail"
        elif strict and not g["within_budget"]:
            g["status"] = "fail"
        elif not g["within_budget"]:
            g["status"] = "over_budget"
        out.append(g)
    return out


def read_env_dir(d):
    """The environment validate.sh recorded as small files in one folder."""
    env = {"problems": []}
    if not d or not os.path.isdir(d):
        return env
    settings = read_text(os.path.join(d, "settings.txt"))
    for line in settings.splitlines():
        if "=" in line:
            k, v = line.split("=", 1)
            env[k.strip()] = v.strip()
    q = read_text(os.path.join(d, "nvidia-smi-query.csv")).strip().splitlines()
    if q:
        cols = [c.strip() for c in q[0].split(",")]
        names = ["gpu", "driver", "memory_total", "sm_clock_max", "sm_clock", "temperature_c", "power_w"]
        env["gpu_info"] = dict(zip(names, cols))
        env["gpu"] = cols[0] if cols else "unknown"
        env["driver"] = cols[1] if len(cols) > 1 else "unknown"
    det = read_text(os.path.join(d, "detectors.txt"))
    if det:
        env["detectors_available"] = [l.split()[0] for l in det.splitlines() if l.strip()]
    ver = read_text(os.path.join(d, "version.txt")).strip()
    if ver:
        env["stepwatch_version"] = ver.splitlines()[0][:200]
    libs = {}
    for line in read_text(os.path.join(d, "libs.txt")).splitlines():
        if "\t" in line:
            k, v = line.split("\t", 1)
            libs[k] = v
    if libs:
        env["libs"] = libs
    cal = parse_loop_stdout(read_text(os.path.join(d, "calibration.txt")))["info"]
    if cal:
        env["calibration"] = {k: v for k, v in cal.items() if k != "lines"}
    env["problems"] = [l for l in read_text(os.path.join(d, "problems.txt")).splitlines() if l.strip()]
    py = os.path.join(d, "pytorch.json")
    if os.path.exists(py):
        try:
            with open(py) as f:
                env["pytorch"] = json.load(f)
        except (OSError, ValueError):
            env["problems"].append("pytorch.json is not valid JSON")
    return env


def build_report(records_path, env_dir, dry_run, strict_overhead):
    runs = []
    with open(records_path) as f:
        for line in f:
            if line.strip():
                runs.append(json.loads(line))
    env = read_env_dir(env_dir)
    # exposed-comm: when NCCL fails without stepwatch too (the probe), the NCCL run says nothing
    # about stepwatch; the --comm standin run carries the assertion.
    probe = next((r for r in runs if r["name"] == "probe-exposed-comm-noinject"), None)
    if probe is not None and probe.get("rc") == 4:
        for r in runs:
            if r["name"] == "fault-exposed-comm" and r.get("rc") == 4 and r["status"] == "fail":
                r["status"] = "not_checked"
                r["notes"].append("NCCL fails on this machine without stepwatch too (probe exit 4): "
                                  "fault-exposed-comm-standin carries the assertion")
                r["notes"] += r["problems"]
                r["problems"] = []
    overhead = overhead_groups(runs, strict_overhead)
    failures = [r["name"] for r in runs if r["status"] == "fail" and r["kind"] == "fault"]
    # Runs skipped because the driver cannot run the bundle's CUDA are not stepwatch's failures: the
    # one environment line ("driver/CUDA: ...") says it.
    driver_ok = env.get("driver_supports_bundle", "1") != "0"
    failures += [r["name"] + " (skipped)" for r in runs
                 if r["status"] == "skipped" and r["kind"] == "fault" and driver_ok]
    failures += ["overhead-" + g["fault"] for g in overhead if g["status"] == "fail"]
    failures += ["environment: " + p for p in env.get("problems", [])]
    report = {
        "schema": SCHEMA,
        "tool": "stepwatch-gpu-validation",
        "dry_run": bool(dry_run),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "gpu": env.get("gpu", "unknown"),
        "driver": env.get("driver", "unknown"),
        "environment": env,
        "runs": runs,
        "overhead": overhead,
        "pytorch": env.get("pytorch", {"status": "not_run", "note": "PyTorch loop: a later issue"}),
        "failures": failures,
        "ok": not failures,
    }
    if dry_run:
        report["note"] = "DRY RUN: every result below is fake (generated without a GPU to test the JSON path)"
    return report


def fmt(v, spec="%.3f"):
    return "-" if v is None else spec % v


def print_table(report):
    print()
    print("GPU: %s   driver: %s   date: %s%s" % (report["gpu"], report["driver"], report["date"],
                                                 "   (DRY RUN: fake results)" if report["dry_run"] else ""))
    hdr = "%-30s %-4s %-20s %-34s %10s  %s" % ("run", "inj", "expected", "found", "median_ms", "status")
    print(hdr)
    print("-" * len(hdr))
    for r in report["runs"]:
        if r["kind"] not in ("fault", "probe", "pytorch"):
            continue
        found = ",".join(r.get("found", [])) if r.get("injected") else "-"
        exp = r.get("expected") or "-"
        if exp.startswith("unchecked:"):
            exp = "(not checked)"
        elif exp == "none-clean":
            exp = "nothing above info"
        print("%-30s %-4s %-20s %-34s %10s  %s" % (r["name"][:30], "yes" if r["injected"] else "no", exp[:20],
                                                  (found or "-")[:34], fmt(r.get("median_step_ms")), r["status"]))
        for p in r["problems"]:
            print("%32s! %s" % ("", p))
        for n in r["notes"]:
            print("%32s  note: %s" % ("", n))
    if report["overhead"]:
        print()
        print("%-14s %6s %14s %14s %10s %8s  %s" % ("overhead", "steps", "baseline_ms", "injected_ms", "overhead",
                                                    "budget", "status"))
        for g in report["overhead"]:
            print("%-14s %6s %14s %14s %10s %8s  %s" % (
                g["fault"], g.get("steps") or "-", fmt(g["baseline_median_ms"]), fmt(g["injected_median_ms"]),
                fmt(g["overhead_pct"], "%+.2f%%"), fmt(g["budget_pct"], "%.0f%%"), g["status"]))
            for p in g["problems"]:
                print("%16s! %s" % ("", p))
    py = report.get("pytorch") or {}
    print()
    print("PyTorch loop: %s%s" % (py.get("status"), (" (" + py["note"] + ")") if py.get("note") else ""))
    print()
    if report["ok"]:
        print("gpu validation: all assertions passed")
    else:
        print("gpu validation: FAILED: " + ", ".join(report["failures"]))


def report_cmd(args):
    report = build_report(args.records, args.env_dir, args.dry_run, args.strict_overhead)
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(report, f, indent=2, sort_keys=True)
        f.write("\n")
    print_table(report)
    print("results: %s" % args.out)
    problems = check_schema(report)
    if problems:
        print("gpu_results.py: the report does not match its schema: " + "; ".join(problems), file=sys.stderr)
        return 3
    return 0 if report["ok"] else 1


# ------------------------------------------------------------------------------------------------
# Schema check


def check_schema(rep):
    p = []
    need = {"schema": int, "tool": str, "dry_run": bool, "date": str, "gpu": str, "driver": str, "environment": dict,
            "runs": list, "overhead": list, "pytorch": dict, "failures": list, "ok": bool}
    for k, t in need.items():
        if not isinstance(rep.get(k), t):
            p.append("top-level %s: expected %s" % (k, t.__name__))
    run_need = {"name": str, "kind": str, "fault": str, "injected": bool, "status": str, "problems": list, "notes": list}
    for r in rep.get("runs", []):
        for k, t in run_need.items():
            if not isinstance(r.get(k), t):
                p.append("run %s: %s: expected %s" % (r.get("name"), k, t.__name__))
        if r.get("status") not in ("ok", "fail", "not_checked", "skipped", "info", "not_run"):
            p.append("run %s: unknown status %r" % (r.get("name"), r.get("status")))
        if r.get("kind") == "fault" and r.get("injected") and r.get("status") in ("ok", "fail", "not_checked"):
            for k in ("found", "findings", "stepwatch_steps", "expected"):
                if k not in r:
                    p.append("run %s: missing %s" % (r.get("name"), k))
    for g in rep.get("overhead", []):
        for k in ("fault", "baseline_ms", "injected_ms", "overhead_pct", "budget_pct", "status"):
            if k not in g:
                p.append("overhead %s: missing %s" % (g.get("fault"), k))
    if rep.get("ok") != (not rep.get("failures")):
        p.append("ok disagrees with failures")
    return p


def check_cmd(args):
    with open(args.json) as f:
        rep = json.load(f)
    problems = check_schema(rep)
    for x in problems:
        print("schema: " + x, file=sys.stderr)
    return 1 if problems else 0


# ------------------------------------------------------------------------------------------------
# Fake runs (dry run)


def fake_run(args):
    rnd = random.Random("%s-%d-%d" % (args.fault, int(args.injected), args.seed))
    d = args.run_dir
    os.makedirs(d, exist_ok=True)
    base = {"none": 6.0, "starvation": 12.0, "item-sync": 9.2, "pageable": 11.5, "exposed-comm": 9.0,
            "launch-bound": 7.8}.get(args.fault, 6.0)
    if args.injected:
        base *= 1.004 if args.fault == "none" else 1.02
    if args.calibrate:
        with open(os.path.join(d, "stdout.txt"), "w") as f:
            f.write("fault_loop: device 0 FAKE GPU (dry run)\nkernel_iters 123456\nkernel_ms 1.500\n"
                    "gpu_compute_ms_per_step 6.010\n")
        open(os.path.join(d, "stderr.txt"), "w").close()
        return 0
    ms = [base * (1 + rnd.uniform(-0.002, 0.002)) for _ in range(args.steps)]
    with open(os.path.join(d, "stdout.txt"), "w") as f:
        f.write("fault_loop: device 0 FAKE GPU (dry run)\n")
        for i in range(5):
            f.write("warmup %d %.3f ms\n" % (i, base * 1.5))
        for i, v in enumerate(ms):
            f.write("step %d %.3f ms\n" % (i, v))
        f.write("kernel_iters 123456\nkernel_ms 1.500\ngpu_compute_ms_per_step 6.010\n")
        f.write("mean_step_ms %.3f\np90_step_ms %.3f\nmedian_step_ms %.3f\n"
                % (statistics.fmean(ms), sorted(ms)[int(0.9 * (len(ms) - 1))], statistics.median(ms)))
    with open(os.path.join(d, "stderr.txt"), "w") as f:
        if args.injected:
            f.write("[stepwatch][rank 0] stepwatch 0.1.0 active (FAKE, dry run)\n")
            for i in range(3):
                f.write("[stepwatch][rank 0] flush: 1 buffers, 1771 records delivered (buffer size 512 KiB), 160 calls "
                        "waited for, watermark held 210.0 ms; steps judged 8, incomplete 0, warm-up 0, untraced 0\n")
            f.write("[stepwatch][rank 0] judgement: %d of %d traced steps judged complete (100.0%%), 0 incomplete "
                    "(GPU records missing), 0 warm-up, 0 untraced; lag from step end to judged: median 400 ms, "
                    "p90 520 ms, max 610 ms\n" % (args.steps, args.steps))
    if not args.injected:
        return 0
    rd = os.path.join(d, "sw", "rank0-pid4242")
    os.makedirs(rd, exist_ok=True)
    meta = json.dumps({"type": "meta", "schema": 1, "tool": "stepwatch", "version": "0.1.0"})
    detector = EXPECTED.get(args.fault)
    with open(os.path.join(rd, "steps.jsonl"), "w") as f:
        f.write(meta + "\n")
        for i, v in enumerate(ms):
            f.write(json.dumps({"type": "step", "rank": 0, "step": i, "start_us": 1000.0 * i * v, "dur_ms": round(v, 3),
                                "gpu_busy_pct": 97.0, "compute_ms": round(v * 0.97, 3), "comm_ms": 0.0,
                                "exposed_comm_ms": 0.0, "copy_ms": 0.0, "copy_only_ms": 0.0,
                                "idle_ms": {"input": 0.0, "sync": 0.0, "launch": 0.0, "host": round(v * 0.03, 3),
                                            "other": 0.0}, "blocked_idle_ms": 0.0, "kernels": 5, "syncs": 0}) + "\n")
    if args.kind == "fault" and (detector not in (None, "none-clean") or args.bad):
        det = "hidden_sync" if args.bad and args.fault == "none" else detector
        with open(os.path.join(rd, "findings.jsonl"), "w") as f:
            f.write(meta + "\n")
            if not (args.bad and args.fault != "none"):  # a "bad" fault run lacks its finding
                for i in range(2, len(ms)):
                    f.write(json.dumps({"type": "finding", "rank": 0, "step": i, "detector": det,
                                        "severity": "critical", "cost_ms": round(ms[i] * 0.4, 3), "cost_pct": 40.0,
                                        "message": "FAKE %s finding (dry run)" % det, "evidence": {}}) + "\n")
    with open(os.path.join(rd, "summary.json"), "w") as f:
        json.dump({"type": "summary", "rank": 0, "steps": len(ms)}, f)
    return 0


def selftest(args):
    """Fake result sets through evaluate → report → check: a passing set must give ok, and runs that
    break each assertion must be reported as failures."""
    work = args.work
    os.makedirs(work, exist_ok=True)
    failures = []

    def run_set(tag, bad_fault):
        recs = os.path.join(work, tag + ".records.jsonl")
        if os.path.exists(recs):
            os.remove(recs)
        for fault, expect in EXPECTED.items():
            d = os.path.join(work, tag, "fault-" + fault)
            fa = argparse.Namespace(fault=fault, injected=True, steps=20, run_dir=d, calibrate=False, kind="fault",
                                    bad=(fault == bad_fault), seed=1)
            fake_run(fa)
            with open(os.path.join(d, "command.txt"), "w") as f:
                f.write("fake\n")
            ea = argparse.Namespace(name="fault-" + fault, kind="fault", fault=fault, injected=1, expect=expect,
                                    run_dir=d, rc="0", wall=1.0, steps=20, records=recs, skip_reason=None,
                                    quiet=True)
            evaluate(ea)
        for fault in ("none", "launch-bound"):
            for inj in (0, 1):
                d = os.path.join(work, tag, "overhead-%s-%d" % (fault, inj))
                fake_run(argparse.Namespace(fault=fault, injected=bool(inj), steps=50, run_dir=d, calibrate=False,
                                            kind="overhead", bad=False, seed=2))
                evaluate(argparse.Namespace(name="overhead-%s-%s" % (fault, "inj" if inj else "base"),
                                            kind="overhead", fault=fault, injected=inj, expect="", run_dir=d,
                                            rc="0", wall=1.0, steps=50, records=recs, skip_reason=None,
                                            quiet=True))
        return build_report(recs, None, True, False)

    good = run_set("pass", None)
    if not good["ok"]:
        failures.append("the passing fake set was judged failed: %s" % good["failures"])
    for g in good["overhead"]:
        if g["overhead_pct"] is None:
            failures.append("overhead not computed for %s" % g["fault"])
    failures += ["passing set: " + x for x in check_schema(good)]
    for bad in ("none", "item-sync"):
        rep = run_set("fail-" + bad, bad)
        if rep["ok"] or ("fault-" + bad) not in rep["failures"]:
            failures.append("a fake %s run that breaks its assertion was not reported as failed" % bad)
        failures += ["failing set: " + x for x in check_schema(rep)]
    good_metrics = ("# TYPE stepwatch_steps_total counter\nstepwatch_steps_total{rank=\"0\"} 60\n"
                    "# TYPE stepwatch_step_seconds histogram\n"
                    "stepwatch_step_seconds_bucket{rank=\"0\",le=\"+Inf\"} 60\n"
                    "stepwatch_step_seconds_sum{rank=\"0\"} 3.0\nstepwatch_step_seconds_count{rank=\"0\"} 60\n"
                    "# TYPE stepwatch_gpu_duty_cycle gauge\nstepwatch_gpu_duty_cycle{rank=\"0\"} 0.97\n")
    if metrics_problems(good_metrics):
        failures.append("a valid metrics exposition was refused: %s" % metrics_problems(good_metrics))
    for broken in (good_metrics.replace("} 60\n", "} sixty\n", 1), good_metrics.split("# TYPE stepwatch_gpu_duty_cycle")[0]):
        if not metrics_problems(broken):
            failures.append("a broken metrics exposition was accepted: %r" % broken[:80])
    # The PyTorch item run's call site (issue 15): the line of loss.item() passes, another fails.
    train = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples", "pytorch", "train.py")
    line = gpu_live_lines.item_line(train)
    if line is None:
        failures.append("examples/pytorch/train.py has no loss.item() line")
    for tag, site, want_ok in (("site-good", "/b/examples/pytorch/train.py:%s in main" % line, True),
                               ("site-bad", "/b/examples/pytorch/train.py:%s in main" % ((line or 0) + 7), False)):
        runs = os.path.join(work, tag)
        d = os.path.join(runs, "item", "sw", "rank0-pid1")
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(runs, "item", "rc"), "w") as f:
            f.write("0\n")
        with open(os.path.join(d, "findings.jsonl"), "w") as f:
            f.write(json.dumps({"type": "finding", "detector": "hidden_sync", "severity": "warning",
                                "evidence": {"sites": [{"site": site, "calls": 3, "blocked_ms": 4.0}]}}) + "\n")
        out = os.path.join(work, tag + ".json")
        with open(os.devnull, "w") as null, contextlib.redirect_stdout(null):
            gpu_live_lines.pytorch_cmd(argparse.Namespace(runs=runs, out=out, train=train))
        with open(out) as f:
            got = json.load(f)["runs"]["item"]["call_site"]["ok"]
        if got != want_ok:
            failures.append("item call site %r judged %s" % (site, "ok" if got else "failed"))
    for x in failures:
        print("selftest: " + x, file=sys.stderr)
    print("gpu_results.py selftest: %s" % ("ok" if not failures else "FAILED"))
    return 1 if failures else 0


def metrics_problems(text):
    """Problems with a Prometheus text exposition of stepwatch's metrics ([] when it is valid and
    holds the steps). prometheus_client's own parser when installed, else a line-format check."""
    import re
    samples = {}
    try:
        from prometheus_client.parser import text_string_to_metric_families
        try:
            for family in text_string_to_metric_families(text):
                for sample in family.samples:
                    samples.setdefault(sample.name, []).append(sample.value)
        except Exception as err:  # the parser's verdict on an invalid exposition
            return ["not a valid exposition: %s" % err]
    except ImportError:
        line_re = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})? (\S+)( \d+)?$')
        for line in text.splitlines():
            if not line or line.startswith("#"):
                continue
            m = line_re.match(line)
            if not m:
                return ["not a valid exposition line: %r" % line]
            try:
                samples.setdefault(m.group(1), []).append(float(m.group(3)))
            except ValueError:
                return ["not a number in %r" % line]
    problems = []
    for name in ("stepwatch_steps_total", "stepwatch_step_seconds_count", "stepwatch_gpu_duty_cycle"):
        if name not in samples:
            problems.append("missing " + name)
    if samples.get("stepwatch_steps_total") and max(samples["stepwatch_steps_total"]) <= 0:
        problems.append("stepwatch_steps_total is 0")
    return problems


def check_metrics_cmd(args):
    try:
        with open(args.path, encoding="utf-8") as f:
            text = f.read()
    except OSError as err:
        print("cannot read %s: %s" % (args.path, err))
        return 1
    problems = metrics_problems(text)
    if problems:
        print("; ".join(problems))
        return 1
    print("valid exposition, %d lines" % len(text.splitlines()))
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)

    e = sub.add_parser("evaluate")
    e.add_argument("--name", required=True)
    e.add_argument("--kind", required=True, choices=["fault", "overhead", "probe", "calibrate"])
    e.add_argument("--fault", required=True)
    e.add_argument("--injected", type=int, default=1)
    e.add_argument("--expect", default="")
    e.add_argument("--run-dir", required=True)
    e.add_argument("--rc", required=True)
    e.add_argument("--wall", type=float)
    e.add_argument("--steps", type=int)
    e.add_argument("--records", required=True)
    e.add_argument("--skip-reason")

    r = sub.add_parser("report")
    r.add_argument("--records", required=True)
    r.add_argument("--env-dir")
    r.add_argument("--out", required=True)
    r.add_argument("--dry-run", action="store_true")
    r.add_argument("--strict-overhead", action="store_true")

    f = sub.add_parser("fake-run")
    f.add_argument("--fault", required=True)
    f.add_argument("--injected", type=int, default=1)
    f.add_argument("--steps", type=int, default=60)
    f.add_argument("--run-dir", required=True)
    f.add_argument("--kind", default="fault")
    f.add_argument("--calibrate", action="store_true")
    f.add_argument("--bad", action="store_true")
    f.add_argument("--seed", type=int, default=0)

    c = sub.add_parser("check")
    c.add_argument("--json", required=True)

    m = sub.add_parser("check-metrics")
    m.add_argument("path")

    s = sub.add_parser("selftest")
    s.add_argument("--work", required=True)

    t = sub.add_parser("pytorch")
    t.add_argument("--runs", required=True)
    t.add_argument("--out", required=True)
    t.add_argument("--train", default=None, help="examples/pytorch/train.py (the item run's expected call site)")

    args = ap.parse_args()
    if args.cmd == "evaluate":
        return evaluate(args)
    if args.cmd == "report":
        return report_cmd(args)
    if args.cmd == "fake-run":
        return fake_run(args)
    if args.cmd == "check":
        return check_cmd(args)
    if args.cmd == "check-metrics":
        return check_metrics_cmd(args)
    if args.cmd == "pytorch":
        return gpu_live_lines.pytorch_cmd(args)
    return selftest(args)


if __name__ == "__main__":
    sys.exit(main())
