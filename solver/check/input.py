"""A small collector of input problems: each check names the field and states the rule.

Readers call these helpers while walking the JSON; every problem found is kept,
and :meth:`Checker.raise_if_any` raises one :class:`InvalidSnapshotError` with all.
"""

from __future__ import annotations

import math
import sys
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from ..errors import InvalidSnapshotError, Problem

_MISSING = object()
INT32_MAX = 2**31 - 1  # Kafka's partition ids, partition counts and generation ids are 32-bit


def missing_rule(obj: dict, key: str) -> str:
    """The rule a missing required ``key`` of ``obj`` breaks, with the likely typo when ``obj`` has a key close
    to it (a misspelt required field is missing, not unknown, so the unknown-field warning never names it).

    >>> missing_rule({"id": "a", "subscripton": ["t"]}, "subscription")
    'is required (found "subscripton": did you mean "subscription"?)'
    """
    if obj:
        import difflib

        near = difflib.get_close_matches(key, [k for k in obj if isinstance(k, str)], n=1, cutoff=0.75)
        if near:
            return f'is required (found "{near[0]}": did you mean "{key}"?)'
    return "is required"


def is_int(value: Any) -> bool:
    """True for a JSON integer (``bool`` is not an integer here)."""
    return isinstance(value, int) and not isinstance(value, bool)


def finite_number(value: Any) -> float | None:
    """``value`` as a finite ``float`` when it is a number (an int or a float, NumPy's too; not a bool), else None.

    >>> [finite_number(v) for v in (2, 0.5, True, "1", float("nan"), 10**400)]
    [2.0, 0.5, None, None, None, None]
    """
    if isinstance(value, bool) or not isinstance(value, (int, float)) and not _numpy_number(value):
        return None
    try:
        out = float(value)
    except (OverflowError, ValueError, TypeError):
        return None
    return out if math.isfinite(out) else None


def _numpy_number(value: Any) -> bool:
    """A NumPy integer or float (numpy is loaded whenever such a value exists: no import here)."""
    np = sys.modules.get("numpy")
    return np is not None and isinstance(value, (np.integer, np.floating))


class Checker:
    """Collects :class:`Problem` s while a reader walks a snapshot."""

    __slots__ = ("problems", "_unknown")

    def __init__(self) -> None:
        self.problems: list[Problem] = []
        self._unknown: dict[tuple[str, str], list] = {}  # (where, key) -> [first path, count, allowed]

    def extra_keys(self, obj: dict, allowed: frozenset[str], path: str, where: str | None = None) -> None:
        """Note the keys of ``obj`` outside ``allowed``: kept as warnings, not problems (the spec ignores them).

        ``where`` groups repeats (``members[*]``) so that a typo in every member is one warning, with a count.
        """
        if obj.keys() <= allowed:  # the common case, in C
            return
        for key in obj.keys() - allowed:
            slot = self._unknown.get((where or path, key))
            if slot is None:
                self._unknown[(where or path, key)] = [_join(path, key), 1, allowed]
            else:
                slot[1] += 1

    @property
    def warnings(self) -> tuple[str, ...]:
        """One line per unknown field: where, and the nearest known name when there is one."""
        if not self._unknown:
            return ()
        import difflib

        out = []
        for (_, key), (first, count, allowed) in sorted(self._unknown.items(), key=lambda kv: kv[1][0]):
            near = difflib.get_close_matches(key, sorted(allowed), n=1, cutoff=0.6)
            text = f"{first}: unknown field, ignored"
            if near:
                text += f' (did you mean "{near[0]}"?)'
            if count > 1:
                text += f"; {count - 1} more like it"
            out.append(text)
        return tuple(out)

    def fail(self, field: str, rule: str) -> None:
        self.problems.append(Problem(field, rule))

    def raise_if_any(self) -> None:
        if self.problems:
            raise InvalidSnapshotError(self.problems)

    # --- typed getters: return the value, or None after recording a problem ---

    def get(self, obj: dict, key: str, path: str, *, required: bool = True) -> Any:
        value = obj.get(key, _MISSING)
        if value is _MISSING:
            if required:
                self.fail(_join(path, key), missing_rule(obj, key))
            return _MISSING
        return value

    def string(self, obj: dict, key: str, path: str, *, required: bool = True, allow_null: bool = False):
        value = self.get(obj, key, path, required=required)
        if value is _MISSING or (allow_null and value is None):
            return None
        if not isinstance(value, str):
            self.fail(_join(path, key), "must be a string")
            return None
        return value

    def integer(self, obj: dict, key: str, path: str, *, required: bool = True, minimum: int | None = None,
                maximum: int | None = None, default: int | None = None, allow_null: bool = False,
                rule: str | None = None):
        value = self.get(obj, key, path, required=required)
        if value is _MISSING or (allow_null and value is None):
            return default
        if (not is_int(value) or (minimum is not None and value < minimum)
                or (maximum is not None and value > maximum)):
            self.fail(_join(path, key), rule or _int_rule(minimum, allow_null, maximum))
            return default
        return value

    def number(self, obj: dict, key: str, path: str, *, required: bool = True, minimum: float = 0.0,
               strict: bool = False, default: float | None = None, allow_null: bool = False) -> float | None:
        """A finite number ``>= minimum`` (``> minimum`` when ``strict``), as a ``float``; ``default`` when absent
        (or null, where allowed) or wrong."""
        value = self.get(obj, key, path, required=required)
        if value is _MISSING or (allow_null and value is None):
            return default
        number = finite_number(value)
        if number is None or number < minimum or (strict and number == minimum):
            rule = f"must be a finite number {'>' if strict else '>='} {minimum:g}"
            self.fail(_join(path, key), rule + (" or null" if allow_null else ""))
            return default
        return number

    def boolean(self, obj: dict, key: str, path: str, *, required: bool = True, default: bool | None = None):
        value = self.get(obj, key, path, required=required)
        if value is _MISSING:
            return default
        if not isinstance(value, bool):
            self.fail(_join(path, key), "must be true or false")
            return default
        return value

    def choice(self, obj: dict, key: str, path: str, choices: tuple[str, ...], *, default: str):
        value = self.get(obj, key, path, required=False)
        if value is _MISSING:
            return default
        if value not in choices or not isinstance(value, str):
            self.fail(_join(path, key), "must be one of " + ", ".join(f'"{c}"' for c in choices))
            return default
        return value

    def obj(self, obj: dict, key: str, path: str, *, required: bool = True):
        value = self.get(obj, key, path, required=required)
        if value is _MISSING:
            return None
        if not isinstance(value, dict):
            self.fail(_join(path, key), "must be an object")
            return None
        return value

    def array(self, obj: dict, key: str, path: str, *, required: bool = True):
        value = self.get(obj, key, path, required=required)
        if value is _MISSING:
            return None
        if not isinstance(value, list):
            self.fail(_join(path, key), "must be an array")
            return None
        return value

    def string_list(self, obj: dict, key: str, path: str, *, required: bool = True) -> list[str] | None:
        items = self.array(obj, key, path, required=required)
        if items is None:
            return None
        if all(map(str.__instancecheck__, items)):  # in C: thousands of members x hundreds of topics
            return items
        bad = [i for i, v in enumerate(items) if not isinstance(v, str)]
        if bad:
            self.fail(f"{_join(path, key)}[{bad[0]}]", "must be a string")
            return [v for v in items if isinstance(v, str)]
        return items

    def entries(self, raw: list, name: str, allowed: frozenset[str], id_key: str | None = None,
                where: str | None = None):
        """The objects of array ``name`` with their paths and ids, each checked for unknown keys (reported under
        ``where``, by default ``name[*]``) and, with ``id_key``, a unique string id (a non-object is recorded and
        skipped; the id is None where missing, wrong or not asked for).

        >>> chk = Checker()
        >>> [(path, ident) for path, _, ident in chk.entries([{"id": "a"}, 3, {"id": "a"}], "members",
        ...                                                  frozenset({"id"}), "id")]
        [('members[0]', 'a'), ('members[2]', 'a')]
        >>> [(p.field, p.rule) for p in chk.problems]
        [('members[1]', 'must be an object'), ('members[2].id', 'must be unique ("a" appears twice)')]
        """
        seen: set[str] = set()
        for i, entry in enumerate(raw):
            path = f"{name}[{i}]"
            if not isinstance(entry, dict):
                self.fail(path, "must be an object")
                continue
            self.extra_keys(entry, allowed, path, where or f"{name}[*]")
            ident = None if id_key is None else self.string(entry, id_key, path)
            if ident is not None:
                if ident in seen:
                    self.fail(f"{path}.{id_key}", f'must be unique ("{ident}" appears twice)')
                seen.add(ident)
            yield path, entry, ident

    def unknown_keys(self, obj: dict, allowed: frozenset[str], path: str) -> None:
        for key in obj:
            if key not in allowed:
                self.fail(_join(path, key), "is not a known key (allowed: " + ", ".join(sorted(allowed)) + ")")


def _int_rule(minimum: int | None, allow_null: bool, maximum: int | None = None) -> str:
    rule = "must be an integer" if minimum is None else f"must be an integer >= {minimum}"
    if maximum is not None:
        rule += f" and <= {maximum}"
        if maximum == INT32_MAX:
            rule += " (a 32-bit integer, as in Kafka)"
    return rule + (" or null" if allow_null else "")


def _join(path: str, key: str) -> str:
    if not path:
        return key
    if key.isidentifier():
        return f"{path}.{key}"
    return f"{path}[{key!r}]".replace("'", '"')


def join(path: str, key: str) -> str:
    """Public form of the path join used in field names (``topics["my-topic"]``)."""
    return _join(path, key)


# --------------------------------------------------------------------------- snapshots built from Python objects
#
# The readers build snapshots they have already checked; a snapshot built directly from Python objects
# is checked by writing it as JSON and reading it back, so that one set of rules (the reader's) decides
# both ways in. The readers mark their own construction with :func:`reading`.

_READING: ContextVar[bool] = ContextVar("stickyflow_reading", default=False)


@contextmanager
def reading():
    """Within: snapshots under construction come from a reader that has checked them already."""
    token = _READING.set(True)
    try:
        yield
    finally:
        _READING.reset(token)


def built_by_reader() -> bool:
    return _READING.get()


def names(value: Any, field: str) -> tuple:
    """A sequence field given as any list-like as a tuple; a lone string is refused (it would read as letters)."""
    if type(value) is tuple:
        return value
    if isinstance(value, (str, bytes)):
        raise InvalidSnapshotError(Problem(field, f"must be a list of names, not the single string {value!r}"))
    if isinstance(value, (set, frozenset)):
        return tuple(sorted(value, key=str))
    if isinstance(value, dict) or not hasattr(value, "__iter__"):
        raise InvalidSnapshotError(Problem(field, f"must be a list, not {type(value).__name__}"))
    return tuple(value)


def same_type(value: Any, cls: type, field: str) -> None:
    if not isinstance(value, cls):
        raise InvalidSnapshotError(Problem(field, f"must be a {cls.__name__}, not {type(value).__name__}"))


def objects_of(value: Any, cls: type, field: str) -> tuple:
    """A list-like field of ``cls`` objects as a tuple (:func:`names`), each checked to be one.

    >>> objects_of([1, 2], int, "members")
    (1, 2)
    """
    items = names(value, field)
    for i, item in enumerate(items):
        same_type(item, cls, f"{field}[{i}]")
    return items


def read_back(snap: Any, doc: dict, parse: Any, fields: tuple[str, ...]) -> None:
    """Finish checking a snapshot built from Python objects: read its JSON ``doc`` back with the reader's
    ``parse`` (``now_ms`` written only when set, so that a wrong value still reaches the reader) and put the
    checked, normalized ``fields`` in place of the given ones."""
    if snap.now_ms != 0:
        doc["now_ms"] = snap.now_ms
    parsed = parse(doc)
    for name in fields:
        object.__setattr__(snap, name, getattr(parsed, name))
