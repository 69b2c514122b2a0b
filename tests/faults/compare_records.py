#!/usr/bin/python3
"""compare_records.py A.jsonl B.jsonl: exit 0 when both hold the same cells with the same
results. Timings (every field named *seconds*), finish times and first_of_group (which cell of a group ran first in this
process, so it depends on where a run was interrupted) are left out; every record must be
complete, and no cell may appear twice."""
import json
import sys


def strip(v):
    if isinstance(v, dict):
        return {k: strip(x) for k, x in v.items()
                if "seconds" not in k and k not in ("finished_at", "first_of_group")}
    if isinstance(v, list):
        return [strip(x) for x in v]
    return v


def load(path):
    out = {}
    with open(path, "rb") as f:
        data = f.read()
    if data and not data.endswith(b"\n"):
        sys.exit(f"{path}: partial last line")
    for line in data.decode().splitlines():
        r = json.loads(line)
        if r["key"] in out:
            sys.exit(f"{path}: cell {r['key']} appears twice")
        out[r["key"]] = strip(r)
    return out


a, b = load(sys.argv[1]), load(sys.argv[2])
if a.keys() != b.keys():
    sys.exit(f"different cells: only in {sys.argv[1]}: {sorted(a.keys() - b.keys())[:3]}, "
             f"only in {sys.argv[2]}: {sorted(b.keys() - a.keys())[:3]}")
for k in a:
    if a[k] != b[k]:
        diff = [f for f in set(a[k]) | set(b[k]) if a[k].get(f) != b[k].get(f)]
        sys.exit(f"cell {k}: fields differ: {sorted(diff)}")
print(f"{len(a)} records agree")
