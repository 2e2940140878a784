"""The command line as a thin layer: every option documented with its default, the reference
page generated from the parser, plug-ins anywhere on the command line, shared parameters
listed once."""

from __future__ import annotations

import argparse
import importlib
import sys
import textwrap

import pytest

from optsched.cli import COMMANDS, _command, _subparsers, build_parser, main, reference
from tests.conftest import ROOT

registry = importlib.import_module("optsched.registry")


def all_parsers():
    pending = [("optsched", build_parser())]
    while pending:
        title, parser = pending.pop(0)
        yield title, parser
        pending += [(f"{title} {name}", p) for name, p in _subparsers(parser)]


def test_every_option_has_help_that_states_its_default():
    for title, parser in all_parsers():
        parser.format_help()  # gen states its families' defaults when its help is shown
        for action in parser._actions:
            if isinstance(
                action, (argparse._HelpAction, argparse._VersionAction, argparse._SubParsersAction)
            ):
                continue
            where = f"{title} {'/'.join(action.option_strings) or action.dest}"
            assert action.help, f"{where} has no help text"
            if action.option_strings and action.default not in (
                None,
                False,
                [],
                argparse.SUPPRESS,
            ):
                assert "default" in action.help, f"{where} does not state its default"


@pytest.mark.skipif(
    sys.version_info[:2] != (3, 11),
    reason="argparse's help layout differs between Python versions; the page "
    "is generated with 3.11, the version CI runs",
)
def test_the_reference_page_is_generated_from_the_parser():
    page = (ROOT / "docs" / "cli-reference.md").read_text()
    assert page == reference(), "rerun python scripts/cli_reference.py"


def test_a_command_alone_parses_as_it_does_in_the_whole_parser():
    """The start-up shortcut (only the named command's parser is built) changes nothing."""
    names = [name for name, _ in _subparsers(build_parser())]
    assert names == [module.__name__.rsplit(".", 1)[1] for module in COMMANDS]
    for name in names:
        alone = dict(_subparsers(build_parser(name)))
        assert list(alone) == [name]
        assert alone[name].format_help() == dict(_subparsers(build_parser()))[name].format_help()
    assert _command(["--plugin", "solve", "--debug", "check", "x"]) == "check"
    assert _command(["--plugin=x.py", "simulate"]) == "simulate"
    assert _command(["chek", "x"]) is None
    assert _command(["--version"]) is None


def test_an_unknown_command_is_refused_with_the_known_ones(capsys):
    assert main(["chek", "a.json"]) == 2
    err = capsys.readouterr().err
    assert "invalid choice: 'chek'" in err and "check" in err and "bench" in err


def test_a_plugin_may_come_after_the_command(tmp_path, monkeypatch, capsys):
    (tmp_path / "pl_after.py").write_text(
        textwrap.dedent("""
        from optsched.contracts import MethodOutput
        from optsched.registry import register
        @register("pl-after", description="registered from after the command", replace=True)
        def nothing(instance, context):
            return MethodOutput()
    """)
    )
    monkeypatch.chdir(tmp_path)
    try:
        assert main(["methods", "--plugin", "pl_after.py"]) == 0
        assert "pl-after" in capsys.readouterr().out
    finally:
        sys.modules.pop("pl_after", None)
        registry._REGISTRY.pop(("solve", "pl-after"), None)


def test_methods_lists_shared_parameters_once(capsys):
    assert main(["methods"]) == 0
    out = capsys.readouterr().out
    place = out[out.index("place:") :]
    assert "shared by every place method" in place
    assert place.count("--param lambda=") == 1


def test_global_options_work_after_the_command(capsys):
    assert main(["methods", "--version"]) == 0
    assert "optsched" in capsys.readouterr().out
    assert main(["methods", "--plugin"]) == 2
    assert "--plugin: expected one argument" in capsys.readouterr().err
    toy = str(ROOT / "instances" / "hare-toy" / "hare-toy.instance.json")
    assert main(["solve", toy, "--method", "hlas"]) == 2
    assert "'hlas' is a simulate method" in capsys.readouterr().err
