"""Start-up cost of the command line: CPU seconds (user + system, the process and its
children) of ``optsched --version``, ``optsched check`` and ``optsched solve --method ect``
on the bundled demo instance, the median of ``--repeat`` runs (default 3), and the modules
each imports. CPU time, not wall time, so that a loaded machine changes it little. As
installed packages are, the modules run from their cached bytecode: the children run without
``PYTHONDONTWRITEBYTECODE``, after one unmeasured warm-up run of each command.

    python benchmarks/startup.py [--repeat 3] [--out benchmarks/results/startup.md]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
from importlib import resources
from pathlib import Path

#: The children's environment: bytecode cached, as an installed package has it.
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def cpu_seconds(argv: list[str]) -> float:
    """CPU seconds (user + system) a child process running ``argv`` took."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(argv, check=True, capture_output=True, env=ENV)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def modules(args: list[str]) -> int:
    """How many modules a run of ``optsched ARGS`` has imported when it ends."""
    code = (
        "import sys\n"
        "from optsched.cli import main\ncode = main(sys.argv[1:])\n"
        "print(len(sys.modules), file=sys.stderr)"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, check=True, env=ENV
    )
    return int(proc.stderr.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--out", help="also write the table here (Markdown)")
    args = parser.parse_args()
    exe = shutil.which("optsched") or str(Path(sys.executable).with_name("optsched"))
    with tempfile.TemporaryDirectory() as tmp:
        instance = Path(tmp) / "demo.json"
        source = resources.files("optsched") / "data" / "instances" / "hare-toy.instance.json"
        instance.write_text(source.read_text())
        schedule = Path(tmp) / "s.json"
        subprocess.run(
            [exe, "solve", str(instance), "--method", "ect", "--out", str(schedule)],
            check=True,
            capture_output=True,
            env=ENV,
        )
        commands = {
            "optsched --version": ["--version"],
            "optsched check": ["check", str(instance), str(schedule)],
            "optsched solve --method ect": ["solve", str(instance), "--method", "ect"],
        }
        rows = []
        for name, argv in commands.items():
            cpu_seconds([exe, *argv])  # warm-up: writes the bytecode caches
            times = [cpu_seconds([exe, *argv]) for _ in range(args.repeat)]
            rows.append(
                f"| `{name}` | {statistics.median(times):.3f} | "
                f"{', '.join(f'{t:.3f}' for t in times)} | {modules(argv)} |"
            )
    load = os.getloadavg()[0]
    table = "\n".join(
        [
            f"CPU seconds, median of {args.repeat} (load average {load:.2f}, "
            f"{os.cpu_count()} cores, Python {sys.version.split()[0]})",
            "",
            "| command | median CPU s | runs | modules imported |",
            "|---|---|---|---|",
            *rows,
        ]
    )
    print(table)
    if args.out:
        from optsched.output import write_file

        write_file(args.out, table + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
