#!/usr/bin/env python3
"""Validates `stepwatch analyze --json` output against the output contract (ARCHITECTURE.md).

Usage: check_jsonl.py FILE.jsonl [--expect-steps N]
Exits 1 with a message on the first violation.
"""
import json
import math
import sys

STEP_KEYS = ["type", "rank", "step", "start_us", "dur_ms", "gpu_busy_pct", "compute_ms", "comm_ms",
             "exposed_comm_ms", "copy_ms", "copy_only_ms", "idle_ms", "blocked_idle_ms", "kernels", "syncs"]
IDLE_KEYS = ["input", "sync", "launch", "host", "other"]
FINDING_KEYS = ["type", "rank", "step", "detector", "severity", "cost_ms", "cost_pct", "message", "evidence"]
SUMMARY_KEYS = ["type", "rank", "steps", "step_ms", "gpu_busy_pct", "comm_comp_overlap_pct", "findings",
                "judged_steps", "warmup_steps", "untraced_steps", "incomplete_steps", "skipped_steps", "per_step_ms",
                "data_loss", "tax_ms", "tax_pct", "time_ms", "trace_gpu_busy_pct"]
TIME_KEYS = ["trace", "before_first_step", "in_steps", "between_steps", "after_last_step"]


def fail(msg):
    print("check_jsonl: " + msg, file=sys.stderr)
    sys.exit(1)


def three_decimals(x, where):
    if not isinstance(x, (int, float)) or isinstance(x, bool):
        fail(f"{where}: not a number: {x!r}")
    if abs(round(x * 1000) - x * 1000) > 1e-6 * max(1.0, abs(x * 1000)):
        fail(f"{where}: more than µs precision: {x!r}")


def main():
    path = sys.argv[1]
    with open(path) as f:
        lines = [l for l in f.read().splitlines() if l.strip()]
    if not lines:
        fail("empty output")
    recs = [json.loads(l) for l in lines]
    meta = recs[0]
    if meta.get("type") != "meta" or meta.get("schema") != 1 or meta.get("tool") != "stepwatch" or "version" not in meta:
        fail(f"first record is not meta: {lines[0]}")
    steps = 0
    summaries = {}
    for r in recs[1:]:
        t = r.get("type")
        if t == "step":
            if list(r.keys()) != STEP_KEYS:
                fail(f"step fields {list(r.keys())} != {STEP_KEYS}")
            if list(r["idle_ms"].keys()) != IDLE_KEYS:
                fail(f"idle_ms fields {list(r['idle_ms'].keys())}")
            for k in ["dur_ms", "compute_ms", "comm_ms", "exposed_comm_ms", "copy_ms", "copy_only_ms", "blocked_idle_ms"]:
                three_decimals(r[k], f"step {r['step']} {k}")
            total = r["compute_ms"] + r["exposed_comm_ms"] + r["copy_only_ms"] + sum(r["idle_ms"].values())
            if r["dur_ms"] > 0 and abs(total - r["dur_ms"]) > 0.001 * r["dur_ms"]:
                fail(f"step {r['step']}: breakdown {total:.3f} != dur_ms {r['dur_ms']}")
            if r["rank"] in summaries:
                fail("step record after its rank's summary")
            steps += 1
        elif t == "finding":
            if list(r.keys()) != FINDING_KEYS:
                fail(f"finding fields {list(r.keys())} != {FINDING_KEYS}")
            if r["severity"] not in ("info", "warning", "critical"):
                fail(f"bad severity {r['severity']}")
            if not isinstance(r["evidence"], dict) or not r["message"]:
                fail("finding without evidence object or message")
        elif t == "summary":
            if list(r.keys()) != SUMMARY_KEYS:
                fail(f"summary fields {list(r.keys())} != {SUMMARY_KEYS}")
            if list(r["time_ms"].keys()) != TIME_KEYS:
                fail(f"time_ms fields {list(r['time_ms'].keys())}")
            # The whole trace is accounted for, and each idle interval is taxed once.
            parts = sum(r["time_ms"][k] for k in TIME_KEYS[1:])
            if abs(parts - r["time_ms"]["trace"]) > 0.01 + 1e-6 * r["time_ms"]["trace"]:
                fail(f"time_ms parts {parts:.3f} != trace {r['time_ms']['trace']}")
            if r["tax_pct"] > 100.0 + 1e-6:
                fail(f"tax_pct {r['tax_pct']} > 100")
            if list(r["step_ms"].keys()) != ["mean", "median", "p90", "cv"]:
                fail("summary step_ms fields")
            if r["judged_steps"] + r["warmup_steps"] + r["untraced_steps"] + r["incomplete_steps"] != r["steps"]:
                fail("summary step counts do not add up to steps")
            per = r["per_step_ms"]
            if list(per.keys()) != ["compute", "exposed_comm", "copy_only", "idle"]:
                fail("summary per_step_ms fields")
            if list(per["idle"].keys()) != ["input", "sync", "launch", "host", "other"]:
                fail("summary per_step_ms idle fields")
            if list(r["data_loss"].keys()) != ["records", "buffers"]:
                fail("summary data_loss fields")
            o = r["comm_comp_overlap_pct"]
            if o is not None and not (0 <= o <= 100):
                fail(f"overlap out of range: {o}")
            summaries[r["rank"]] = r
        else:
            fail(f"unknown record type {t!r}")
    if not summaries:
        fail("no summary record")
    # Several ranks: the merged (cross-rank) findings follow the last rank's summary.
    tail = len(recs)
    while tail > 1 and recs[tail - 1].get("type") == "finding":
        tail -= 1
    for r in recs[tail:]:
        ev = r["evidence"]
        if r["detector"] != "late_rank" or not isinstance(ev.get("straggler_ranks"), list) or \
                not all(isinstance(x, int) for x in ev["straggler_ranks"]) or r["rank"] not in ev["straggler_ranks"] \
                or not isinstance(ev.get("delay_ms"), (int, float)) or not isinstance(ev.get("cause"), str):
            fail(f"finding after the last summary is not a merged late_rank finding: {r}")
    if recs[tail - 1].get("type") != "summary":
        fail("last record is not a summary")
    if "--expect-steps" in sys.argv:
        want = int(sys.argv[sys.argv.index("--expect-steps") + 1])
        if steps != want:
            fail(f"{steps} steps, expected {want}")
    print(f"check_jsonl: ok ({steps} steps, {len(summaries)} rank(s))")


if __name__ == "__main__":
    main()
