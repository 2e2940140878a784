#!/usr/bin/env bash
# LNS (optsched/heuristics/lns.py) against CP-SAT at equal budgets: 60 s (work-seconds for the
# anytime methods, `bench run`'s default) and one CP-SAT worker per run, two runs in parallel,
# both modes, on the exact family at 20 jobs (its 10 seeds in instances/exact) and at 30 and
# 50 jobs (grids/exact-large.json); lns also with start=ect beside its default start, and at
# 50 jobs with 300 work-seconds and two seeds.
# Resumable; delete the records to measure again (about 2 hours). lp-bound, fluid-bound,
# capacity-bound, lagrangian-bound and column-bound put the bounds beside the searches';
# priority-search (to its local optimum, within 60 s) the scalable search, and task-search (task moves from
# ECT, to its local optimum) the task-level one.
set -euo pipefail
cd "$(dirname "$0")/.."
[[ -f instances/exact-large/manifest.json ]] ||
  optsched bench gen benchmarks/grids/exact-large.json --out instances/exact-large
out=benchmarks/results/lns
mkdir -p $out
optsched bench run instances/exact --only 'exact-jobs20-*' --method ect --method cpsat --method fluid-bound \
  --method capacity-bound --method lagrangian-bound --method column-bound --method priority-search \
  --method task-search --method lns --mode relaxed --mode gang --time-limit 60 --workers 2 \
  --records $out/exact.jsonl
optsched bench run instances/exact-large --method ect --method cpsat --method lns --method lp-bound \
  --method fluid-bound --method capacity-bound --method lagrangian-bound --method column-bound \
  --method priority-search --method task-search --mode relaxed --mode gang --time-limit 60 --workers 2 \
  --records $out/exact-large.jsonl ||
  [[ $? == 1 ]]  # runs recorded as errors: lp-bound refuses an LP too large for memory
# lns from ECT alone (start=ect, its behaviour before priority-search started it), side by side
optsched bench run instances/exact --only 'exact-jobs20-*' --method lns --param start=ect \
  --mode relaxed --mode gang --time-limit 60 --workers 2 --records $out/exact.jsonl
optsched bench run instances/exact-large --method lns --param start=ect --mode relaxed \
  --mode gang --time-limit 60 --workers 2 --records $out/exact-large.jsonl
# the 50-job instances with five times the budget: 300 work-seconds (about 5-10 minutes each),
# seeds 0 and 1
optsched bench run instances/exact-large --only 'exact-large-jobs50-*' --method lns \
  --param work=300 --seeds 0 1 --mode relaxed --mode gang --time-limit 1200 --workers 2 \
  --records $out/exact-large.jsonl
optsched bench report $out/exact.jsonl --out $out/exact --manifest instances/exact
optsched bench report $out/exact-large.jsonl --out $out/exact-large --manifest instances/exact-large
