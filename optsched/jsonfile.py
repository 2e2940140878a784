"""Reading input files strictly: text (:func:`read_text`), JSON (:func:`read_json`: duplicate
keys, numbers beyond float range and lone surrogates refused, named by where they are) and a
JSON file through a reader that names the file on any problem (:func:`read_file`). Every
problem is an :class:`~optsched.errors.InputError` naming the file."""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from optsched.errors import InputError

T = TypeVar("T")


def read_text(path: str | Path, what: str = "file") -> str:
    """The UTF-8 text of ``path`` (a byte-order mark dropped): what every reader of input
    files opens them with. An unreadable file, or one that is not UTF-8 (naming the line and
    the byte), is an :class:`InputError` calling it ``what``."""
    try:
        raw = Path(path).read_bytes()
    except OSError as exc:
        raise InputError(f"{path}: cannot read {what}: {exc.strerror or exc}") from None
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise InputError(
            f"{path}:{line}: not UTF-8 (byte 0x{raw[exc.start]:02x} at offset "
            f"{exc.start}); save the {what} as UTF-8"
        ) from None


def read_json(path: str | Path) -> Any:
    """Parse a JSON file; unreadable or malformed files raise :class:`InputError`, and so
    do an integer literal too long for Python (over 4,300 digits) or beyond float range
    (``1e400`` written out: no field can take it) and a string holding a lone surrogate
    escape (``"\\ud800"``: not Unicode text, which no output can write), named by where
    they are (``jobs[0].weight``)."""
    text = read_text(path, "JSON file")
    try:
        data = json.loads(text, object_pairs_hook=_unique_keys)
    except json.JSONDecodeError as exc:
        raise InputError(
            f"{path}: malformed JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
        ) from None
    except _DuplicateKey as exc:
        raise InputError(f"{path}: key {exc.args[0]!r} appears twice in one object") from None
    except RecursionError:
        raise InputError(f"{path}: JSON nested too deeply") from None
    except ValueError:  # int() of an integer literal over sys.get_int_max_str_digits()
        limit = sys.get_int_max_str_digits()
        found = re.search(rf"(?<![\d.])\d{{{limit + 1},}}(?![\d.eE])", text)
        line = text.count("\n", 0, found.start()) + 1 if found else 0
        at = f" at line {line}" if found else ""
        raise InputError(
            f"{path}: an integer literal{at} has more than {limit:,} digits"
        ) from None
    if _SUSPECT.search(text):  # only then can a value be out of range or not text
        _check_values(path, data)
    return data


#: What a value beyond float range or a string with a lone surrogate is written with: 309
#: digits in a row (10**308 has 309) or a surrogate escape (paired ones match too).
_SUSPECT = re.compile(r"\d{309}|\\u[dD][89a-fA-F]")


def _check_values(path: str | Path, data: Any) -> None:
    """Refuse an integer of ``data`` beyond float range and a string or key that is not
    Unicode text (a lone surrogate), naming where it is (``jobs[0].id``)."""
    stack: list[tuple[str, Any]] = [("", data)]
    while stack:
        where, value = stack.pop()
        if isinstance(value, dict):
            stack += [(f"{where}.{key}" if where else key, item) for key, item in value.items()]
            stack += [(where, key) for key in value]  # its keys are strings too
        elif isinstance(value, list):
            stack += [(f"{where}[{i}]", item) for i, item in enumerate(value)]
        else:
            if isinstance(value, str) and not _is_text(value):
                problem = f"{value!a} is not Unicode text (a lone surrogate escape)"
            elif isinstance(value, int) and abs(value) > sys.float_info.max:
                problem = (
                    f"a {len(str(abs(value)))}-digit integer, beyond the range of "
                    f"floating-point numbers ({sys.float_info.max:.2g})"
                )
            else:
                continue
            raise InputError(f"{path}: {ascii(where or 'top level')[1:-1]}: {problem}")


def _is_text(value: str) -> bool:
    """Whether UTF-8 can encode ``value`` (it cannot encode a lone surrogate)."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


class _DuplicateKey(ValueError):
    pass


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object; a key given twice (which JSON parsers resolve differently) raises."""
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _DuplicateKey(key)
        out[key] = value
    return out


def read_file(path: str | Path, read: Callable[[Any], T]) -> T:
    """``read`` applied to the JSON of ``path``; its InputError names the file."""
    data = read_json(path)  # its own errors name the file
    try:
        return read(data)
    except InputError as exc:
        raise type(exc)(f"{path}: {exc}") from None
