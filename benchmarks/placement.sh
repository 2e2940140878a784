#!/usr/bin/env bash
# Liquid placement: best-fit, the grouping GA and the baselines against the exact optimum and
# its bound (grid benchmarks/grids/placement.json: 4-20 hosts of 2 T4 in racks of 4 and
# domains of 2 racks, 0.5 jobs per host of 1 PS + 1-3 workers, each container 1 GPU; 3 seeds),
# in both cost forms (paper: λ = 0.5, cross-domain cost = number of hosts; code: 0/1/4/40 ×
# bandwidth). Exact methods get 20 s (CP-SAT) or 20 s (HiGHS), 2 single-thread runs in
# parallel. Resumable (about 15 minutes).
set -euo pipefail
cd "$(dirname "$0")/.."
out=benchmarks/results/placement
mkdir -p $out
[[ -f instances/placement/manifest.json ]] ||
  optsched bench gen benchmarks/grids/placement.json --out instances/placement
for cost in paper code; do
  optsched bench run instances/placement --method bestfit --method gga --method random \
    --method spread --method pack --param cost=$cost --workers 2 --records $out/records.jsonl
  optsched bench run instances/placement --method cpsat --method milp-highs --param cost=$cost \
    --time-limit 20 --workers 2 --records $out/records.jsonl
done
python benchmarks/placement_summary.py $out > $out/summary.md
