"""The occupational taxonomy: sector > specialisation > occupation, with each occupation's
participant and object nouns.

The built-in taxonomy is VisoGender's 23 occupations (Hall et al., 2023,
arXiv:2306.12424, Sec. 3.2, Tab. 1 and Appendix I), shipped as package data in
``contrastkit/data/taxonomy.json`` with its source. Users add occupations of their own
from a CSV, TSV, JSONL or JSON file with the fields ``occupation``, ``sector``,
``specialisation``, ``participant`` and ``object``.

:func:`labor_shares` gives the share of men in each occupation in US labour statistics
(package data with its source), for the evaluators' correlations and the decision
question templates (:mod:`contrastkit.templates`).
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

from contrastkit.errors import DataFormatError
from contrastkit.records import read_records
from contrastkit.schema import Context

__all__ = [
    "BUILTIN_SOURCE",
    "LaborShare",
    "Occupation",
    "Taxonomy",
    "builtin_source",
    "labor_shares",
    "load_taxonomy",
    "read_occupations",
]

BUILTIN_SOURCE = "builtin"
_FIELDS = ("occupation", "sector", "specialisation", "participant", "object")


@dataclass(frozen=True)
class Occupation:
    """One occupation of the taxonomy and the nouns its captions use."""

    name: str
    sector: str
    specialisation: str
    participant: str
    object: str
    source: str = BUILTIN_SOURCE

    def noun(self, context: Context) -> str:
        """The participant noun (OP) or the object noun (OO)."""
        return self.participant if context is Context.OP else self.object

    def same_definition(self, other: Occupation) -> bool:
        """Whether ``other`` defines the same occupation the same way (source aside)."""
        return (self.name, self.sector, self.specialisation, self.participant, self.object) == (
            other.name,
            other.sector,
            other.specialisation,
            other.participant,
            other.object,
        )


class Taxonomy:
    """An ordered, name-indexed set of occupations.

    Order is the order of definition (built-in first), which fixes the order of rows in
    built datasets.
    """

    def __init__(self, occupations: Iterable[Occupation], *, source: str = BUILTIN_SOURCE):
        self._by_name: dict[str, Occupation] = {}
        self.sources: list[str] = [source]
        for occupation in occupations:
            self._add(occupation)

    def _add(self, occupation: Occupation) -> None:
        current = self._by_name.get(occupation.name)
        if current is not None and not current.same_definition(occupation):
            raise ValueError(
                f"occupation {occupation.name!r} from {occupation.source} conflicts with "
                f"its definition from {current.source}"
            )
        if current is None:
            self._by_name[occupation.name] = occupation

    def __contains__(self, name: object) -> bool:
        return name in self._by_name

    def __getitem__(self, name: str) -> Occupation:
        try:
            return self._by_name[name]
        except KeyError:
            raise KeyError(
                f"unknown occupation {name!r}; known: {', '.join(self.names)}. "
                "Add your own with --taxonomy FILE"
            ) from None

    def get(self, name: str) -> Occupation | None:
        """The occupation called ``name``, or ``None``."""
        return self._by_name.get(name)

    def __iter__(self) -> Iterator[Occupation]:
        return iter(self._by_name.values())

    def __len__(self) -> int:
        return len(self._by_name)

    @property
    def names(self) -> list[str]:
        """Occupation names in taxonomy order."""
        return list(self._by_name)

    def position(self, name: str) -> int:
        """The rank of ``name`` in taxonomy order (unknown names sort last)."""
        for rank, known in enumerate(self._by_name):
            if known == name:
                return rank
        return len(self._by_name)

    def extended(self, path: str | Path) -> Taxonomy:
        """A new taxonomy with the occupations of ``path`` added after these.

        A file may repeat a built-in occupation with the same definition; a different
        definition is an error naming the file and line.
        """
        extra = read_occupations(path)
        combined = Taxonomy(self, source=self.sources[0])
        combined.sources = [*self.sources, str(path)]
        for occupation, line in extra:
            try:
                combined._add(occupation)
            except ValueError as exc:
                raise DataFormatError(path, line, "occupation", str(exc)) from None
        return combined


def read_occupations(path: str | Path) -> list[tuple[Occupation, int | None]]:
    """Read occupation definitions (and their line numbers) from a table file.

    Fields: ``occupation``, ``sector``, ``specialisation``, ``participant``, ``object``;
    all are required and non-empty. A ``.json`` file may be a list or an object with an
    ``occupations`` list (the package-data format, where ``occupation`` is the name).

    Raises:
        DataFormatError: naming file, line and field of the first bad entry.
    """
    occupations: list[tuple[Occupation, int | None]] = []
    seen: dict[str, int | None] = {}
    for record in read_records(path, list_key="occupations", single_line=True):
        for name in _FIELDS:
            if not record.get(name):
                raise record.error(name, "missing or empty")
        name = record.get("occupation")
        if name in seen:
            raise record.error("occupation", f"{name!r} is defined twice in this file")
        seen[name] = record.line
        occupations.append(
            (
                Occupation(
                    name=name,
                    sector=record.get("sector"),
                    specialisation=record.get("specialisation"),
                    participant=record.get("participant"),
                    object=record.get("object"),
                    source=str(path),
                ),
                record.line,
            )
        )
    return occupations


@lru_cache(maxsize=1)
def _builtin_data() -> dict[str, Any]:
    """The parsed package-data file ``contrastkit/data/taxonomy.json``, read once."""
    text = resources.files("contrastkit").joinpath("data/taxonomy.json").read_text("utf-8")
    data: dict[str, Any] = json.loads(text)
    return data


@lru_cache(maxsize=1)
def _builtin() -> Taxonomy:
    return Taxonomy(
        Occupation(
            name=entry["occupation"],
            sector=entry["sector"],
            specialisation=entry["specialisation"],
            participant=entry["participant"],
            object=entry["object"],
        )
        for entry in _builtin_data()["occupations"]
    )


def builtin_source() -> str:
    """The citation of the built-in taxonomy."""
    return str(_builtin_data()["source"])


def load_taxonomy(extra: str | Path | Sequence[str | Path] | None = None) -> Taxonomy:
    """The built-in VisoGender taxonomy, extended with the occupations of ``extra`` files.

    Args:
        extra: one file or several (CSV, TSV, JSONL or JSON) of user occupations.
    """
    taxonomy = _builtin()
    if extra is None:
        return taxonomy
    paths = [extra] if isinstance(extra, str | Path) else list(extra)
    for path in paths:
        taxonomy = taxonomy.extended(path)
    return taxonomy


# -- labour statistics of the occupations ----------------------------------------------
@dataclass(frozen=True)
class LaborShare:
    """The share of men (percent) in an occupation in US labour statistics."""

    occupation: str
    male_share_percent: float
    year: int
    source: str


@lru_cache(maxsize=1)
def labor_shares() -> dict[str, LaborShare]:
    """The male shares of the VisoGender occupations, from ``data/labour_stats.tsv``:
    US labour force statistics, 2022 (specialist: 2020), as matched to the occupations by
    VisoGender Appendix F."""
    text = resources.files("contrastkit").joinpath("data/labour_stats.tsv").read_text("utf-8")
    reader = csv.DictReader(text.splitlines(), delimiter="\t")
    return {
        row["occupation"]: LaborShare(
            row["occupation"], float(row["male_share_percent"]), int(row["year"]), row["source"]
        )
        for row in reader
    }
