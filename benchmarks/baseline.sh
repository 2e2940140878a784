#!/usr/bin/env bash
# The baseline table: the ECT list scheduler vs the critical-path bound, both modes, on the
# exact-solver instance family (benchmarks/grids/baseline.json). Resumable: rerunning only
# reports; delete benchmarks/results/baseline/records.jsonl to measure again.
set -euo pipefail
cd "$(dirname "$0")/.."
[[ -f instances/baseline/manifest.json ]] ||
  optsched bench gen benchmarks/grids/baseline.json --out instances/baseline
optsched bench run instances/baseline --method ect --mode relaxed --mode gang \
  --records benchmarks/results/baseline/records.jsonl
optsched bench report benchmarks/results/baseline/records.jsonl --out benchmarks/results/baseline \
  --manifest instances/baseline
