"""Write docs/cli-reference.md: every command's --help (a test checks it is up to date)."""

from pathlib import Path

from optsched.cli import reference
from optsched.output import write_file

if __name__ == "__main__":
    write_file(Path(__file__).resolve().parents[1] / "docs" / "cli-reference.md", reference())
