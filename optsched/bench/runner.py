"""The resumable benchmark runner: methods × instances × modes × seeds.

Each run solves one instance with one method through :func:`optsched.solve`, or simulates an
online policy (a ``simulate`` method) through :func:`optsched.online.run.simulate` — either
way every schedule is checked — and yields one record, appended to a JSON-lines file as soon
as it ends. Runs execute in local processes by default, or on a Dask distributed cluster given
its scheduler address (the ``dask`` extra); the records are the same either way, up to the
timing fields.

Guarantees:

- **Checked before anything runs.** :func:`plan` refuses unknown methods, modes and
  parameters, a time limit that is not a finite number > 0, bad or repeated method seeds,
  repeated methods or modes, and instance files that do not parse.
- **Resumable, never duplicated.** A restarted runner skips every run whose key is already
  recorded, so killing it loses only the runs in flight. One runner at a time holds a
  records file (:class:`~optsched.bench.records.RecordWriter` locks it); a second one is
  refused at once.
- **Errors are records.** A method that raises — anything, ``SystemExit`` included — or
  returns what cannot be written as JSON is recorded with status ``error`` and the runner
  goes on. Runs execute in worker processes (even with one worker), so a method that kills
  its process (``os._exit``, a crash, the OOM killer) cannot take the runner down: the runs
  in flight are retried one by one, alone, and one whose worker dies again is recorded as an
  error.
- **Reproducible budgets by default.** With ``budget="work"`` (the default), every anytime
  method that has a ``work`` option (:mod:`optsched.work`) runs on a deterministic budget of
  as many work-seconds as its time limit (the given one, else the method's default), under a
  wall-clock safety net of :data:`WORK_WALL_FACTOR` times that: its result is then the same
  on any machine and under any load (one solver thread). ``budget="wall"`` keeps the time
  limit as a wall-clock limit, as ``optsched solve`` does. Every record holds the run's CPU
  seconds (``cpu_s``: the worker process's, solver threads included; the thread's on a Dask
  worker, which may run several runs at once) beside its wall seconds (``runtime_s``).
- **Time limits are enforced.** A run given a time limit T whose method ignores it is
  stopped after T + max(10 s, 0.5 T) (:func:`kill_after`): its worker is killed and the run
  recorded as an error ("exceeded its time limit"); the other runs then in flight are retried
  as for a worker that died. (Not with ``inline=True`` nor on Dask.)
- **Clean stop.** SIGINT (Ctrl-C) and SIGTERM stop the runner: every run already finished is
  recorded (exactly once), the runs in flight are abandoned (their workers killed), and
  :func:`run_benchmark` raises :class:`RunInterrupted` carrying the summary (the CLI exits
  130 for SIGINT, 143 for SIGTERM). Workers ignore SIGINT — the runner stops them — so a
  solver's own Ctrl-C handling (CP-SAT's) never sees it. (Only with ``inline=True``, for
  debugging, do runs execute in the runner's own process; both signals are then held back
  while a run executes, so the stop takes effect when the run in progress ends.)
- **Workers die with the runner.** A local worker process asks the kernel to kill it when
  the runner dies (Linux ``PR_SET_PDEATHSIG``; elsewhere a thread watching its parent), and
  lets go of its inherited copy of the records file, so SIGKILL of the runner leaves no
  worker behind and no lock held. (Solver subprocesses that a worker starts, CBC's, end on
  their own time limit.)
"""

from __future__ import annotations

import contextlib
import ctypes
import fnmatch
import multiprocessing
import os
import signal
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from types import FrameType
from typing import Any, TextIO

from optsched.bench.manifest import Manifest
from optsched.bench.plugins import PluginCode, capture, install
from optsched.bench.records import (
    RECORD_FORMAT,
    RecordWriter,
    check_record,
    check_records_path,
    load_records,
    machine,
    run_key,
    versions,
)
from optsched.budget import check_time_limit
from optsched.errors import InputError, UnknownNameError
from optsched.io import instance_from_dict
from optsched.jsonfile import read_json
from optsched.limits import check_seed
from optsched.online.run import simulate
from optsched.output import json_text
from optsched.placement.model import INSTANCE_FORMAT as PLACEMENT_INSTANCE_FORMAT
from optsched.placement.model import placement_instance_from_dict
from optsched.placement.run import place
from optsched.registry import MethodInfo, get_method
from optsched.result import PLACEMENT_MODE, Kind, Result
from optsched.solve import solve
from optsched.work import takes_work_budget

#: Signals that stop the runner cleanly.
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
_PR_SET_PDEATHSIG = 1
_POLL_S = 0.2
#: A run given a time limit T is killed (its worker process) after T + max(GRACE_MIN_S,
#: GRACE_FACTOR × T) seconds, and recorded as an error.
GRACE_MIN_S = 10.0
GRACE_FACTOR = 0.5


#: How budgets are set (see the module doc): deterministic work, or wall-clock time.
BUDGETS = ("work", "wall")
#: With a work budget of W work-seconds, the run's wall-clock limit is this many times W: a
#: safety net that a run on a machine this much slower (or loaded) than the reference reaches.
WORK_WALL_FACTOR = 4.0


def kill_after(run: Run) -> float | None:
    """Seconds after which a run's worker is killed: its time limit plus the grace period
    (None without a time limit: never)."""
    if run.time_limit is None:
        return None
    return run.time_limit + max(GRACE_MIN_S, GRACE_FACTOR * run.time_limit)


def _overdue(run: Run, started: float, now: float) -> bool:
    limit = kill_after(run)
    return limit is not None and now - started > limit


def _timeout_record(run: Run, elapsed: float) -> dict[str, Any]:
    return error_record(
        run,
        f"exceeded its time limit ({run.time_limit:g} s; killed after {elapsed:.1f} s)",
        elapsed,
    )


@dataclass(frozen=True)
class Run:
    """One run: everything a worker needs, the instance included (no shared filesystem)."""

    instance: str
    instance_data: Mapping[str, Any] = field(repr=False)
    cell: Mapping[str, Any]
    instance_seed: int | None
    method: str
    mode: str
    seed: int
    params: Mapping[str, str]
    time_limit: float | None
    plugins: tuple[PluginCode, ...] = ()
    #: The method's kind: which verb runs it.
    kind: Kind = "solve"
    #: The hash of the plug-in that defines the method (None: a built-in method).
    code: str | None = None

    @property
    def key(self) -> str:
        return run_key(
            self.instance,
            self.method,
            self.mode,
            self.seed,
            self.params,
            self.time_limit,
            self.code,
        )


def _once(values: Sequence[Any], option: str) -> None:
    seen = set()
    for value in values:
        if value in seen:
            raise InputError(f"{option} lists {value!r} twice")
        seen.add(value)


#: Protocols of Dask scheduler addresses with a host and a port.
_SCHEDULER_PROTOCOLS = ("tcp", "tls", "ucx", "ws", "wss")


def check_scheduler(address: str | None) -> None:
    """Refuse a Dask scheduler address that is not ``[PROTOCOL://]HOST:PORT`` (PROTOCOL one
    of tcp, tls, ucx, ws, wss; PORT in 1..65535) or ``inproc://…`` (``--scheduler``)."""
    if address is None:
        return
    where = f"--scheduler {address!r}"
    if not isinstance(address, str) or not address.strip():
        raise InputError("--scheduler: empty address")
    protocol, sep, rest = address.partition("://")
    if not sep:
        protocol, rest = "tcp", address
    if protocol == "inproc":
        if not rest:
            raise InputError(f"{where}: inproc:// needs an address")
        return
    if protocol not in _SCHEDULER_PROTOCOLS:
        raise InputError(
            f"{where}: unknown protocol {protocol!r} (expected "
            f"{', '.join(_SCHEDULER_PROTOCOLS)} or inproc)"
        )
    host, colon, port = rest.rpartition(":")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    if (
        not colon
        or not host
        or any(c.isspace() or c in "/@?#[]" for c in host)
        or not port.isdigit()
        or not 1 <= int(port) <= 65535
    ):
        raise InputError(f"{where}: not a scheduler address HOST:PORT (e.g. tcp://host:8786)")


def check_workers(workers: Any) -> None:
    """Refuse a worker count that is not an integer >= 1 (``--workers``)."""
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise InputError(f"--workers must be an integer >= 1, got {workers!r}")


def plan(
    manifest: Manifest,
    methods: Sequence[str],
    *,
    modes: Sequence[str] | None = None,
    seeds: Sequence[int] = (0,),
    params: Mapping[str, str] | None = None,
    time_limit: float | None = None,
    plugins: Sequence[str] = (),
    only: str | None = None,
    budget: str = "work",
) -> list[Run]:
    """Every run of ``methods`` × the manifest's instances × ``modes`` × ``seeds``.

    ``budget`` ``work`` (default) gives each anytime method (one with a ``work`` option) a
    deterministic budget of ``time_limit`` work-seconds (default: the method's default time
    limit), unless ``params`` sets ``work``, and a wall-clock limit of
    :data:`WORK_WALL_FACTOR` times that; ``wall`` keeps ``time_limit`` a wall-clock limit.

    ``modes`` None runs each instance in its own mode, and an online policy of one mode in
    that mode (as ``simulate`` runs a gang-only policy on a relaxed instance); ``only`` (a
    shell pattern such as ``hare-*``) keeps the instances whose names match. Refused here,
    before anything runs (:class:`InputError` naming the option and the value): unknown
    methods, modes a method does not support (given, or an instance's own, but for such a
    policy), an instance that cannot run in a mode it is to run in, unknown parameters, a
    time limit that is not a finite number > 0, seeds outside [0, MAX_SEED], a method, mode
    or seed given twice, modes for a placement set, an instance file that is missing or does
    not parse, a parameter value the method's options refuse
    (:meth:`~optsched.registry.MethodInfo.parse_options`; checks against an instance, such
    as a ``time_unit`` coarser than its tasks, happen when the run starts and are
    recorded), an ``only`` that matches no instance.
    """
    if not methods:
        raise InputError("bench run needs at least one method")
    if budget not in BUDGETS:
        raise InputError(f"--budget must be one of {', '.join(BUDGETS)}, got {budget!r}")
    check_time_limit(time_limit)
    if not seeds:
        raise InputError("--seeds needs at least one seed")
    for seed in seeds:
        check_seed(seed, "--seeds")
    _once(methods, "--method")
    _once(seeds, "--seeds")
    _once(modes or (), "--mode")
    # loaded here, and sent to the workers (each module once)
    codes = tuple({code.name: code for code in map(capture, plugins)}.values())
    params = dict(params or {})
    chosen = {
        name: entry
        for name, entry in manifest.instances.items()
        if only is None or fnmatch.fnmatchcase(name, only)
    }
    if not chosen:
        raise InputError(f"--only {only!r} matches no instance of {manifest.path.parent}")
    instances = {}
    parsed: dict[str, Any] = {}  # each file's instance (or placement instance), read once
    for name, entry in chosen.items():
        path = manifest.path.parent / entry["file"]
        data = read_json(path)
        if not isinstance(data, dict):
            raise InputError(f"{path}: not an instance object")
        try:
            if data.get("format") == PLACEMENT_INSTANCE_FORMAT:
                parsed[name] = placement_instance_from_dict(data)
            else:
                parsed[name] = instance_from_dict(data)
        except InputError as exc:
            raise InputError(f"{path}: {exc}") from None
        if "name" in data and data["name"] != name:
            raise InputError(
                f"{manifest.path}: instance {name!r}: its file {entry['file']!r} "
                f"holds instance {data['name']!r}, not {name!r}"
            )
        instances[name] = data
    # a set holds placement instances (place methods) or scheduling instances (the others)
    placement = any(data.get("format") == PLACEMENT_INSTANCE_FORMAT for data in instances.values())
    if placement and modes:
        raise InputError("--mode: a placement set has no execution mode")
    own_modes = {data.get("mode", "relaxed") for data in instances.values()}
    canonical = {}  # per method: the options as a Result records them (one key per setting)
    kinds: dict[str, Kind] = {}
    limits: dict[str, float | None] = {}  # per method: the runs' wall-clock limit
    own = {}  # per method: the hash of the plug-in that defines it
    run_modes: dict[str, dict[str, str]] = {}
    for method in methods:
        info = _method(method, placement)
        kinds[method] = info.kind
        own[method] = next((c.sha256 for c in codes if c.name == info.plugin), None)
        given: dict[str, Any] = dict(params)
        budgeted = budget == "work" and takes_work_budget(info.options)
        work = time_limit if time_limit is not None else info.default_time_limit
        if budgeted and work is not None:
            given.setdefault("work", work)
        options = info.parse_options(given)
        work = getattr(options, "work", None) if budgeted else None
        limits[method] = time_limit if work is None else WORK_WALL_FACTOR * float(work)
        canonical[method] = options.to_params(list(given))
        # per mode the set asks for: the mode the method's runs take in it
        run_modes[method] = (
            {PLACEMENT_MODE: PLACEMENT_MODE}
            if placement
            else {m: _run_mode(info, m, modes is None) for m in modes or sorted(own_modes)}
        )
    if not placement:  # an instance a run takes to another mode must hold there too
        for name, entry in chosen.items():
            data = instances[name]
            own_mode = data.get("mode", "relaxed")
            wanted = {run_modes[m][mode] for m in methods for mode in modes or [own_mode]}
            for mode in sorted(wanted - {own_mode}):
                try:
                    parsed[name].with_mode(mode)
                except InputError as exc:
                    path = manifest.path.parent / entry["file"]
                    raise InputError(f"{path}: in {mode} mode: {exc}") from None
    runs: list[Run] = []
    for name, entry in chosen.items():
        data = instances[name]
        for mode in [PLACEMENT_MODE] if placement else modes or [data.get("mode", "relaxed")]:
            for method in methods:
                runs.extend(
                    Run(
                        name,
                        data,
                        entry.get("cell", {}),
                        entry.get("seed"),
                        method,
                        run_modes[method][mode],
                        seed,
                        canonical[method],
                        limits[method],
                        codes,
                        kinds[method],
                        own[method],
                    )
                    for seed in seeds
                )
    return runs


def _run_mode(info: MethodInfo[Any], mode: str, own: bool) -> str:
    """The mode ``info``'s runs take where the set asks for ``mode``: ``mode``, or, where
    the mode is the instance's ``own`` (no ``--mode``), an online policy's only mode (as
    ``simulate`` runs it); refuses (as :meth:`~optsched.registry.MethodInfo.check_mode`) a
    mode the method does not support otherwise."""
    if own and info.kind == "simulate" and mode not in info.modes and len(info.modes) == 1:
        return next(iter(info.modes))
    info.check_mode(mode)
    return mode


def _method(name: str, placement: bool = False) -> MethodInfo[Any]:
    """The ``place`` method ``name`` for placement instances; otherwise the ``solve``
    method, else the ``simulate`` method (online policy) ``name``."""
    kinds: tuple[Kind, ...] = ("place",) if placement else ("solve", "simulate")
    for kind in kinds:
        try:
            return get_method(name, kind)
        except UnknownNameError:
            continue
    what = "placement" if placement else "scheduling"
    raise UnknownNameError(
        f"unknown {what} method {name!r} (see optsched methods; a method of your own: load "
        "its file or module with --plugin)"
    )


def _error_text(exc: BaseException) -> str:
    text = str(exc).splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _base_record(run: Run) -> dict[str, Any]:
    return {
        "format": RECORD_FORMAT,
        "key": run.key,
        "instance": run.instance,
        "cell": dict(run.cell),
        "instance_seed": run.instance_seed,
        "method": run.method,
        "mode": run.mode,
        "seed": run.seed,
        "params": dict(run.params),
        "time_limit": run.time_limit,
        "plugins": [{"name": c.name, "sha256": c.sha256} for c in run.plugins],
    }


def _finish(record: dict[str, Any]) -> dict[str, Any]:
    record.update(
        versions=versions(),
        machine=machine(),
        finished_at=datetime.now(UTC).isoformat(timespec="seconds"),
    )
    return record


def error_record(run: Run, message: str, runtime_s: float = 0.0) -> dict[str, Any]:
    """The record of a run that failed with ``message`` (status ``error``)."""
    record = _base_record(run)
    record.update(
        status="error",
        objective=None,
        bound=None,
        gap=None,
        runtime_s=runtime_s,
        metrics=None,
        extra={},
        error=message,
    )
    return _finish(record)


def _cpu_clock() -> Callable[[], float]:
    """The clock of a run's CPU seconds: the process's where the run has its process to
    itself (a local worker, inline), the thread's elsewhere (a Dask worker's thread, beside
    other runs; solver threads it starts are then not counted)."""
    if threading.current_thread() is threading.main_thread():
        return time.process_time
    return time.thread_time


def execute(run: Run) -> dict[str, Any]:
    """Solve one run and return its record; a failure is recorded as status ``error``.

    Anything the method raises is caught — ``SystemExit`` and other ``BaseException``
    subclasses included, except ``KeyboardInterrupt`` — and so is a result that cannot be
    written as JSON (NaN, Infinity, objects): the record is always valid.
    """
    record = _base_record(run)
    started = time.perf_counter()
    cpu = _cpu_clock()
    try:
        for code in run.plugins:
            install(code)
        # the one-off import of the method's solver packages is not the run's CPU time, as
        # it is not its runtime_s (extra.startup_s)
        startup = _method(run.method, run.kind == "place").start_up()
        cpu_started = cpu()
        result: Result[Any]
        if run.kind == "place":
            result = place(
                placement_instance_from_dict(run.instance_data),
                run.method,
                seed=run.seed,
                time_limit=run.time_limit,
                params=run.params,
            )
        elif run.kind == "simulate":  # online policy: one simulation
            result = simulate(
                instance_from_dict(run.instance_data).with_mode(run.mode),
                run.method,
                params=run.params,
                seed=run.seed,
            )
        else:
            result = solve(
                instance_from_dict(run.instance_data),
                run.method,
                mode=run.mode,
                time_limit=run.time_limit,
                seed=run.seed,
                params=run.params,
            )
        metrics = None
        if result.metrics is not None:
            metrics = {k: v for k, v in result.metrics.items() if k != "utilisation"}
            if "utilisation" in result.metrics:
                util = list(result.metrics["utilisation"].values())
                metrics["mean_utilisation"] = sum(util) / len(util)
        record.update(
            status=str(result.status),
            objective=result.objective,
            bound=result.bound,
            gap=result.gap,
            runtime_s=result.runtime_s,
            cpu_s=cpu() - cpu_started,
            metrics=metrics,
            extra=dict(result.extra),
            error=None,
        )
        if startup > record["extra"].get("startup_s", 0.0):
            record["extra"]["startup_s"] = startup
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # recorded, so the run is not retried blindly
        return error_record(run, _error_text(exc), time.perf_counter() - started)
    try:
        json_text(record, indent=None)  # NaN/Infinity: ValueError; objects: TypeError
    except (TypeError, ValueError) as exc:
        return error_record(
            run,
            f"the result cannot be written as JSON: {_error_text(exc)}",
            time.perf_counter() - started,
        )
    try:
        check_record(record, "the result")  # a status, objective or bound out of range
    except InputError as exc:
        return error_record(run, str(exc), time.perf_counter() - started)
    return _finish(record)


# -- stopping --------------------------------------------------------------------------------


class RunInterrupted(KeyboardInterrupt):
    """The runner stopped on SIGINT or SIGTERM after recording every finished run.

    ``summary`` says what this invocation did; ``signum`` is the signal; ``exit_code`` the
    conventional shell status (128 + signal: 130 for SIGINT, 143 for SIGTERM).
    """

    def __init__(self, summary: Summary, signum: int) -> None:
        super().__init__(f"interrupted by {signal.Signals(signum).name}")
        self.summary = summary
        self.signum = signum

    @property
    def signal_name(self) -> str:
        return signal.Signals(self.signum).name

    @property
    def exit_code(self) -> int:
        return 128 + self.signum


class _StopFlag:
    """While entered (main thread only), SIGINT and SIGTERM set ``signum`` instead of
    raising, so a stop can never tear a record or a lock; the previous handlers come back
    on exit."""

    def __init__(self) -> None:
        self.signum: int | None = None
        self._saved: dict[int, Any] = {}

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if self.signum is None:
            self.signum = signum

    def __enter__(self) -> _StopFlag:
        if threading.current_thread() is threading.main_thread():
            for sig in STOP_SIGNALS:
                self._saved[sig] = signal.signal(sig, self._handle)
        return self

    def __exit__(self, *exc: object) -> None:
        for sig, old in self._saved.items():
            signal.signal(sig, signal.SIG_DFL if old is None else old)


@contextlib.contextmanager
def _signals_held() -> Iterator[None]:
    """Hold SIGINT and SIGTERM back (pending, not lost) in this thread; a held signal is
    delivered when the block ends."""
    if not hasattr(signal, "pthread_sigmask"):  # pragma: no cover - not POSIX
        yield
        return
    old = signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


# -- local workers ---------------------------------------------------------------------------


def _die_with_parent() -> bool:
    """Ask the kernel to SIGKILL this process when its parent dies (Linux)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return bool(libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0) == 0)
    except (OSError, AttributeError):
        return False


def _watch_parent(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(0.5)
    os.kill(os.getpid(), signal.SIGKILL)


def _worker_init(parent: int, inherited: tuple[tuple[int, int, int], ...]) -> None:
    """Set up a worker process: immune to SIGINT (the runner stops it), default SIGTERM,
    dies with the runner, and lets go of the records file it inherited."""
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    for fd, dev, ino in inherited:  # same file as the runner's: point the copy at devnull
        with contextlib.suppress(OSError):
            st = os.fstat(fd)
            if (st.st_dev, st.st_ino) == (dev, ino):
                null = os.open(os.devnull, os.O_RDWR)
                os.dup2(null, fd)
                os.close(null)
    if not _die_with_parent():
        threading.Thread(target=_watch_parent, args=(parent,), daemon=True).start()
    if os.getppid() != parent:  # the runner died before the request took effect
        os._exit(1)


class _Pool:
    """A process pool of ``workers`` set up by :func:`_worker_init`, that can be killed."""

    def __init__(self, workers: int, inherited: tuple[tuple[int, int, int], ...]) -> None:
        fork = "fork" in multiprocessing.get_all_start_methods()
        context = multiprocessing.get_context("fork" if fork else None)
        self.executor = ProcessPoolExecutor(
            max_workers=workers,
            mp_context=context,
            initializer=_worker_init,
            initargs=(os.getpid(), inherited if fork else ()),
        )

    def submit(self, run: Run) -> Future[dict[str, Any]]:
        return self.executor.submit(execute, run)

    def close(self, kill: bool) -> None:
        """Shut down; with ``kill``, SIGKILL the workers first (their runs are abandoned)."""
        if kill:
            for proc in list((self.executor._processes or {}).values()):
                with contextlib.suppress(Exception):
                    proc.kill()
        self.executor.shutdown(wait=True, cancel_futures=True)


def _died(codes: Sequence[int | None]) -> str:
    for code in codes:
        if code is not None and code < 0:
            try:
                name = signal.Signals(-code).name
                return f"killed by {name}" + (", e.g. out of memory" if name == "SIGKILL" else "")
            except ValueError:
                return f"killed by signal {-code}"
        if code:
            return f"exit code {code}"
    return "cause unknown"


def _isolated(
    run: Run, stop: _StopFlag, inherited: tuple[tuple[int, int, int], ...]
) -> Iterator[tuple[Run, dict[str, Any]]]:
    """Run ``run`` alone in a fresh worker; a worker that dies again makes an error record."""
    pool = _Pool(1, inherited)
    closed = False
    try:
        future = pool.submit(run)
        started = time.monotonic()
        procs = list((pool.executor._processes or {}).values())
        while not stop.signum and not future.done():
            wait([future], timeout=_POLL_S)
            if not future.done() and _overdue(run, started, time.monotonic()):
                pool.close(kill=True)
                closed = True
                yield run, _timeout_record(run, time.monotonic() - started)
                return
        if not future.done():
            return  # stopped: the run is abandoned (the worker killed below)
        try:
            record = future.result()
        except BrokenProcessPool:
            pool.close(kill=False)  # reaps the dead worker, so its exit code is known
            closed = True
            record = error_record(
                run,
                f"the worker process died while running it ({_died([p.exitcode for p in procs])})",
            )
        except Exception as exc:
            record = error_record(run, f"worker failure: {_error_text(exc)}")
        if not closed:
            pool.close(kill=False)
            closed = True
        yield run, record
    finally:
        if not closed:
            pool.close(kill=True)


def _local(
    runs: Sequence[Run], workers: int, stop: _StopFlag, inherited: tuple[tuple[int, int, int], ...]
) -> Iterator[tuple[Run, dict[str, Any]]]:
    """Runs in ``workers`` worker processes, at most one queued per worker (so a stop
    abandons only the runs in flight). When a worker dies, the runs then in flight are
    retried one by one alone (:func:`_isolated`) before the pool starts afresh. A run that
    outlives its time limit plus the grace period (:func:`kill_after`) is recorded as an
    error and the pool killed: the other runs then in flight are retried the same way."""
    queue = deque(runs)
    idle_breaks = 0
    while queue and not stop.signum:
        size = min(workers, len(queue))
        pool = _Pool(size, inherited)
        inflight: dict[Future[dict[str, Any]], Run] = {}
        started: dict[Future[dict[str, Any]], float] = {}
        suspects: list[Run] = []
        overdue: list[tuple[Run, float]] = []
        kill, broken = True, False
        try:
            while (queue or inflight) and not stop.signum and not broken:
                while queue and len(inflight) < size:
                    try:
                        future = pool.submit(queue[0])
                    except BrokenProcessPool:  # a worker died since the last wait
                        broken = True
                        break
                    inflight[future] = queue.popleft()
                    started[future] = time.monotonic()
                done, _ = wait(inflight, timeout=_POLL_S, return_when=FIRST_COMPLETED)
                for future in done:
                    run = inflight.pop(future)
                    try:
                        record = future.result()
                    except BrokenProcessPool:
                        suspects.append(run)
                        broken = True
                        continue
                    except Exception as exc:
                        record = error_record(run, f"worker failure: {_error_text(exc)}")
                    yield run, record
                now = time.monotonic()
                for future, run in list(inflight.items()):
                    if not future.done() and _overdue(run, started[future], now):
                        del inflight[future]
                        overdue.append((run, now - started[future]))
                        broken = True  # its worker is killed with the pool below
            # stopping: keep the runs that finished before the stop, abandon the others
            for future, run in list(inflight.items()):
                if future.done() and not future.cancelled() and future.exception() is None:
                    del inflight[future]
                    yield run, future.result()
            kill = bool(inflight) or broken
        finally:
            pool.close(kill=kill)
        for run, elapsed in overdue:
            yield run, _timeout_record(run, elapsed)
        if broken and not stop.signum:
            suspects += inflight.values()  # broken pool: every run in flight is a suspect
            idle_breaks = 0 if suspects or overdue else idle_breaks + 1
            if idle_breaks >= 3:
                raise RuntimeError("worker processes keep dying with no run in flight")
            for run in suspects:
                if stop.signum:
                    break
                yield from _isolated(run, stop, inherited)


def _inline(runs: Sequence[Run], stop: _StopFlag) -> Iterator[tuple[Run, dict[str, Any]]]:
    """Runs in this process, one at a time, with stop signals held back during each."""
    for run in runs:
        if stop.signum:
            return
        with _signals_held():
            record = execute(run)
        yield run, record


def _dask(
    runs: Sequence[Run], scheduler: str, stop: _StopFlag
) -> Iterator[tuple[Run, dict[str, Any]]]:
    try:
        from distributed import Client
        from distributed import as_completed as dask_completed
    except ImportError:
        raise InputError("--scheduler needs Dask: pip install 'optsched[dask]'") from None
    with Client(scheduler) as client:  # type: ignore[no-untyped-call, unused-ignore]
        futures = {
            client.submit(execute, run, key=f"optsched-run-{i}-{run.key}", pure=False): run
            for i, run in enumerate(runs)
        }
        pending = dask_completed(list(futures))  # type: ignore[no-untyped-call, unused-ignore]
        try:
            while not stop.signum and not pending.is_empty():  # type: ignore[no-untyped-call, unused-ignore]
                batch = pending.next_batch(block=False)  # type: ignore[no-untyped-call, unused-ignore]
                if not batch:
                    time.sleep(_POLL_S)
                for future in batch:
                    try:
                        record = future.result()
                    except Exception as exc:
                        record = error_record(
                            futures[future], f"worker failure: {_error_text(exc)}"
                        )
                    yield futures[future], record
        finally:
            client.cancel([f for f in futures if not f.done()])


@dataclass
class Summary:
    """What one invocation of the runner did."""

    planned: int
    skipped: int
    finished: int = 0
    errors: int = 0
    elapsed_s: float = 0.0
    #: Of the runs skipped, those recorded only as errors (``retry_errors`` reruns them).
    skipped_errors: int = 0

    @property
    def errors_note(self) -> str:
        """`` (E of them as errors: ...)`` when runs skipped were recorded only as errors."""
        if not self.skipped_errors:
            return ""
        return f" ({self.skipped_errors} of them as errors: --retry-errors runs them again)"

    @property
    def remaining(self) -> int:
        """Runs neither recorded before nor finished by this invocation."""
        return self.planned - self.skipped - self.finished


def _progress(
    stream: TextIO, done: int, total: int, record: Mapping[str, Any], elapsed: float
) -> None:
    left = elapsed / done * (total - done)
    obj = record["objective"]
    gap = record["gap"]
    stream.write(
        f"[{done}/{total}] {record['instance']} {record['method']} {record['mode']} "
        f"seed {record['seed']}: {record['status']}"
        f"{'' if obj is None else f' obj {obj:.6g}'}"
        f"{'' if gap is None else f' gap {100 * gap:.2f}%'} ({record['runtime_s']:.2f} s)"
        f" | {elapsed:.0f} s elapsed, ~{left:.0f} s left\n"
    )
    stream.flush()


def run_benchmark(
    runs: Sequence[Run],
    records: str | Path,
    *,
    workers: int = 2,
    scheduler: str | None = None,
    manifest: Manifest | None = None,
    progress: TextIO | None = sys.stderr,
    inline: bool = False,
    retry_errors: bool = False,
) -> Summary:
    """Execute the runs not yet in ``records``, appending a record as each one ends; with
    ``retry_errors``, also those recorded only with status ``error`` (the new record follows
    the old, and :func:`~optsched.bench.report.dedupe` prefers it).

    ``workers`` local worker processes unless ``scheduler`` names a Dask scheduler or
    ``inline`` asks for the runs to execute one by one in this process (for debugging: a
    method that kills its process then kills the runner, and a stop waits for the run in
    progress). ``records`` is refused (InputError) when it is not a file path that can be
    appended to, or is one of the manifest's files. The records file is locked for the whole
    call (a second runner on it gets an
    :class:`InputError` at once). The manifest, when given, is updated and saved after every
    record. SIGINT or SIGTERM (received in the main thread) stops the call cleanly and
    raises :class:`RunInterrupted` (see the module's guarantees).
    """
    check_workers(workers)
    check_scheduler(scheduler)
    check_records_path(records, inputs=manifest.files() if manifest is not None else ())
    keys = [run.key for run in runs]
    if len(set(keys)) != len(keys):
        raise InputError("the plan lists the same run twice")
    with RecordWriter(records) as writer:
        if not writer.locked and progress is not None:
            progress.write(
                f"warning: cannot lock {records}: make sure no other runner writes to it\n"
            )
        existing = load_records(records, repair=True)
        done = {r["key"] for r in existing if not (retry_errors and r["status"] == "error")}
        # in case a run ended after its record was written but before the manifest was saved
        if manifest is not None:
            manifest.fold(existing)
        todo = [run for run in runs if run.key not in done]
        ok = {r["key"] for r in existing if r["status"] != "error"}
        failed = {run.key for run in runs if run.key in done and run.key not in ok}
        summary = Summary(
            planned=len(runs), skipped=len(runs) - len(todo), skipped_errors=len(failed)
        )
        if progress is not None and summary.skipped:
            progress.write(
                f"resuming: {summary.skipped} of {len(runs)} runs already recorded"
                + summary.errors_note
                + "\n"
            )
        if (
            workers > (os.cpu_count() or 1)
            and progress is not None
            and not scheduler
            and len(todo) > 1
        ):
            progress.write(
                f"warning: {workers} workers on {os.cpu_count()} CPUs: runtimes will be inflated\n"
            )
        started = time.perf_counter()
        with _StopFlag() as stop:
            stream: Iterator[tuple[Run, dict[str, Any]]]
            if not todo:
                stream = iter(())
            elif scheduler:
                stream = _dask(todo, scheduler, stop)
            elif inline:
                stream = _inline(todo, stop)
            else:
                stream = _local(todo, workers, stop, (writer.identity(),))
            try:
                for _, record in stream:
                    writer.write(record)
                    summary.finished += 1
                    summary.errors += record["status"] == "error"
                    if manifest is not None:
                        manifest.fold([record])
                    if progress is not None:
                        _progress(
                            progress,
                            summary.finished,
                            len(todo),
                            record,
                            time.perf_counter() - started,
                        )
            finally:
                close = getattr(stream, "close", None)
                if close is not None:
                    close()
            summary.elapsed_s = time.perf_counter() - started
            if stop.signum is not None:
                raise RunInterrupted(summary, stop.signum)
    return summary
