#!/usr/bin/env bash
# The Hare paper's simulation study (HPDC'22 Figs. 14-17) with optsched's methods.
# Grids (family hare, 3 seeds; the generator's published settings: one arrival rate for every
# figure, 25 % of the work per job class, tasks of whole mini-batches with sync < compute):
#   hare-gpus: 200 jobs on 100-180 GPUs; hare-jobs: 160 GPUs with 100-300 jobs;
#   hare-heterogeneity: low / middle / high (160 GPUs, 200 jobs);
#   hare-mix: CV:NLP:Speech:Rec = 2:1:1:1, 1:2:1:1, 1:1:2:1, 1:1:1:2 (160 GPUs, 200 jobs).
# Methods: offline Hare (hare: Algorithm 1 as published; hare-lp, hare-lp-ect), online relaxed
# hlas and allox; the baselines that are not Hare-aware in their own model, gang: fifo-perf (the
# paper's Gavel_FIFO), fifo-random (Gavel's fifo), tiresias, srtf, homo. Gavel's heavy trace:
# benchmarks/hare_online_gavel.py. Then HLAS (mappings A/B/C) and the relaxed baselines on the
# small instances whose optimum benchmarks/results/exact knows; a JCT CDF. Resumable (about 60
# minutes; the simulator's speed is benchmarks/sim_speed.py's).
set -euo pipefail
cd "$(dirname "$0")/.."
out=benchmarks/results/online
mkdir -p $out
for grid in hare-gpus hare-jobs hare-heterogeneity hare-mix; do
  [[ -f instances/$grid/manifest.json ]] ||
    optsched bench gen benchmarks/grids/$grid.json --out instances/$grid
  optsched bench run instances/$grid --method hare-lp --method hare-lp-ect --method hlas \
    --method allox --mode relaxed --workers 2 --records $out/settings.jsonl
  # Algorithm 1 as published, step 1 the LP of Hare_Sched_RL stopped after 5 minutes (models/
  # hare-rl-lp.md; it converges in under 1 minute except at 100-120 GPUs, the heaviest load)
  optsched bench run instances/$grid --method hare --time-limit 300 --mode relaxed --workers 2 \
    --records $out/settings.jsonl
  optsched bench run instances/$grid --method fifo-perf --method fifo-random --method tiresias \
    --method srtf --method homo --mode gang --workers 2 --records $out/settings.jsonl
done
for set in scaling exact; do
  only=$([[ $set == exact ]] && echo 'exact-jobs10-*' || echo '*')
  for mapping in A B C; do
    optsched bench run instances/$set --only "$only" --method hlas --param mapping=$mapping \
      --mode relaxed --workers 2 --records $out/small.jsonl
  done
  optsched bench run instances/$set --only "$only" --method srtf --method homo --method allox \
    --mode relaxed --workers 2 --records $out/small.jsonl
done
python benchmarks/hare_online_cdf.py instances/hare-jobs/hare-jobs-jobs200-s0.json $out/jct-cdf.png
python benchmarks/hare_online_summary.py $out benchmarks/results/exact > $out/summary.md
