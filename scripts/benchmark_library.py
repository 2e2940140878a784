"""Write docs/benchmark-library.md: the best known values of every instance set under
instances/, from their manifests (a test checks it is up to date)."""

from pathlib import Path

from optsched.bench.library import library_page
from optsched.output import write_file

ROOT = Path(__file__).resolve().parents[1]

if __name__ == "__main__":
    write_file(ROOT / "docs" / "benchmark-library.md", library_page(ROOT / "instances"))
