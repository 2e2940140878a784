"""Input limits: the largest values optsched accepts, so that nothing derived overflows.

Every time, weight or amount (seconds, MB, bytes, bandwidth, …) must be at most
:data:`MAX_VALUE` = 1e15 (32 million years in seconds). Sums over millions of tasks and the
objective Σ w·C then stay finite and far from float overflow, and JSON output never holds an
infinity. A larger value is bad input, named by its field.
"""

from __future__ import annotations

#: Largest accepted time, weight or amount.
MAX_VALUE = 1e15
#: Largest accepted placement factor and iterations per task.
MAX_FACTOR = 1e6
#: Most tasks (Σ rounds × tasks_per_round) one instance may have: a schedule of that many
#: tasks takes about 20 GB in memory.
MAX_TASKS = 100_000_000
