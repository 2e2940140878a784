"""Rebuild instance sets' manifests from the run records committed under benchmarks/results.

Usage: python scripts/rebuild_manifests.py instances/SET [instances/SET ...]

Every best value of a rebuilt manifest comes from a committed record (the test of the
benchmark library checks that each value's run is committed). Rebuild a set after deleting
records to rerun a method whose default behaviour changed.
"""

import sys
from pathlib import Path

from optsched.bench import Manifest
from optsched.bench.records import load_records

ROOT = Path(__file__).resolve().parents[1]


def committed_records() -> list[dict]:
    records = []
    for path in sorted((ROOT / "benchmarks" / "results").rglob("*.jsonl")):
        if '"optsched/bench-record@1"' in path.read_text()[:4096]:
            records += load_records(path)
    return records


if __name__ == "__main__":
    records = committed_records()
    for folder in sys.argv[1:]:
        manifest = Manifest.of_set(folder)
        manifest.rebuild(r for r in records if r["instance"] in manifest.instances)
        manifest.save()
        print(f"{folder}: rebuilt from {len(records)} committed records")
