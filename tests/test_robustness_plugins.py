"""Plug-ins that fail: on import (bad input, exit 2) and while running (a method bug, exit 70).

Every failure must be one line on stderr naming the plug-in module (and the method, when it
runs) and what it raised, with no traceback, and no plug-in may end ``optsched`` silently with
its own exit code. Plug-in modules are written into ``tmp_path`` and imported by a real
``python -m optsched.cli --plugin MODULE`` subprocess.
"""

from __future__ import annotations

import importlib
import math
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from optsched.cli import main
from optsched.contracts import MethodOutput
from optsched.errors import InputError, MethodError, UnknownNameError
from optsched.registry import get_method, load_plugin, register
from optsched.runtime import check_bound
from optsched.solve import solve
from tests.test_solve import TINY

ROOT = Path(__file__).resolve().parents[1]
registry = importlib.import_module("optsched.registry")

#: A solve plug-in whose methods misbehave in every way the CLI must survive.
METHODS = """
import math, sys, time
from dataclasses import dataclass
from pathlib import Path
from optsched.options import Options, text
from optsched.errors import InputError
from optsched.ect import ect_schedule
from optsched.contracts import MethodOutput
from optsched.registry import register

@register("pl-raise", description="raises")
def raise_(instance, context):
    raise ValueError("kaboom\\nsecond line of the message")

@register("pl-exit0", description="calls sys.exit(0)")
def exit0(instance, context):
    sys.exit(0)

@register("pl-exit3", description="calls sys.exit(3)")
def exit3(instance, context):
    sys.exit(3)

@register("pl-ctrlc", description="raises KeyboardInterrupt itself")
def ctrlc(instance, context):
    raise KeyboardInterrupt

@register("pl-input", description="refuses its input")
def input_(instance, context):
    raise InputError("pl-input: parameter k must be a number")

@register("pl-none", description="returns None")
def none(instance, context):
    return None

@register("pl-nan", description="bound NaN")
def nan(instance, context):
    return MethodOutput(schedule=ect_schedule(instance), bound=math.nan)

@register("pl-ninf", description="bound -inf, no schedule")
def ninf(instance, context):
    return MethodOutput(bound=-math.inf)

@register("pl-pinf", description="bound +inf")
def pinf(instance, context):
    return MethodOutput(schedule=ect_schedule(instance), bound=math.inf)

@register("pl-strbound", description="bound is a string")
def strbound(instance, context):
    return MethodOutput(bound="12")

@register("pl-badstatus", description="status is not a Status")
def badstatus(instance, context):
    return MethodOutput(status="done")

@register("pl-ok", description="ECT")
def ok(instance, context):
    return MethodOutput(schedule=ect_schedule(instance), bound=1.0)

@dataclass(frozen=True)
class MarkerOptions(Options):
    marker: str | None = text("a file")

@register("pl-sleep", description="writes a marker, then sleeps", options=MarkerOptions)
def sleep(instance, context):
    Path(context.options.marker).write_text("started")
    time.sleep(30)
    return MethodOutput()
"""


@pytest.fixture
def plugins(tmp_path: Path) -> Path:
    """tmp_path with the plug-in modules and an instance (``x.json``)."""
    (tmp_path / "pl_methods.py").write_text(METHODS)
    assert (
        main(
            ["gen", "--seed", "0", "--jobs", "3", "--gpus", "2", "--out", str(tmp_path / "x.json")]
        )
        == 0
    )
    return tmp_path


def _env(path: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(path), str(ROOT), env.get("PYTHONPATH", "")])
    return env


def cli(path: Path, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "optsched.cli", *args],
        cwd=path,
        env=_env(path),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def one_line_error(proc: subprocess.CompletedProcess[str], code: int) -> str:
    """Assert exit ``code``, no stdout, one stderr line without a traceback; return it."""
    assert proc.returncode == code, (proc.returncode, proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    assert proc.stdout == ""
    return lines[0]


# -- import failures: bad input, exit 2 ---------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "raised"),
    [
        ("raise RuntimeError('no GPU driver\\nfound')", "RuntimeError: no GPU driver"),
        ("def f(:\n    pass", "SyntaxError: "),
        ("import sys\nsys.exit(0)", "SystemExit: 0"),
        ("import sys\nsys.exit(5)", "SystemExit: 5"),
        ("raise SystemExit", "SystemExit"),
        ("raise KeyboardInterrupt", "KeyboardInterrupt"),
        (
            "import optsched_no_such_dependency",
            "ModuleNotFoundError: No module named 'optsched_no_such_dependency'",
        ),
        (
            "from optsched import register\n"
            "register('ect', description='clash')(lambda i, c: None)",
            "InputError: a solve method named 'ect' is already registered",
        ),
    ],
)
def test_a_plugin_that_fails_to_import_is_bad_input(plugins, source, raised):
    (plugins / "pl_broken.py").write_text(source + "\n")
    proc = cli(plugins, "--plugin", "pl_broken", "solve", "x.json", "--method", "ect")
    line = one_line_error(proc, 2)
    assert line.startswith("optsched: error: cannot import plug-in module 'pl_broken': ")
    assert raised in line


def test_a_missing_plugin_module_is_bad_input(plugins):
    line = one_line_error(cli(plugins, "--plugin", "pl_nowhere", "methods"), 2)
    assert line == (
        "optsched: error: cannot import plug-in module 'pl_nowhere': "
        "ModuleNotFoundError: No module named 'pl_nowhere'"
    )


def test_a_plugin_file_and_a_module_in_the_current_directory_both_load(plugins, tmp_path):
    """``--plugin path/to/file.py`` imports the file; ``--plugin NAME`` finds NAME.py in the
    current directory even from the console script, whose sys.path lacks it."""
    sub = tmp_path / "elsewhere"
    sub.mkdir()
    (sub / "my_ect.py").write_text(
        textwrap.dedent("""
        from optsched.ect import ect_schedule
        from optsched.contracts import MethodOutput
        from optsched.registry import register
        @register("my-ect", description="ECT, as a plug-in file")
        def my_ect(instance, context):
            return MethodOutput(schedule=ect_schedule(instance))
    """)
    )
    by_file = subprocess.run(
        [
            sys.executable,
            "-m",
            "optsched",
            "--plugin",
            "elsewhere/my_ect.py",
            "solve",
            "x.json",
            "--method",
            "my-ect",
        ],
        cwd=plugins,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert by_file.returncode == 0, by_file.stderr
    script = Path(sys.executable).with_name("optsched")
    if script.exists():  # the console script: the current directory is not on sys.path
        here = subprocess.run(
            [str(script), "--plugin", "my_ect", "solve", "../x.json", "--method", "my-ect"],
            cwd=sub,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert here.returncode == 0, here.stderr
    line = one_line_error(cli(plugins, "--plugin", "nowhere/none.py", "methods"), 2)
    assert line == "optsched: error: cannot import plug-in file 'nowhere/none.py': no such file"


def test_a_failed_import_leaves_no_method_registered(tmp_path, monkeypatch):
    (tmp_path / "pl_half.py").write_text(
        textwrap.dedent("""
        from optsched.contracts import MethodOutput
        from optsched.registry import register
        @register("pl-half", description="registered, then the import fails")
        def half(instance, context):
            return MethodOutput()
        raise SystemExit(0)
    """)
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(InputError, match=r"plug-in module 'pl_half': SystemExit: 0$"):
        load_plugin("pl_half")
    with pytest.raises(UnknownNameError, match="unknown solve method 'pl-half'"):
        get_method("pl-half")


def test_a_broken_entry_point_is_bad_input_naming_it(tmp_path, monkeypatch):
    from importlib.metadata import EntryPoint

    (tmp_path / "pl_ep.py").write_text("raise ImportError('needs libfoo')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    broken = EntryPoint(name="foo", value="pl_ep", group="optsched.methods")
    monkeypatch.setattr(registry, "entry_points", lambda group: [broken])
    monkeypatch.setattr(registry, "_loaded", set(registry._loaded) - {"plugins"})
    with pytest.raises(
        InputError,
        match=r"entry point 'foo' \(pl_ep\).*ImportError: needs "
        "libfoo",
    ):
        get_method("ect")
    with pytest.raises(InputError, match="entry point 'foo'"):  # reported again, not skipped
        get_method("ect")
    monkeypatch.setattr(registry, "entry_points", lambda group: [])
    assert get_method("ect").name == "ect"


# -- a method that raises or exits: a method bug, exit 70 ---------------------------------------


@pytest.mark.parametrize(
    ("method", "raised"),
    [
        ("pl-raise", "ValueError: kaboom"),
        ("pl-exit0", "SystemExit: 0"),
        ("pl-exit3", "SystemExit: 3"),
        ("pl-ctrlc", "KeyboardInterrupt"),
    ],
)
def test_a_method_that_raises_or_exits_is_named(plugins, method, raised):
    proc = cli(plugins, "--plugin", "pl_methods", "solve", "x.json", "--method", method)
    line = one_line_error(proc, 70)
    assert line.startswith(f"optsched: method error: method '{method}' (plug-in pl_methods) ")
    assert f"method '{method}' (plug-in pl_methods) raised {raised}" in line
    assert "second line" not in line


def test_a_method_refusing_its_input_stays_bad_input(plugins):
    """Exit 2, and the message says which plug-in refused the input."""
    proc = cli(plugins, "--plugin", "pl_methods", "solve", "x.json", "--method", "pl-input")
    assert one_line_error(proc, 2) == (
        "optsched: error: method 'pl-input' (plug-in "
        "pl_methods): pl-input: parameter k must be a number"
    )


@pytest.mark.parametrize(
    ("method", "message"),
    [
        ("pl-none", "returned NoneType, not a MethodOutput"),
        ("pl-nan", "returned a non-finite bound nan"),
        ("pl-ninf", "returned a non-finite bound -inf"),
        ("pl-pinf", "returned a non-finite bound inf"),
        ("pl-strbound", "returned a bound of type str, not a number"),
        ("pl-badstatus", "returned status 'done'"),
    ],
)
def test_an_invalid_result_is_refused_naming_the_method(plugins, method, message):
    proc = cli(plugins, "--plugin", "pl_methods", "solve", "x.json", "--method", method, "--json")
    line = one_line_error(proc, 70)
    assert f"method '{method}' (plug-in pl_methods) {message}" in line


def test_a_valid_plugin_method_still_solves(plugins):
    proc = cli(plugins, "--plugin", "pl_methods", "solve", "x.json", "--method", "pl-ok")
    assert proc.returncode == 0, proc.stderr
    assert "status     feasible" in proc.stdout and proc.stderr == ""


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_a_genuine_ctrl_c_still_aborts(plugins):
    marker = plugins / "started"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "optsched.cli",
            "--plugin",
            "pl_methods",
            "solve",
            "x.json",
            "--method",
            "pl-sleep",
            "--param",
            f"marker={marker}",
        ],
        cwd=plugins,
        env=_env(plugins),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 30
        while not marker.exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        assert marker.exists(), proc.communicate()
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=20)
    finally:
        proc.kill()
    assert proc.returncode not in (0, 70), (proc.returncode, err)
    assert out == "" and "MethodError" not in err


# -- simulate and place methods go through the same guard --------------------------------------


def test_simulate_and_place_plugins_are_named(plugins):
    (plugins / "pl_other.py").write_text(
        textwrap.dedent("""
        import math
        from optsched.contracts import PlaceOutput
        from optsched.registry import register

        @register("pl-policy", kind="simulate", description="cannot be built")
        def policy(options, seed):
            raise RuntimeError("policy table missing")

        @register("pl-place", kind="place", description="NaN bound")
        def place(instance, context):
            return PlaceOutput(bound=math.nan)
    """)
    )
    proc = cli(plugins, "--plugin", "pl_other", "simulate", "x.json", "--policy", "pl-policy")
    line = one_line_error(proc, 70)
    assert (
        "simulate method 'pl-policy' (plug-in pl_other) raised RuntimeError: policy table missing"
    ) in line
    assert (
        main(["gen", "--family", "placement", "--seed", "0", "--out", str(plugins / "p.json")])
        == 0
    )
    proc = cli(plugins, "--plugin", "pl_other", "place", "p.json", "--method", "pl-place")
    line = one_line_error(proc, 70)
    assert "place method 'pl-place' (plug-in pl_other) returned a non-finite bound nan" in line


# -- the library API ---------------------------------------------------------------------------


def test_library_solve_raises_method_error_for_exits_and_bad_bounds():
    @register("test-exit", description="exits", replace=True)
    def exits(instance, context):
        raise SystemExit(0)

    @register("test-nan-bound", description="NaN bound", replace=True)
    def nan_bound(instance, context):
        return MethodOutput(bound=math.nan)

    with pytest.raises(
        MethodError,
        match=r"method 'test-exit' \(plug-in tests\.test_robust"
        r"ness_plugins\) raised SystemExit: 0",
    ) as info:
        solve(TINY, "test-exit")
    assert isinstance(info.value.__cause__, SystemExit)
    with pytest.raises(MethodError, match="non-finite bound nan"):
        solve(TINY, "test-nan-bound")
    assert get_method("ect").plugin is None  # built-ins are not plug-ins
    with pytest.raises(MethodError, match="checked objective is not finite"):
        check_bound(get_method("ect"), None, math.inf)
    with pytest.raises(MethodError, match=r"bound 9\.0 exceeds the checked cost 1\.0"):
        check_bound(get_method("ect"), 9.0, 1.0, "cost")


def test_loading_a_plugin_file_twice_is_a_no_op(tmp_path):
    """A plug-in file loaded again (as a benchmark's forked workers do) is not re-run, so its
    methods are not registered twice."""
    path = tmp_path / "pl_twice.py"
    path.write_text(
        textwrap.dedent("""
        from optsched.contracts import MethodOutput
        from optsched.registry import register
        @register("pl-twice", description="registered once")
        def once(instance, context):
            return MethodOutput()
    """)
    )
    try:
        load_plugin(str(path))
        load_plugin(str(path))
        assert get_method("pl-twice").plugin == "pl_twice"
        other = tmp_path / "sub"
        other.mkdir()
        (other / "pl_twice.py").write_text("")
        with pytest.raises(InputError, match="a module named 'pl_twice' is already imported"):
            load_plugin(str(other / "pl_twice.py"))
    finally:
        sys.modules.pop("pl_twice", None)
        registry._REGISTRY.pop(("solve", "pl-twice"), None)
