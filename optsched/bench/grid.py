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

Guarantees:

- **Checked before anything is generated.** Every key of the grid file and every value of
  ``generator`` and ``vary`` is checked against the type of its generator parameter
  (``seeds``: distinct integers in [0, 2^31), booleans are not integers), every cell is
  validated by
  its family's spec, and the instance names built from the varied values are plain file
  names (letters, digits, ``.``, ``_``, ``+``, ``-``): a value that would make a name leave
  the output folder (``../x``, ``a/b``) is refused, naming the grid key and the value.
- **Bounded size.** :func:`Grid.size` estimates what the set holds (jobs + GPUs, plus
  containers and past runs where the family has them: the units generation memory grows
  with); a grid over :data:`MAX_INSTANCES` instances, :data:`MAX_INSTANCE_SIZE` in one
  instance or :data:`MAX_SET_SIZE` in all, or with instances of possibly more than
  :data:`~optsched.limits.MAX_TASKS` tasks, is refused with the estimate. The caps keep one
  instance under ~11 GiB while it is generated (the heaviest family measured ~11 KiB per
  unit) and a whole set to a few GiB of JSON.
- **All or nothing.** The set is generated into a hidden temporary folder beside ``out`` and
  renamed into place only when every file is written; on failure nothing is left behind
  (a SIGKILL may leave the hidden ``.NAME.*.tmp`` folder, never a partial set).
  ``out`` must not exist or be an empty folder: a folder holding a set is never regenerated
  in place, and a folder of other files is refused rather than mixed with a set.
"""

from __future__ import annotations

import itertools
import math
import os
import re
import shutil
import sys
import tempfile
import types
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Union, get_args, get_origin, get_type_hints

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
from optsched.io import instance_to_dict, write_json
from optsched.jsonfile import read_json
from optsched.limits import MAX_SEED, MAX_TASKS, check_seed, is_bounded
from optsched.placement.generate import PlacementSpec, generate_placement
from optsched.placement.model import PlacementInstance, placement_instance_to_dict

GRID_FORMAT = "optsched/grid@1"
FAMILIES: dict[str, tuple[Any, Any]] = {
    "exact": (GeneratorSpec, generate),
    "hare": (HareSpec, generate_hare),
    "placement": (PlacementSpec, generate_placement),
    "liquid": (LiquidSpec, generate_liquid),
}


def family_instance(
    family: str, options: Mapping[str, Any], seed: int, *, name: str | None = None
) -> Any:
    """The instance ``optsched gen`` makes: family ``family``'s generator on its spec with
    ``options`` (spec field → value, None meaning the spec's default; ``weight`` ranges of
    the other families as integers; ``mix`` as ``MODEL:COUNT,...`` for liquid, comma-separated
    ratios for hare).

    Raises
    ------
    InputError
        An option the family does not have, a malformed ``mix``, a name that is empty or not
        printable, or anything the spec or the generator refuses.
    """
    if family not in FAMILIES:
        raise InputError(f"unknown family {family!r} (known: {', '.join(FAMILIES)})")
    if name is not None and (not name or not name.isprintable()):
        raise InputError(f"--name must be a non-empty printable name, got {name!r}")
    spec_type, make = FAMILIES[family]
    given = {k: v for k, v in options.items() if v is not None}
    own = {f.name for f in fields(spec_type)}
    foreign = sorted(set(given) - own)
    if foreign:
        raise InputError(
            f"--{foreign[0].replace('_', '-')} is not an option of the {family} family"
        )
    if family != "exact" and "weight" in given:
        given["weight"] = tuple(int(w) for w in given["weight"])
    if "mix" in given and family == "liquid":
        try:
            given["mix"] = tuple(
                (m, int(c)) for m, c in (part.split(":") for part in given["mix"].split(","))
            )
        except ValueError:
            raise InputError(f"--mix expects MODEL:COUNT,..., got {options['mix']!r}") from None
    elif "mix" in given:
        try:
            given["mix"] = tuple(float(x) for x in given["mix"].split(","))
        except ValueError:
            raise InputError(
                f"--mix expects 4 comma-separated ratios, got {options['mix']!r}"
            ) from None
    return make(spec_type(**given), seed, name=name)


#: Most instances in one set.
MAX_INSTANCES = 100_000
#: Most size units (see :meth:`Grid.size`) in one instance.
MAX_INSTANCE_SIZE = 1_000_000
#: Most size units in a whole set.
MAX_SET_SIZE = 20_000_000
#: Longest instance name (file names are limited to 255 bytes).
MAX_NAME = 200

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9-]{0,63}")
_NAME_PART = re.compile(r"[A-Za-z0-9._+-]*")


def _spec_value(value: Any) -> Any:
    return tuple(_spec_value(v) for v in value) if isinstance(value, list) else value


def _conforms(value: Any, hint: Any) -> bool:
    """Whether a JSON value fits a spec field's annotation (lists stand for tuples)."""
    origin, args = get_origin(hint), get_args(hint)
    if hint is type(None):
        return value is None
    if origin in (Union, types.UnionType):
        return any(_conforms(value, a) for a in args)
    if hint is bool:
        return isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if hint is float:  # a number a float can hold (an int beyond float range is not)
        return is_bounded(value, sys.float_info.max)
    if hint is str:
        return isinstance(value, str)
    if origin is tuple:
        if not isinstance(value, list | tuple):
            return False
        if len(args) == 2 and args[1] is Ellipsis:
            return all(_conforms(v, args[0]) for v in value)
        return len(value) == len(args) and all(
            _conforms(v, a) for v, a in zip(value, args, strict=True)
        )
    return True  # an annotation this check does not know: the spec validates it


def _describe(hint: Any) -> str:
    origin, args = get_origin(hint), get_args(hint)
    if hint is type(None):
        return "null"
    if origin in (Union, types.UnionType):
        return " or ".join(_describe(a) for a in args)
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            return f"a list of ({_describe(args[0])})"
        return f"a list of {len(args)} ({', '.join(_describe(a) for a in args)})"
    return {
        bool: "true or false",
        int: "an integer",
        float: "a finite number",
        str: "a string",
    }.get(hint, str(hint))


def _text(value: Any) -> str:
    return "-".join(map(_text, value)) if isinstance(value, list) else str(value)


@dataclass(frozen=True)
class Grid:
    """A validated grid: base generator parameters, varied parameters, instance seeds.

    Construction refuses (:class:`InputError` naming the grid key and value) a bad name, an
    unknown family or parameter, a value of the wrong type, an empty or repeating ``vary``
    list or ``seeds``, a cell its family's spec rejects, a varied value that cannot be part
    of a file name, and a grid over the size caps (see the module's guarantees).
    """

    name: str
    generator: Mapping[str, Any]
    vary: Mapping[str, list[Any]]
    seeds: tuple[int, ...]
    family: str = "exact"

    def __post_init__(self) -> None:
        if not isinstance(self.family, str) or self.family not in FAMILIES:
            raise InputError(
                f"grid: family must be one of {sorted(FAMILIES)}, got {self.family!r}"
            )
        if not isinstance(self.name, str) or not _NAME.fullmatch(self.name):
            raise InputError(
                "grid name must be 1 to 64 ASCII letters, digits and '-' "
                f"(starting with a letter or digit), got {self.name!r}"
            )
        spec_cls = FAMILIES[self.family][0]
        spec_fields = {f.name for f in fields(spec_cls)}
        hints = get_type_hints(spec_cls)
        for key in [*self.generator, *self.vary]:
            if key not in spec_fields:
                raise InputError(f"grid: unknown generator parameter {key!r}")
        for key, value in self.generator.items():
            if not _conforms(value, hints[key]):
                raise InputError(
                    f"grid: generator[{key!r}] must be {_describe(hints[key])}, got {value!r}"
                )
        for key, values in self.vary.items():
            if not isinstance(values, list) or not values:
                raise InputError(f"grid: vary[{key!r}] must be a non-empty list")
            for value in values:
                if not _conforms(value, hints[key]):
                    raise InputError(
                        f"grid: vary[{key!r}] values must be "
                        f"{_describe(hints[key])}, got {value!r}"
                    )
                if not _NAME_PART.fullmatch(_text(value)):
                    raise InputError(
                        f"grid: vary[{key!r}] value {value!r} cannot be part of "
                        "a file name (letters, digits, '.', '_', '+', '-')"
                    )
            twice = [t for t, n in Counter(_text(v) for v in values).items() if n > 1]
            if twice:
                raise InputError(f"grid: vary[{key!r}] lists {twice[0]!r} twice")
        if not isinstance(self.seeds, tuple) or not self.seeds:
            raise InputError(
                f"grid: seeds must be a non-empty list of integers in [0, "
                f"{MAX_SEED}], got {self.seeds!r}"
            )
        for seed in self.seeds:
            check_seed(seed, "grid: seeds")
        twice_seeds = [s for s, n in Counter(self.seeds).items() if n > 1]
        if twice_seeds:
            raise InputError(f"grid: seeds lists {twice_seeds[0]} twice")
        n_cells = math.prod(len(v) for v in self.vary.values())
        if n_cells * len(self.seeds) > MAX_INSTANCES:
            raise InputError(
                f"grid: {n_cells} cells × {len(self.seeds)} seeds = "
                f"{n_cells * len(self.seeds)} instances, over the cap of "
                f"{MAX_INSTANCES} per set"
            )
        total = 0.0
        for cell in self.cells():
            spec = self.spec(cell)  # validates every combination up front
            size, tasks = self._size(spec), self._tasks(spec)
            where = f"cell {cell}" if cell else "the generator"
            if size > MAX_INSTANCE_SIZE:
                raise InputError(
                    f"grid: {where} makes instances of about {size:.3g} jobs + "
                    f"GPUs, over the cap of {MAX_INSTANCE_SIZE} per instance"
                )
            if tasks > MAX_TASKS:
                raise InputError(
                    f"grid: {where} makes instances of up to {tasks:.3g} tasks, "
                    f"over the cap of {MAX_TASKS:,} per instance"
                )
            total += size * len(self.seeds)
        if total > MAX_SET_SIZE:
            raise InputError(
                f"grid: the set would hold about {total:.3g} jobs + GPUs in "
                f"{n_cells * len(self.seeds)} instances, over the cap of "
                f"{MAX_SET_SIZE} per set"
            )
        names = [self.instance_name(cell, seed) for cell in self.cells() for seed in self.seeds]
        longest = max(names, key=len)
        if len(longest) > MAX_NAME:
            raise InputError(
                f"grid: instance name {longest[:40]}... is {len(longest)} "
                f"characters long (at most {MAX_NAME}): shorten the name or the "
                "varied values"
            )
        same = [n for n, k in Counter(names).items() if k > 1]
        if same:
            raise InputError(f"grid: two cells give the same instance name {same[0]!r}")

    def cells(self) -> list[dict[str, Any]]:
        """Every combination of the varied parameters, in file order."""
        keys = list(self.vary)
        return [
            dict(zip(keys, combo, strict=True))
            for combo in itertools.product(*(self.vary[k] for k in keys))
        ]

    def spec(self, cell: Mapping[str, Any]) -> Any:
        """The family's spec of one cell (InputError if the spec rejects it)."""
        values = {k: _spec_value(v) for k, v in {**self.generator, **cell}.items()}
        try:
            return FAMILIES[self.family][0](**values)
        except InputError as exc:
            where = f" (cell {dict(cell)})" if cell else ""
            raise InputError(f"grid{where}: {exc}") from None
        except (TypeError, ValueError, OverflowError) as exc:
            raise InputError(f"grid: {exc}") from None

    def _size(self, spec: Any) -> float:
        """Estimated size units of one instance of ``spec``: jobs (times GPU types for the
        exact family, times containers for placement) + GPUs (+ past runs for liquid)."""

        def n_jobs() -> float:
            per_host = getattr(spec, "jobs_per_host", None)
            return float(spec.jobs) if per_host is None else max(1.0, per_host * spec.hosts)

        if self.family == "exact":
            return float(float(spec.jobs) * (1 + spec.gpu_types) + spec.gpus)
        if self.family == "hare":
            return float(float(spec.jobs) + spec.gpus)
        gpus = float(spec.hosts) * spec.gpus_per_host
        if self.family == "placement":
            return float(n_jobs() * (1 + spec.workers[1]) + gpus)
        return float(n_jobs() + gpus + spec.predict_from)

    def _tasks(self, spec: Any) -> float:
        """An upper estimate of the tasks (Σ rounds × tasks per round) of one instance of
        ``spec`` (0 for families whose jobs are single rounds)."""
        if self.family == "exact":
            return float(float(spec.jobs) * spec.rounds[1] * min(spec.tasks[1], spec.gpus))
        if self.family == "hare":
            total = (
                spec.total_tasks if spec.tasks_per_job is None else spec.tasks_per_job * spec.jobs
            )
            # Σ_j u_j k_j · total / Σ_i u_i k_i = total; rounding adds at most k_j per job
            return float(float(total) + spec.jobs * max(spec.tasks_per_round))
        return 0.0

    def size(self) -> float:
        """Estimated size units of the whole set (see :meth:`_size`)."""
        return sum(self._size(self.spec(cell)) for cell in self.cells()) * len(self.seeds)

    def instance_name(self, cell: Mapping[str, Any], seed: int) -> str:
        """``NAME-KEYvalue-...-sSEED``: a plain file name (the values were checked)."""
        parts = [f"{k}{_text(v)}" for k, v in cell.items()]
        return "-".join([self.name, *parts, f"s{seed}"])

    def to_dict(self) -> dict[str, Any]:
        out = {
            "format": GRID_FORMAT,
            "name": self.name,
            "generator": dict(self.generator),
            "vary": dict(self.vary),
            "seeds": list(self.seeds),
        }
        if self.family != "exact":
            out["family"] = self.family
        return out


def load_grid(path: str | Path) -> Grid:
    """Read and validate a grid file (every error an :class:`InputError` naming ``path``)."""
    data = read_json(path)
    if not isinstance(data, dict) or data.get("format") != GRID_FORMAT:
        raise InputError(f"{path}: not an {GRID_FORMAT} file")
    unknown = sorted(set(data) - {"format", "name", "family", "generator", "vary", "seeds"})
    if unknown:
        raise InputError(f"{path}: unknown key {unknown[0]!r}")
    for key, kind in (("generator", dict), ("vary", dict), ("seeds", list)):
        if key in data and not isinstance(data[key], kind):
            raise InputError(
                f"{path}: {key!r} must be {'an object' if kind is dict else 'a list'}"
            )
    try:
        return Grid(
            data.get("name", ""),
            dict(data.get("generator", {})),
            dict(data.get("vary", {})),
            tuple(data.get("seeds", ())),
            data.get("family", "exact"),
        )
    except InputError as exc:
        raise InputError(f"{path}: {exc}") from None


def _check_out(out: Path) -> None:
    """Refuse an output folder that is a file, holds a set, or holds other files."""
    if out.exists() or out.is_symlink():
        if not out.is_dir():
            raise InputError(f"--out {str(out)!r} exists and is not a folder")
        if (out / "manifest.json").exists():
            raise InputError(
                f"{out / 'manifest.json'} exists: an instance set is never "
                "regenerated in place; choose another folder"
            )
        if any(out.iterdir()):
            raise InputError(
                f"--out {str(out)!r} is a folder with other files: an instance "
                "set goes into a new or empty folder"
            )


def generate_set(grid: Grid, out: str | Path) -> Manifest:
    """Write the instances of ``grid`` into ``out`` with ``grid.json`` and ``manifest.json``.

    ``out`` must not exist or be an empty folder (missing parent folders are created). The
    set is written into a temporary folder beside ``out`` and renamed into place at the end,
    so a failure leaves nothing behind (folders created for it are removed again). Refuses to
    overwrite an existing manifest: an instance set, once run, is immutable.
    """
    if str(out) == "":
        raise InputError("--out: empty path")
    out = Path(out)
    _check_out(out)
    created = []  # parent folders this call creates, removed again on failure
    for folder in reversed(out.absolute().parents):
        if not folder.exists():
            try:
                folder.mkdir()
            except OSError as exc:
                raise InputError(
                    f"--out {str(out)!r}: cannot create {folder}: {exc.strerror or exc}"
                ) from None
            created.append(folder)
    tmp = None
    try:
        try:
            tmp = Path(
                tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".tmp", dir=out.absolute().parent)
            )
        except OSError as exc:
            raise InputError(
                f"--out {str(out)!r}: cannot write beside it: {exc.strerror or exc}"
            ) from None
        write_json(tmp / "grid.json", grid.to_dict())
        entries = {}
        for cell in grid.cells():
            spec = grid.spec(cell)
            for seed in grid.seeds:
                name = grid.instance_name(cell, seed)
                instance = FAMILIES[grid.family][1](spec, seed, name=name)
                write_json(
                    tmp / f"{name}.json",
                    placement_instance_to_dict(instance)
                    if isinstance(instance, PlacementInstance)
                    else instance_to_dict(instance),
                )
                entries[name] = {"file": f"{name}.json", "cell": cell, "seed": seed}
        manifest = Manifest.new(tmp / "manifest.json", grid.name, entries)
        manifest.save()
        mask = os.umask(0)
        os.umask(mask)
        os.chmod(tmp, (out.stat().st_mode & 0o7777) if out.is_dir() else 0o777 & ~mask)
        try:
            os.rename(tmp, out)  # replaces an empty folder atomically (POSIX)
        except OSError as exc:
            raise InputError(
                f"--out {str(out)!r}: cannot move the set into place: {exc.strerror or exc}"
            ) from None
        tmp = None
        manifest.path = out / "manifest.json"
        return manifest
    except BaseException:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
        for folder in reversed(created):
            try:
                folder.rmdir()
            except OSError:
                break
        raise
