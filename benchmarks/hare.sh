#!/usr/bin/env bash
# Hare's offline heuristic and its variants (issue: Hare offline heuristic; issue 13 items 1-2).
# 1. Small instances with known optima, relaxed mode, 60 s per run, 2 single-thread runs in
#    parallel; methods hare, hare-ect, hare-lp, hare-lp-ect and the ECT baseline. Every
#    earliest-free run (hare, hare-lp) also reports both GPU tie rules of Algorithm 1 line 12
#    from the same relaxation (extra.tie_objectives).
#    a. instances/hare-small (benchmarks/grids/hare-small.json: 3-10 jobs, 8 GPUs, every sync
#       in {1, 2}, so α is defined and the α(2+α) guarantee is checked on every run); optima
#       from cpsat in the same records.
#    b. instances/scaling (3-8 jobs) and instances/exact (10 and 20 jobs): the exact benchmark's
#       instances (syncs in {0, 1, 2}: α mostly undefined); optima from benchmarks/results/exact.
# 2. The paper's simulation scale (160 GPUs, 300 jobs, ~50,000 tasks): benchmarks/hare_scale.py.
# Resumable; delete the records to measure again (about 30 minutes on 2 cores).
set -euo pipefail
cd "$(dirname "$0")/.."
out=benchmarks/results/hare
mkdir -p $out
[ -f instances/hare-small/manifest.json ] || \
  optsched bench gen benchmarks/grids/hare-small.json --out instances/hare-small
optsched bench run instances/hare-small --method cpsat --method hare --method hare-ect \
  --method hare-lp --method hare-lp-ect --method ect --mode relaxed --time-limit 60 \
  --workers 2 --records $out/records.jsonl
for set in scaling exact; do
  optsched bench run instances/$set --method hare --method hare-ect --method hare-lp \
    --method hare-lp-ect --method ect --mode relaxed --time-limit 60 --workers 2 \
    --records $out/records.jsonl
done
optsched bench report $out/records.jsonl --out $out --manifest instances/scaling \
  --manifest instances/exact --manifest instances/hare-small
python benchmarks/hare_scale.py --out $out/scale.jsonl
python benchmarks/hare_summary.py $out benchmarks/results/exact > $out/summary.md
