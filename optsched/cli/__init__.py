"""The ``optsched`` command line (docs/cli.md): one module per command, each parsing its
options and calling the library (:mod:`optsched.cli.common` holds what they share).

Exit codes, as ``diff`` and ``cmp`` use them: 0 success (feasible; a schedule was produced),
1 a negative answer (violations; no solution), 2 bad input, 70 internal error (one line;
``--debug`` shows the traceback), 130 interrupted (Ctrl-C).
"""

from __future__ import annotations

import argparse
import io
import os
import signal
import sys
import time
from collections.abc import Sequence
from typing import Any

from optsched import __version__
from optsched.cli import (
    bench,
    check,
    common,
    compare,
    demo,
    estimate,
    gen,
    methods,
    place,
    plot,
    simulate,
    solve,
    workloads,
)
from optsched.cli.common import (
    EXIT_BAD_INPUT,
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    EXIT_OK,
    Parser,
    one_line,
    process_started,
)
from optsched.errors import InputError, MethodError

# NumPy's BLAS on one thread unless the environment says otherwise: starting its thread pool
# costs more CPU than any command gains from it (no method relies on dense linear algebra).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

COMMANDS = (
    check,
    solve,
    simulate,
    compare,
    place,
    estimate,
    methods,
    gen,
    plot,
    workloads,
    demo,
    bench,
)


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The command line's parser: every command's, or only ``command``'s (a command the
    command line names: the others' options then cost no start-up time)."""
    parser = Parser(
        prog="optsched",
        description="Scheduling DL training jobs on "
        "heterogeneous GPU clusters: exact methods, heuristics, checker.",
    )
    parser.add_argument("--version", action="version", version=f"optsched {__version__}")
    parser.add_argument(
        "--debug",
        action="store_true",
        help="show tracebacks of internal errors (default: one line)",
    )
    parser.add_argument(
        "--plugin",
        action="append",
        default=[],
        metavar="MODULE|FILE.py",
        help="import a module (from the current directory too) or a Python "
        "file first, so the methods it registers can be used; "
        "repeatable, anywhere on the command line",
    )
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    for module in COMMANDS:
        module.add_parser(sub if command is None else _Only(sub, command))
    return parser


class _Only:
    """The subcommand registry seen by a command's ``add_parser`` when only ``command`` is
    built: its own parser is real, any other stands as an :class:`_Unused`."""

    def __init__(self, sub: Any, command: str) -> None:
        self.sub, self.command = sub, command

    def add_parser(self, name: str, **kwargs: Any) -> Any:
        if self.command == name:
            return self.sub.add_parser(name, **kwargs)
        return _Unused()


class _Unused:
    """The parser of a command not on the command line: takes every call, keeps nothing."""

    def __getattr__(self, name: str) -> Any:
        return lambda *args, **kwargs: self


def _command(argv: Sequence[str]) -> str | None:
    """The command ``argv`` (global options first, :func:`_plugins_first`) names, if it is
    one of ours (else None: the whole parser then reports the error or the help)."""
    i = 0
    while i < len(argv) and (argv[i] in GLOBAL_FLAGS or argv[i].startswith("--plugin")):
        i += 2 if argv[i] == "--plugin" else 1
    names = {module.__name__.rsplit(".", 1)[1] for module in COMMANDS}
    return argv[i] if i < len(argv) and argv[i] in names else None


def reference(width: int = 100) -> str:
    """Every command's ``--help``, as the Markdown of the CLI reference page
    (``docs/cli-reference.md``, written by ``scripts/cli_reference.py``)."""
    saved = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = str(width)  # argparse wraps help to the terminal's width
    try:
        parser = build_parser()
        out = [
            "# Command-line reference",
            "",
            "Every command's `--help`, generated from the parser "
            "(`python scripts/cli_reference.py`).",
            "",
            "```text",
            parser.format_help().rstrip(),
            "```",
        ]
        pending = [(f"optsched {name}", p) for name, p in _subparsers(parser)]
        while pending:
            title, p = pending.pop(0)
            out += ["", f"## {title}", "", "```text", p.format_help().rstrip(), "```"]
            pending[0:0] = [(f"{title} {name}", q) for name, q in _subparsers(p)]
        return "\n".join(out) + "\n"
    finally:
        if saved is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = saved


def _subparsers(parser: argparse.ArgumentParser) -> list[tuple[str, argparse.ArgumentParser]]:
    return [
        (name, p)
        for action in parser._actions
        if isinstance(action, argparse._SubParsersAction)
        for name, p in action.choices.items()
    ]


#: Global options that may come anywhere on the command line.
GLOBAL_FLAGS = ("--debug", "--version")


def _plugins_first(argv: Sequence[str]) -> list[str]:
    """``argv`` with the global options (``--plugin X``, ``--plugin=X``, ``--debug``,
    ``--version``) moved to the front, so they work after the command too."""
    front: list[str] = []
    rest: list[str] = []
    args = list(argv)
    i = 0
    while i < len(args):
        if args[i] == "--plugin" and i + 1 < len(args):  # with its value
            front += args[i : i + 2]
            i += 2
            continue
        glob = args[i] in GLOBAL_FLAGS or args[i].startswith("--plugin=")
        (front if glob else rest).append(args[i])
        i += 1
    return front + rest


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line ``argv`` (None: ``sys.argv[1:]``) and return its exit code.

    Run as the ``optsched`` command (``argv`` None), a process that leaves a HiGHS solve
    running in its thread (one that did not stop within a second of a Ctrl-C or of its
    deadline, :mod:`optsched.exact.highs`) ends at once with the exit code, its output
    flushed: waiting for HiGHS, or letting C++ tear down under its feet, would not. A Ctrl-C
    after the command's work is done no longer changes its exit code."""
    common.started = (process_started() if argv is None else None) or time.perf_counter()
    code = _main(argv)
    if argv is None:
        # the work is done and its output written: a Ctrl-C now would only turn the exit
        # code into a traceback-less death by SIGINT
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        highs = sys.modules.get("optsched.exact.highs")  # not imported: no HiGHS solve ran
        if highs is not None:
            highs.exit_if_abandoned(code)
    return code


def _main(argv: Sequence[str] | None) -> int:
    if isinstance(sys.stdout, io.TextIOWrapper):  # a path given in non-UTF-8 bytes is
        sys.stdout.reconfigure(errors="surrogateescape")  # printed as those bytes
    argv = _plugins_first(sys.argv[1:] if argv is None else argv)
    if argv and argv[-1] == "--plugin":
        print("optsched: error: argument --plugin: expected one argument", file=sys.stderr)
        return EXIT_BAD_INPUT
    try:
        args = build_parser(_command(argv)).parse_args(argv)
    except SystemExit as exc:  # usage error (one line, exit 2), --help or --version
        return exc.code if isinstance(exc.code, int) else EXIT_BAD_INPUT
    try:
        if args.plugin:
            from optsched.registry import load_plugin

            for module in args.plugin:
                load_plugin(module)
        code: int = args.func(args)
        return code
    except InputError as exc:
        print(f"optsched: error: {one_line(str(exc))}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:  # Ctrl-C: one line, the shell's code for SIGINT
        print("optsched: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # output piped into e.g. `head`: stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK
    except OSError as exc:  # e.g. an output path that cannot be written
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"optsched: error: {where}{exc.strerror or exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except Exception as exc:
        if args.debug:
            raise
        text = one_line(str(exc).splitlines()[0]) if str(exc) else ""
        # a method's own failure (a plug-in's bug, say) names the method, not optsched
        kind = "method error" if isinstance(exc, MethodError) else "internal error"
        what = "" if isinstance(exc, MethodError) else f"{type(exc).__name__}: "
        print(f"optsched: {kind}: {what}{text} (rerun with --debug)", file=sys.stderr)
        return EXIT_INTERNAL
