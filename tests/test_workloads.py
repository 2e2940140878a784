"""The workload catalog, its provenance, and the Gavel throughput reader."""

from __future__ import annotations

import json

import pytest

from optsched.errors import InputError
from optsched.workloads import (
    PROVENANCES,
    Catalog,
    canonical_gpu_type,
    default_catalog,
    gavel_workload_name,
    read_gavel_throughputs,
)
from tests.conftest import DATA

HARE = [
    "Hare/VGG-19",
    "Hare/ResNet-50",
    "Hare/Inception-V3",
    "Hare/BERT-base",
    "Hare/Transformer",
    "Hare/DeepSpeech",
    "Hare/FastGCN",
    "Hare/GraphSAGE",
]


def test_every_cell_has_provenance_and_a_note():
    cat = default_catalog()
    for w in cat.workloads.values():
        assert w.cells
        for cell in w.cells.values():
            assert cell.provenance in PROVENANCES and cell.note and cell.seconds > 0


def test_catalog_covers_gavel_and_hare():
    cat = default_catalog()
    gavel = [w for w in cat.workloads.values() if w.description.startswith("Gavel")]
    single = [w for w in gavel if w.description == "Gavel job type, one GPU"]
    assert len(single) == 26 and len(gavel) == 83  # 26 types × scale factors 1, 2, 4, 8
    for w in single:
        assert set(w.cells) == {"K80", "P100", "V100"}
    for w in gavel:
        assert {c.provenance for c in w.cells.values()} == {"published"}
    # Gavel's distributed throughput: 4 V100s run ResNet-50 bs64 at 9.45 steps/s
    four = cat[gavel_workload_name("ResNet-50 (batch size 64)", 4)]
    assert 1 / four.cells["V100"].seconds == pytest.approx(9.45195, 1e-5)
    for name in HARE:
        assert set(cat[name].cells) == {"K80", "T4", "V100", "M60"}


def test_hare_published_speedups_hold():
    """Hare Fig. 2: ResNet-50 ~2x on T4 and ~7x on V100 vs K80; GraphSAGE ~2x on V100."""
    cat = default_catalog()
    k80 = cat.seconds("Hare/ResNet-50", "K80")
    assert k80 / cat.seconds("Hare/ResNet-50", "T4") == pytest.approx(2.0, rel=1e-3)
    assert k80 / cat.seconds("Hare/ResNet-50", "V100") == pytest.approx(7.0, rel=1e-3)
    sage = cat["Hare/GraphSAGE"].cells
    assert sage["K80"].seconds / sage["V100"].seconds == pytest.approx(2.0, rel=1e-3)
    assert sage["V100"].provenance == "derived"


def test_canonical_gpu_names():
    assert canonical_gpu_type("k80") == "K80"
    assert canonical_gpu_type("v100") == "V100"
    assert canonical_gpu_type("RTX6000") == "RTX6000"
    assert default_catalog().seconds("A3C", "k80") == default_catalog().seconds("A3C", "K80")


def test_catalog_dict_round_trip():
    cat = default_catalog()
    assert Catalog.from_dict(json.loads(json.dumps(cat.to_dict()))) == cat


def test_gavel_reader_on_our_fixture():
    cat = read_gavel_throughputs(DATA / "gavel_small.json")
    assert sorted(cat.workloads) == ["Toy CNN", "Toy CNN (scale factor 2)", "Toy LM"]
    assert cat.seconds("Toy CNN", "K80") == 0.5  # 1 / 2 steps/s
    assert cat.seconds("Toy CNN", "V100") == 0.1  # unconsolidated ignored
    assert cat["Toy CNN (scale factor 2)"].description.startswith("Gavel job type, 2 GPUs")
    assert cat["Toy LM"].cells["V100"].provenance == "published"


def test_gavel_reader_keeps_unconsolidated_throughputs_as_spread_cells(tmp_path):
    path = tmp_path / "t.json"
    path.write_text(
        json.dumps(
            {
                "v100": {"('A', 1)": {"null": 10.0}, "('A', 2)": {"null": 4.0}},
                "v100_unconsolidated": {
                    "('A', 1)": {"null": 10.0},
                    "('A', 2)": {"null": 2.5},
                },
            }
        )
    )
    cat = read_gavel_throughputs(path)
    two = cat["A (scale factor 2)"]
    assert two.cells["V100"].seconds == 0.25 and two.spread["V100"].seconds == 0.4
    assert "unconsolidated" in two.spread["V100"].note
    assert not cat["A"].spread  # one GPU is never spread
    assert Catalog.from_dict(json.loads(json.dumps(cat.to_dict()))) == cat


def test_the_shipped_catalog_has_gavels_spread_throughputs():
    cat = default_catalog()
    four = cat["ResNet-50 (batch size 32) (scale factor 4)"]
    assert set(four.spread) == {"K80", "P100", "V100"}
    # Gavel's 0 (not measured spread) leaves the cell out
    assert set(cat["ResNet-50 (batch size 64) (scale factor 4)"].spread) == {"P100", "V100"}
    assert "ResNet-50 (batch size 64)" in cat and not cat["ResNet-50 (batch size 64)"].spread


def test_gavel_reader_errors(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"k80": {"not a tuple": {"null": 1}}}')
    with pytest.raises(InputError, match="is not '\\(job_type, scale\\)'"):
        read_gavel_throughputs(bad)
    bad.write_text('{"k80": {"(\'A\', 1)": {"null": 0}}}')
    with pytest.raises(InputError, match="must be a positive number"):
        read_gavel_throughputs(bad)
    bad.write_text("{")
    with pytest.raises(InputError, match="malformed JSON"):
        read_gavel_throughputs(bad)
    with pytest.raises(InputError, match="cannot read"):
        read_gavel_throughputs(tmp_path / "missing.json")


def test_gavel_reader_on_gavel_file_matches_the_catalog(peer_data):
    cat = read_gavel_throughputs(peer_data / "gavel" / "simulation_throughputs.json")
    assert len(cat.workloads) == 83
    shipped = default_catalog()
    for name, w in cat.workloads.items():
        for gtype, cell in w.cells.items():
            assert shipped.seconds(name, gtype) == pytest.approx(cell.seconds, rel=1e-12)
    # Gavel's published throughputs: ResNet-50 bs64 runs 4.39 steps/s on V100 and 0.62 on K80
    assert 1 / cat.seconds("ResNet-50 (batch size 64)", "V100") == pytest.approx(4.3948, 1e-4)
    assert 1 / cat.seconds("ResNet-50 (batch size 64)", "K80") == pytest.approx(0.6190, 1e-3)
