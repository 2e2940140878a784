"""Instance grids (``optsched/grid@1``) and the instance sets generated from them.

A grid file names a generator ``family`` (``exact``, the default:
:class:`~optsched.generate.GeneratorSpec`; ``hare``: :class:`~optsched.generate.HareSpec`;
``placement``: :class:`~optsched.placement.generate.PlacementSpec`; ``liquid``:
:class:`~optsched.generate.LiquidSpec`), its
base parameters, the parameters to vary
(their cartesian product gives the grid *cells*) and the instance seeds::

    {"format": "optsched/grid@1", "name": "baseline",
     "generator": {"gpus": 8, "gpu_types": 2, "hosts": 2},
     "vary": {"jobs": [4, 6, 8]},
     "seeds": [0, 1, 2, 3, 4]}

:func:`generate_set` writes one instance file per (cell, seed), the grid itself, and a
manifest (:mod:`optsched.bench.manifest`) listing every instance with its cell and seed.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from optsched.bench.manifest import Manifest
from optsched.errors import InputError
from optsched.generate import (
    GeneratorSpec,
    HareSpec,
    LiquidSpec,
    generate,
    generate_hare,
    generate_liquid,
)
from optsched.io import instance_to_dict, read_json, write_json
from optsched.placement.generate import PlacementSpec, generate_placement
from optsched.placement.model import PlacementInstance, placement_instance_to_dict

GRID_FORMAT = "optsched/grid@1"
FAMILIES: dict[str, tuple[Any, Any]] = {"exact": (GeneratorSpec, generate),
                                        "hare": (HareSpec, generate_hare),
                                        "placement": (PlacementSpec, generate_placement),
                                        "liquid": (LiquidSpec, generate_liquid)}


def _spec_value(value: Any) -> Any:
    return tuple(_spec_value(v) for v in value) if isinstance(value, list) else value


@dataclass(frozen=True)
class Grid:
    """A validated grid: base generator parameters, varied parameters, instance seeds."""

    name: str
    generator: Mapping[str, Any]
    vary: Mapping[str, list[Any]]
    seeds: tuple[int, ...]
    family: str = "exact"

    def __post_init__(self) -> None:
        if self.family not in FAMILIES:
            raise InputError(f"grid: family must be one of {sorted(FAMILIES)}, "
                             f"got {self.family!r}")
        spec_fields = {f.name for f in fields(FAMILIES[self.family][0])}
        if not isinstance(self.name, str) or not self.name.replace("-", "").isalnum():
            raise InputError(f"grid name must be letters, digits and '-', got {self.name!r}")
        for key in [*self.generator, *self.vary]:
            if key not in spec_fields:
                raise InputError(f"grid: unknown generator parameter {key!r}")
        for key, values in self.vary.items():
            if not isinstance(values, list) or not values:
                raise InputError(f"grid: vary[{key!r}] must be a non-empty list")
        if not self.seeds or not all(isinstance(s, int) and s >= 0 for s in self.seeds):
            raise InputError("grid: seeds must be a non-empty list of integers >= 0")
        for cell in self.cells():
            self.spec(cell)  # validates every combination up front

    def cells(self) -> list[dict[str, Any]]:
        """Every combination of the varied parameters, in file order."""
        keys = list(self.vary)
        return [dict(zip(keys, combo, strict=True))
                for combo in itertools.product(*(self.vary[k] for k in keys))]

    def spec(self, cell: Mapping[str, Any]) -> Any:
        values = {k: _spec_value(v) for k, v in {**self.generator, **cell}.items()}
        try:
            return FAMILIES[self.family][0](**values)
        except TypeError as exc:
            raise InputError(f"grid: {exc}") from None

    def instance_name(self, cell: Mapping[str, Any], seed: int) -> str:
        parts = [f"{k}{'-'.join(map(str, v)) if isinstance(v, list) else v}"
                 for k, v in cell.items()]
        return "-".join([self.name, *parts, f"s{seed}"])

    def to_dict(self) -> dict[str, Any]:
        out = {"format": GRID_FORMAT, "name": self.name, "generator": dict(self.generator),
               "vary": dict(self.vary), "seeds": list(self.seeds)}
        if self.family != "exact":
            out["family"] = self.family
        return out


def load_grid(path: str | Path) -> Grid:
    """Read and validate a grid file."""
    data = read_json(path)
    if not isinstance(data, dict) or data.get("format") != GRID_FORMAT:
        raise InputError(f"{path}: not an {GRID_FORMAT} file")
    unknown = sorted(set(data) - {"format", "name", "family", "generator", "vary", "seeds"})
    if unknown:
        raise InputError(f"{path}: unknown key {unknown[0]!r}")
    try:
        return Grid(data.get("name", ""), dict(data.get("generator", {})),
                    dict(data.get("vary", {})), tuple(data.get("seeds", ())),
                    data.get("family", "exact"))
    except InputError as exc:
        raise InputError(f"{path}: {exc}") from None


def generate_set(grid: Grid, out: str | Path) -> Manifest:
    """Write the instances of ``grid`` into ``out`` with ``grid.json`` and ``manifest.json``.

    Refuses to overwrite an existing manifest: an instance set, once run, is immutable.
    """
    out = Path(out)
    manifest_path = out / "manifest.json"
    if manifest_path.exists():
        raise InputError(f"{manifest_path} exists: an instance set is never regenerated "
                         "in place; choose another folder")
    out.mkdir(parents=True, exist_ok=True)
    write_json(out / "grid.json", grid.to_dict())
    entries = {}
    for cell in grid.cells():
        spec = grid.spec(cell)
        for seed in grid.seeds:
            name = grid.instance_name(cell, seed)
            instance = FAMILIES[grid.family][1](spec, seed, name=name)
            write_json(out / f"{name}.json", placement_instance_to_dict(instance)
                       if isinstance(instance, PlacementInstance) else instance_to_dict(instance))
            entries[name] = {"file": f"{name}.json", "cell": cell, "seed": seed}
    manifest = Manifest.new(manifest_path, grid.name, entries)
    manifest.save()
    return manifest
