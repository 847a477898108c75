"""Small wording helpers for what people read: counts with the right noun form."""

from __future__ import annotations

__all__ = ["count"]

#: Plurals that are not the singular plus "s".
_IRREGULAR = {"query": "queries", "child": "children", "person": "people"}


def count(n: int, singular: str, plural: str | None = None) -> str:
    """``n`` and the noun in the form that number takes: ``count(1, "error")`` ->
    ``"1 error"``, ``count(2, "error")`` -> ``"2 errors"``, ``count(0, "query")`` ->
    ``"0 queries"``. ``plural`` overrides the plural form; nouns ending in a capital
    (``URL``) take a plain ``s``."""
    if n == 1:
        return f"{n} {singular}"
    if plural is None:
        plural = _IRREGULAR.get(singular)
    if plural is None:
        ends_y = singular.endswith("y") and singular[-2:-1] not in "aeiou"
        plural = singular[:-1] + "ies" if ends_y else singular + "s"
    return f"{n} {plural}"
