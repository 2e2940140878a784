#!/usr/bin/env bash
# Hare's offline heuristic and its variants (issue: Hare offline heuristic).
# 1. Small instances with known optima (instances/scaling: 3-8 jobs; instances/exact: 10 jobs;
#    relaxed mode): hare, hare-ect, hare-lp, hare-lp-ect and the ECT baseline, 60 s per run,
#    2 single-thread runs in parallel. Optima come from benchmarks/results/exact.
# 2. The paper's simulation scale (160 GPUs, 300 jobs, ~50,000 tasks): benchmarks/hare_scale.py.
# Resumable; delete the records to measure again (about 25 minutes).
set -euo pipefail
cd "$(dirname "$0")/.."
out=benchmarks/results/hare
mkdir -p $out
for set in scaling exact; do
  optsched bench run instances/$set --method hare --method hare-ect --method hare-lp \
    --method hare-lp-ect --method ect --mode relaxed --time-limit 60 --workers 2 \
    --records $out/records.jsonl
done
optsched bench report $out/records.jsonl --out $out
python benchmarks/hare_scale.py --out $out/scale.jsonl
python benchmarks/hare_summary.py $out benchmarks/results/exact > $out/summary.md
