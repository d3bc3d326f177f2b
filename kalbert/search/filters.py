"""Metadata filters: which documents a query may return, by the fields their JSONL lines carried.

A filter maps fields to what they must hold: ``{"genre": "news"}`` (equal) or ``{"year": {"in": [2020, 2021]}}``
(any of); several fields must all hold. On the command line ``--filter genre=news`` says the same, a field
given twice means any of its values, and a value is also read as JSON (``year=2020`` matches the number and
the text). A field no document has is refused, since a typo would otherwise silently return nothing.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

import numpy as np

from kalbert.errors import KalbertError

Filter = dict[str, list[Any]]
"""field -> the values it may hold (any of them)"""
FILTER_HELP = 'a JSON object such as {"genre": "news", "year": {"in": [2020, 2021]}}'


def _key(value: Any) -> str:
    """Values that JSON calls equal get one key (1 and 1.0; not 1 and true)."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def parse_filter(spec: Any) -> Filter:
    """A filter from its JSON form, or one line saying what is wrong with it."""
    if spec is None:
        return {}
    if not isinstance(spec, dict):
        raise KalbertError(f"a filter must be an object of fields, got {json.dumps(spec)[:80]}", f"give {FILTER_HELP}")
    parsed: Filter = {}
    for name, condition in spec.items():
        if isinstance(condition, dict):
            if set(condition) != {"in"} or not isinstance(condition["in"], list) or not condition["in"]:
                raise KalbertError(f"filter on {name!r}: a condition object must be {{\"in\": [values]}}, got "
                                   f"{json.dumps(condition, ensure_ascii=False)[:80]}", f"give {FILTER_HELP}")
            parsed[name] = list(condition["in"])
        else:
            parsed[name] = [condition]
    return parsed


def cli_filter(items: list[str]) -> dict[str, Any]:
    """The JSON form of ``--filter`` items: ``FIELD=VALUE`` (a field twice: any of its values; a value matched
    as written and, where it reads as JSON, as that: ``year=2020`` is the number and the text), or one JSON
    object."""
    if len(items) == 1 and items[0].lstrip().startswith("{"):
        try:
            spec = json.loads(items[0])
        except json.JSONDecodeError as exc:
            raise KalbertError(f"--filter {items[0]!r} is not JSON ({exc.msg})", f"give {FILTER_HELP}") from None
        parse_filter(spec)
        return spec
    values: dict[str, list[Any]] = {}
    for item in items:
        name, equals, text = item.partition("=")
        if not equals or not name:
            raise KalbertError(f"--filter {item!r} is not FIELD=VALUE", "e.g. --filter genre=news --filter year=2020")
        values.setdefault(name, []).append(text)
        try:
            value = json.loads(text)
        except json.JSONDecodeError:
            continue
        if not isinstance(value, str):
            values[name].append(value)
    return {name: {"in": found} for name, found in values.items()}


def check_fields(query_filter: Filter, known: Iterable[str]) -> None:
    """Refuse a filter on a field no document has."""
    known = set(known)
    unknown = sorted(set(query_filter) - known)
    if unknown:
        listed = ", ".join(sorted(known)[:20]) or "none: the documents carry no metadata"
        raise KalbertError(f"filter on unknown field{'s' if len(unknown) > 1 else ''} {', '.join(map(repr, unknown))}",
                           f"fields the documents have: {listed}")


def matches(metadata: dict[str, Any], query_filter: Filter) -> bool:
    return all(name in metadata and _key(metadata[name]) in {_key(v) for v in values}
               for name, values in query_filter.items())


class MetadataColumns:
    """The documents' metadata by field and value: which document rows hold each value."""

    def __init__(self, metadata: Iterable[dict[str, Any]]) -> None:
        self.rows: dict[str, dict[str, list[int]]] = {}
        self.size = 0
        for row, fields in enumerate(metadata):
            self.size = row + 1
            for name, value in fields.items():
                self.rows.setdefault(name, {}).setdefault(_key(value), []).append(row)

    @property
    def fields(self) -> set[str]:
        return set(self.rows)

    def allowed(self, query_filter: Filter) -> np.ndarray:
        """Bool over document rows: the documents that pass ``query_filter``."""
        allowed = np.ones(self.size, dtype=bool)
        for name, values in query_filter.items():
            passing = np.zeros(self.size, dtype=bool)
            by_value = self.rows.get(name, {})
            for value in values:
                passing[by_value.get(_key(value), [])] = True
            allowed &= passing
        return allowed


def milvus_expression(query_filter: Filter) -> str:
    """The filter as a Milvus boolean expression over the JSON ``metadata`` field."""
    parts = []
    for name, values in query_filter.items():
        field = f"metadata[{json.dumps(name, ensure_ascii=False)}]"
        equal = [f"{field} == {json.dumps(value, ensure_ascii=False)}" for value in values]
        parts.append(f"({' or '.join(equal)})")  # Milvus Lite reads no 'in' on JSON keys
    return " and ".join(parts)
