#!/usr/bin/env python3
"""Figures for docs/trajectories.md, computed from the committed files.

    python3 tests/trajectories/stats.py            # markdown table on stdout

A step is one distinct `responseId`; an event without one (system prompt,
task, tool results, notes) belongs to no step. Bytes are file sizes; the
largest tool output is the length in UTF-8 bytes of the JSON text of a
`tool_result` output (a string output counts its characters' bytes).
"""

import glob
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))


def output_bytes(output):
    text = output if isinstance(output, str) else json.dumps(output, ensure_ascii=False)
    return len(text.encode("utf-8"))


def main():
    rows = []
    total = {"trajectories": 0, "steps": 0, "events": 0, "bytes": 0, "largest": 0}
    per_source = {}
    for path in sorted(glob.glob(os.path.join(HERE, "*", "*.jsonl"))):
        source = os.path.basename(os.path.dirname(path))
        events = [json.loads(line) for line in open(path, encoding="utf-8") if line.strip()]
        steps = len({e["responseId"] for e in events if e.get("responseId")})
        calls = sum(1 for e in events if e["content"]["type"] == "tool_call")
        outs = [output_bytes(e["content"]["output"]) for e in events if e["content"]["type"] == "tool_result"]
        size = os.path.getsize(path)
        largest = max(outs, default=0)
        rows.append((source, os.path.basename(path), steps, calls, len(events), size, largest))
        s = per_source.setdefault(source, {"trajectories": 0, "steps": 0, "events": 0, "bytes": 0, "largest": 0, "min_steps": None, "max_steps": 0})
        for d in (s, total):
            d["trajectories"] += 1
            d["steps"] += steps
            d["events"] += len(events)
            d["bytes"] += size
            d["largest"] = max(d["largest"], largest)
        s["min_steps"] = steps if s["min_steps"] is None else min(s["min_steps"], steps)
        s["max_steps"] = max(s["max_steps"], steps)
    native = sorted(glob.glob(os.path.join(HERE, "*", "native", "*.json")))
    native_bytes = sum(os.path.getsize(p) for p in native)

    print("| source | trajectories | steps (min–max) | events | bytes | largest tool output (bytes) |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for source, s in per_source.items():
        print(f"| {source} | {s['trajectories']} | {s['steps']} ({s['min_steps']}–{s['max_steps']}) | {s['events']} | {s['bytes']} | {s['largest']} |")
    print(f"| **total** | {total['trajectories']} | {total['steps']} | {total['events']} | {total['bytes']} | {total['largest']} |")
    print()
    print(f"Native-format copies: {len(native)} files, {native_bytes} bytes.")
    print()
    print("| file | steps | tool calls | events | bytes | largest tool output |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for source, name, steps, calls, n, size, largest in rows:
        print(f"| {source}/{name} | {steps} | {calls} | {n} | {size} | {largest} |")


if __name__ == "__main__":
    main()
