"""Workload catalog: seconds per mini-batch for each (workload, GPU type), with provenance.

Every cell says where its number comes from (docs/model.md): ``published`` (with the
citation), ``derived`` (how), or ``assumed`` (why). The catalog shipped with the package is
``optsched/data/workloads.json``; ``scripts/build_catalog.py`` regenerates it.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from types import MappingProxyType
from typing import Any

from optsched.errors import InputError, UnknownNameError
from optsched.limits import MAX_VALUE, is_bounded

PROVENANCES = ("published", "derived", "assumed")

#: Canonical, case-sensitive GPU type names; other spellings (Gavel's ``k80``) map to them.
CANONICAL_GPU_TYPES = ("K80", "M60", "P100", "T4", "V100", "A100", "H100")
_ALIASES = {name.lower(): name for name in CANONICAL_GPU_TYPES}


def canonical_gpu_type(name: str) -> str:
    """The canonical spelling of a known GPU type (``k80`` → ``K80``); others unchanged."""
    return _ALIASES.get(name.lower(), name)


@dataclass(frozen=True)
class Cell:
    """One catalog figure: seconds per mini-batch and where it comes from."""

    seconds: float
    provenance: str
    note: str

    def __post_init__(self) -> None:
        if not (is_bounded(self.seconds) and self.seconds > 0):
            raise InputError(
                f"catalog cell seconds must be in (0, {MAX_VALUE:g}], got {self.seconds!r}"
            )
        if self.provenance not in PROVENANCES:
            raise InputError(
                f"catalog cell provenance must be one of {PROVENANCES}, got {self.provenance!r}"
            )
        if not self.note:
            raise InputError("catalog cell needs a note (citation, derivation or reason)")


@dataclass(frozen=True)
class Colocation:
    """How fast a workload trains while another trains on the same GPUs (space sharing):
    ``rates[gpu_type][other]`` is its throughput next to workload ``other`` over its
    throughput alone, in (0, :data:`MAX_COLOCATED_RATE`]; a pair not listed cannot share.
    ``note`` says where the rates come from."""

    rates: Mapping[str, Mapping[str, float]]
    note: str

    def __post_init__(self) -> None:
        for gpu_type, of in self.rates.items():
            for other, rate in of.items():
                if not (is_bounded(rate) and 0 < rate <= MAX_COLOCATED_RATE):
                    raise InputError(
                        f"co-location rate next to {other!r} on {gpu_type} must be in "
                        f"(0, {MAX_COLOCATED_RATE:g}], got {rate!r}"
                    )
        if not self.note:
            raise InputError("co-location rates need a note (citation or derivation)")
        frozen = {t: MappingProxyType(dict(of)) for t, of in self.rates.items()}
        object.__setattr__(self, "rates", MappingProxyType(frozen))


#: The largest co-location rate: a job never trains faster next to another than alone (so
#: its time alone stays a lower bound on its time under space sharing).
MAX_COLOCATED_RATE = 1.0


@dataclass(frozen=True)
class Workload:
    """A training workload: its per-GPU-type cells and a short description; for a
    multi-GPU workload, ``spread`` cells may give its seconds per step when its GPUs are
    spread over servers (Gavel's unconsolidated throughputs; ``cells`` are consolidated);
    ``colocated``, its rates next to other workloads on the same GPUs (space sharing)."""

    name: str
    description: str
    cells: Mapping[str, Cell]
    spread: Mapping[str, Cell] = field(default_factory=dict)
    colocated: Colocation | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "cells", MappingProxyType(dict(self.cells)))
        object.__setattr__(self, "spread", MappingProxyType(dict(self.spread)))


@dataclass(frozen=True)
class Catalog:
    """A set of workload profiles, looked up by name."""

    workloads: Mapping[str, Workload]

    def __post_init__(self) -> None:
        object.__setattr__(self, "workloads", MappingProxyType(dict(self.workloads)))

    def __contains__(self, name: object) -> bool:
        return name in self.workloads

    def __getitem__(self, name: str) -> Workload:
        try:
            return self.workloads[name]
        except KeyError:
            raise UnknownNameError(f"unknown workload {name!r} (not in the catalog)") from None

    def seconds(self, name: str, gpu_type: str) -> float | None:
        """Seconds per mini-batch of ``name`` on ``gpu_type``; ``None`` if not profiled."""
        cell = self[name].cells.get(canonical_gpu_type(gpu_type))
        return None if cell is None else cell.seconds

    def colocated_rate(self, name: str, other: str, gpu_type: str) -> float | None:
        """The rate of workload ``name`` while ``other`` trains on the same GPUs of
        ``gpu_type`` (its throughput there over its throughput alone); None if the pair
        cannot share (not measured, or either runs out of memory)."""
        colocated = self.workloads[name].colocated if name in self.workloads else None
        if colocated is None:
            return None
        return colocated.rates.get(canonical_gpu_type(gpu_type), {}).get(other)

    def to_dict(self) -> dict[str, Any]:
        def cells(of: Mapping[str, Cell]) -> dict[str, Any]:
            return {
                t: {"seconds": c.seconds, "provenance": c.provenance, "note": c.note}
                for t, c in of.items()
            }

        return {
            "format": "optsched/workloads@1",
            "workloads": {
                w.name: {
                    "description": w.description,
                    "seconds_per_batch": cells(w.cells),
                    **({"spread_seconds_per_batch": cells(w.spread)} if w.spread else {}),
                    **(
                        {
                            "colocated": {
                                "rates": {t: dict(of) for t, of in w.colocated.rates.items()},
                                "note": w.colocated.note,
                            }
                        }
                        if w.colocated
                        else {}
                    ),
                }
                for w in self.workloads.values()
            },
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Catalog:
        if data.get("format") != "optsched/workloads@1":
            raise InputError(f"unknown workload catalog format {data.get('format')!r}")

        def cells(of: Mapping[str, Any]) -> dict[str, Cell]:
            return {
                canonical_gpu_type(t): Cell(c["seconds"], c["provenance"], c["note"])
                for t, c in of.items()
            }

        def colocation(of: Mapping[str, Any] | None) -> Colocation | None:
            if of is None:
                return None
            rates = {canonical_gpu_type(t): dict(r) for t, r in of["rates"].items()}
            return Colocation(rates, of["note"])

        out = {}
        for name, w in data["workloads"].items():
            out[name] = Workload(
                name,
                w.get("description", ""),
                cells(w["seconds_per_batch"]),
                cells(w.get("spread_seconds_per_batch", {})),
                colocation(w.get("colocated")),
            )
        return cls(out)


@cache
def default_catalog() -> Catalog:
    """The catalog shipped with optsched (Gavel single-GPU job types and Hare's workloads)."""
    # the package's own file (optsched installs unzipped): importlib.resources would cost
    # every command that reads an instance 12 ms of start-up
    text = (Path(__file__).parent / "data" / "workloads.json").read_text("utf-8")
    return Catalog.from_dict(json.loads(text))


GAVEL_CITATION = (
    "Gavel simulation_throughputs.json (Narayanan et al., OSDI'20; "
    "stanford-futuredata/gavel@c4fa400, MIT)"
)


def gavel_workload_name(job_type: str, scale_factor: int) -> str:
    """The catalog name of Gavel's ``job_type`` on ``scale_factor`` GPUs: the job type itself
    for one GPU, ``"<job_type> (scale factor k)"`` otherwise."""
    return job_type if scale_factor == 1 else f"{job_type} (scale factor {scale_factor})"


def read_gavel_throughputs(path: str | Path, *, citation: str = GAVEL_CITATION) -> Catalog:
    """Read Gavel's throughput JSON into a catalog of workloads.

    Gavel's file maps ``gpu_type`` → ``"(job_type, scale_factor)"`` → ``{"null": steps/s,
    ...co-located pairs}``. We keep the isolated (``"null"``) throughput on consolidated GPU
    types, as seconds per step = 1 / steps-per-second, and tag each cell ``published`` with
    ``citation``. Scale factor 1 is the workload ``job_type``; scale factor k > 1 is the
    workload :func:`gavel_workload_name` ``(job_type, k)``, whose seconds are per step of
    the whole k-GPU data-parallel job (Gavel's distributed throughput, synchronisation
    included; a 0 there means it cannot run on that type, and the cell is left out).
    The ``*_unconsolidated`` types (the k GPUs spread over servers) give a multi-GPU
    workload's ``spread`` cells the same way (their single-GPU entries, equal to the
    consolidated ones, are left out, and so is a 0: not measured); GPU type names are
    canonicalised (``k80`` → ``K80``). A consolidated entry's co-located pairs
    ``"(other, k)": [own, other's]`` (steps/s of each while both train on the same k GPUs)
    give the workload's ``colocated`` rates, own ÷ isolated (at most 1: a measured rate above
    is noise); a pair where either throughput is 0 (not measured, or out of memory) is left
    out.

    Raises
    ------
    InputError
        If the file is unreadable, not JSON, or not in Gavel's layout.
    """
    from optsched.jsonfile import read_json

    raw = read_json(path)
    if not isinstance(raw, dict):
        raise InputError(f"{path}: Gavel throughputs must be a JSON object of GPU types")
    cells: dict[str, dict[str, Cell]] = {}
    spread: dict[str, dict[str, Cell]] = {}
    scales: dict[str, int] = {}
    pairs: dict[str, dict[str, dict[str, float]]] = {}
    for gtype, jobs in raw.items():
        base, unconsolidated, _ = gtype.partition("_unconsolidated")
        if not isinstance(jobs, dict):
            raise InputError(f"{path}: GPU type {gtype!r} must map job keys to objects")
        for key, entry in jobs.items():
            try:
                job_type, scale = ast.literal_eval(key)
            except (ValueError, SyntaxError, TypeError):
                raise InputError(f"{path}: job key {key!r} is not '(job_type, scale)'") from None
            if not isinstance(job_type, str) or not isinstance(scale, int):
                raise InputError(f"{path}: job key {key!r} is not '(job_type, scale)'")
            if scale < 1:
                raise InputError(f"{path}: job key {key!r} has scale factor {scale} < 1")
            tput = entry.get("null") if isinstance(entry, dict) else None
            if scale > 1 and tput == 0:
                continue  # Gavel's 0: the job does not run on k GPUs of this type
            if not is_bounded(tput) or tput <= 0:
                raise InputError(
                    f"{path}: {gtype} {key}: isolated throughput ('null') must "
                    f"be a positive number, got {tput!r}"
                )
            if unconsolidated and scale == 1:
                continue  # one GPU is never spread
            how = "unconsolidated" if unconsolidated else "consolidated"
            into = spread if unconsolidated else cells
            into.setdefault(gavel_workload_name(job_type, scale), {})[canonical_gpu_type(base)] = (
                Cell(
                    1.0 / tput,
                    "published",
                    f"{citation}; isolated {tput:.6g} steps/s on {gtype}"
                    + (f" (scale factor {scale}, {how})" if scale > 1 else "")
                    + "; seconds = 1/steps",
                )
            )
            if not unconsolidated:
                name = gavel_workload_name(job_type, scale)
                scales[name] = scale
                of = pairs.setdefault(name, {}).setdefault(canonical_gpu_type(base), {})
                for other_key, both in entry.items():
                    rate = _colocated_rate(path, gtype, key, other_key, both, tput)
                    if rate is not None:
                        other_type, other_scale = ast.literal_eval(other_key)
                        of[gavel_workload_name(other_type, other_scale)] = rate
    if not any(k == 1 for k in scales.values()):
        raise InputError(f"{path}: no single-GPU job types found")
    return Catalog(
        {
            name: Workload(
                name,
                "Gavel job type, one GPU"
                if scales[name] == 1
                else f"Gavel job type, {scales[name]} GPUs (consolidated); "
                "seconds per step of the whole job",
                c,
                spread.get(name, {}),
                Colocation(
                    {t: of for t, of in pairs[name].items() if of},
                    f"{citation}; co-located throughput over isolated throughput, per pair",
                )
                if any(pairs.get(name, {}).values())
                else None,
            )
            for name, c in cells.items()
        }
    )


def _colocated_rate(
    path: str | Path, gtype: str, key: str, other_key: str, both: Any, alone: float
) -> float | None:
    """The rate of Gavel's entry ``key`` next to ``other_key`` (own co-located throughput
    over ``alone``); None for the isolated entry or a pair with a 0 (cannot share)."""
    if other_key == "null":
        return None
    if (
        not isinstance(both, list)
        or len(both) != 2
        or not all(is_bounded(x) and x >= 0 for x in both)
    ):
        raise InputError(
            f"{path}: {gtype} {key} next to {other_key}: co-located throughputs must be "
            f"two numbers >= 0, got {both!r}"
        )
    if both[0] == 0 or both[1] == 0:
        return None
    return min(float(both[0]) / alone, MAX_COLOCATED_RATE)
