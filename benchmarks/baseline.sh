#!/usr/bin/env bash
# The baseline table: the ECT list scheduler against the best bound known (CP-SAT's proved
# optimum where it finds one in 60 s, else the better of its bound and the critical path),
# both modes, on the exact-solver instance family (benchmarks/grids/baseline.json). Resumable: rerunning only
# reports; delete benchmarks/results/baseline/records.jsonl to measure again.
set -euo pipefail
cd "$(dirname "$0")/.."
[[ -f instances/baseline/manifest.json ]] ||
  optsched bench gen benchmarks/grids/baseline.json --out instances/baseline
optsched bench run instances/baseline --method ect --mode relaxed --mode gang \
  --records benchmarks/results/baseline/records.jsonl
# the optimum (or CP-SAT's best and its bound) for the gaps' reference, 60 s per run
optsched bench run instances/baseline --method cpsat --time-limit 60 --mode relaxed --mode gang \
  --workers 2 --records benchmarks/results/baseline/records.jsonl
optsched bench report benchmarks/results/baseline/records.jsonl --out benchmarks/results/baseline \
  --manifest instances/baseline
