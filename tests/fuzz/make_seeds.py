#!/usr/bin/env python3
"""Shrinks a synthetic Kineto trace (from stepwatch-synth) into a small fuzzing seed: the metadata
plus the first N timed events, compact JSON. Usage: make_seeds.py IN.json OUT.json [N]"""
import json
import sys

src, dst = sys.argv[1], sys.argv[2]
n = int(sys.argv[3]) if len(sys.argv) > 3 else 80
with open(src) as f:
    trace = json.load(f)
events = trace.get("traceEvents", [])
meta = [e for e in events if e.get("ph") == "M"]
timed = sorted((e for e in events if e.get("ph") != "M"), key=lambda e: e.get("ts", 0))
trace["traceEvents"] = meta + timed[:n]
with open(dst, "w") as f:
    json.dump(trace, f, separators=(",", ":"))
