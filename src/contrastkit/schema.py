"""Records and enums shared by every stage, and the official VisoGender columns.

The two official annotation files of VisoGender (Hall et al., 2023, arXiv:2306.12424;
repository README "The Dataset") are tab-separated, one image per line, with these
header rows, in this order:

* occupation-participant (OP): ``IDX, Sector, Specialisation, Occupation, Participant,
  URL type (Type NA if can't find), Licence, Occupation_perceived_gender,
  Participant_perceived_gender, Error codes, Annotator``
* occupation-object (OO): ``IDX, Sector, Specialisation, Occupation, Object,
  URL type (Type NA if can't find), LICENSE OK?, Occupation_perceived_gender,
  Error codes, Annotator``

Reading and writing those files is :mod:`contrastkit.tsv`.

Perceived gender presentation is labelled ``masculine`` / ``feminine`` (the paper's
Sec. 3.1 terminology, never male/female); ``neutral`` stands for they/their.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterator
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path

from contrastkit.errors import DataFormatError

__all__ = [
    "OO_COLUMNS",
    "OP_COLUMNS",
    "Context",
    "DataFormatError",
    "Gender",
    "VisoGenderRow",
    "VisoGenderTable",
    "columns_for",
]


class Gender(str, Enum):
    """Perceived gender presentation label (VisoGender Sec. 3.1)."""

    MASCULINE = "masculine"
    FEMININE = "feminine"
    NEUTRAL = "neutral"

    @property
    def short(self) -> str:
        """One-letter code used in cell names (``M``, ``F``, ``N``), as in the paper."""
        return self.value[0].upper()

    @classmethod
    def binary(cls) -> tuple[Gender, Gender]:
        """The two labels an annotated person can carry: masculine, feminine."""
        return (cls.MASCULINE, cls.FEMININE)

    @classmethod
    def parse_label(cls, value: str) -> Gender:
        """Parse an annotation label for a person in an image.

        Accepts ``masculine`` / ``feminine`` in any case and the paper's one-letter codes
        ``M`` / ``F``. ``neutral`` is a pronoun choice, not an annotation, and sex terms
        (male/female, man/woman) are refused with a hint, because the labels describe
        perceived gender presentation.

        Raises:
            ValueError: with a message suitable for a :class:`DataFormatError`.
        """
        text = value.strip().lower()
        if text in ("masculine", "m"):
            return cls.MASCULINE
        if text in ("feminine", "f"):
            return cls.FEMININE
        hint = ""
        if text in ("male", "man", "men", "female", "woman", "women"):
            hint = " (labels describe perceived gender presentation: use masculine/feminine)"
        else:
            close = difflib.get_close_matches(text, ["masculine", "feminine"], n=1, cutoff=0.75)
            if close:
                hint = f" (did you mean {close[0]!r}?)"
        raise ValueError(f"unknown gender label {value!r}; expected masculine or feminine{hint}")


class Context(str, Enum):
    """Scene type: occupation-participant (two people) or occupation-object (one person)."""

    OP = "OP"
    OO = "OO"

    @property
    def cells(self) -> tuple[str, ...]:
        """Gender cells a balanced occupation fills (VisoGender Sec. 3.2, Tab. 1).

        OO: ``M``, ``F``. OP: ``MM``, ``MF``, ``FM``, ``FF`` where the first letter is the
        occupation's and the second the participant's perceived gender.
        """
        if self is Context.OO:
            return ("M", "F")
        return ("MM", "MF", "FM", "FF")

    @property
    def noun_kind(self) -> str:
        """``participant`` for OP, ``object`` for OO."""
        return "participant" if self is Context.OP else "object"

    @classmethod
    def parse(cls, value: str) -> Context:
        """Parse ``OP`` / ``OO`` (any case, surrounding spaces ignored)."""
        text = value.strip().upper()
        try:
            return cls(text)
        except ValueError:
            raise ValueError(f"unknown context {value!r}; expected OP or OO") from None


URL_COLUMN = "URL type (Type NA if can't find)"

OP_COLUMNS: tuple[str, ...] = (
    "IDX",
    "Sector",
    "Specialisation",
    "Occupation",
    "Participant",
    URL_COLUMN,
    "Licence",
    "Occupation_perceived_gender",
    "Participant_perceived_gender",
    "Error codes",
    "Annotator",
)
OO_COLUMNS: tuple[str, ...] = (
    "IDX",
    "Sector",
    "Specialisation",
    "Occupation",
    "Object",
    URL_COLUMN,
    "LICENSE OK?",
    "Occupation_perceived_gender",
    "Error codes",
    "Annotator",
)


def columns_for(context: Context) -> tuple[str, ...]:
    """The official header of a ``context`` file, in order."""
    return OP_COLUMNS if context is Context.OP else OO_COLUMNS


@dataclass(frozen=True)
class VisoGenderRow:
    """One annotated image of a VisoGender-style dataset.

    ``participant`` is set for OP rows and ``object`` for OO rows; the other is ``None``.
    ``licence`` keeps the file's text (``Yes`` in the official files). ``line`` is the
    line the row was read from (not part of equality).
    """

    idx: str
    context: Context
    sector: str
    specialisation: str
    occupation: str
    url: str
    licence: str
    occupation_gender: Gender
    participant: str | None = None
    object: str | None = None
    participant_gender: Gender | None = None
    error_codes: str = ""
    annotator: str = ""
    line: int | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        if self.context is Context.OP:
            if self.participant is None or self.participant_gender is None:
                raise ValueError(f"OP row {self.idx!r} needs a participant and its gender")
            if self.object is not None:
                raise ValueError(f"OP row {self.idx!r} cannot have an object")
        else:
            if self.object is None:
                raise ValueError(f"OO row {self.idx!r} needs an object")
            if self.participant is not None or self.participant_gender is not None:
                raise ValueError(f"OO row {self.idx!r} cannot have a participant")
        for name in ("occupation_gender", "participant_gender"):
            value = getattr(self, name)
            if value is Gender.NEUTRAL:
                raise ValueError(f"row {self.idx!r}: {name} must be masculine or feminine")

    @property
    def noun(self) -> str:
        """The participant (OP) or object (OO) noun."""
        value = self.participant if self.context is Context.OP else self.object
        assert value is not None  # guaranteed by __post_init__
        return value

    @property
    def cell(self) -> str:
        """The gender cell of the row: ``M``/``F`` (OO) or ``MM``/``MF``/``FM``/``FF`` (OP)."""
        if self.participant_gender is None:
            return self.occupation_gender.short
        return self.occupation_gender.short + self.participant_gender.short

    def to_fields(self) -> tuple[str, ...]:
        """The row as the official columns of its context, in order."""
        if self.context is Context.OP:
            assert self.participant_gender is not None
            return (
                self.idx,
                self.sector,
                self.specialisation,
                self.occupation,
                self.noun,
                self.url,
                self.licence,
                self.occupation_gender.value,
                self.participant_gender.value,
                self.error_codes,
                self.annotator,
            )
        return (
            self.idx,
            self.sector,
            self.specialisation,
            self.occupation,
            self.noun,
            self.url,
            self.licence,
            self.occupation_gender.value,
            self.error_codes,
            self.annotator,
        )


@dataclass(frozen=True)
class VisoGenderTable:
    """The rows of one official-format file and the context its header declares."""

    path: Path
    context: Context
    rows: tuple[VisoGenderRow, ...]
    newline: str = "\n"
    final_newline: bool = True

    @property
    def columns(self) -> tuple[str, ...]:
        """The official header of this table's context."""
        return columns_for(self.context)

    def __len__(self) -> int:
        return len(self.rows)

    def __iter__(self) -> Iterator[VisoGenderRow]:
        return iter(self.rows)
