"""The probe-set format: its columns, one row (:class:`ProbeRow`) and the rules a row
keeps (:func:`check_probe_row`); the format is described in :mod:`contrastkit.probes`."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Final
from urllib.parse import urlparse

from contrastkit.errors import DataFormatError
from contrastkit.records import data_file

__all__ = [
    "BLANK",
    "CATEGORIES",
    "COLUMNS",
    "EXPORT_CONFIG",
    "LABELS",
    "OPTIONAL_COLUMNS",
    "PROBE_FILE",
    "ProbeRow",
    "check_probe_row",
]

CATEGORIES: Final[tuple[str, ...]] = ("gender", "profession", "race", "religion")
"""StereoSet's four bias types (VLStereoSet Sec. 3.1, Table 1)."""

LABELS: Final[tuple[str, ...]] = ("stereotype", "anti-stereotype")
"""The label ``y``: the image shows the stereotypical or the anti-stereotypical statement."""

BLANK: Final[str] = "BLANK"
"""The placeholder of a StereoSet context sentence."""

COLUMNS: Final[tuple[str, ...]] = (
    "id",
    "image",
    "category",
    "target",
    "context",
    "stereotype_term",
    "anti_stereotype_term",
    "unrelated_term",
    "stereotype_caption",
    "anti_stereotype_caption",
    "unrelated_caption",
    "label",
    "neutral_stereotype_caption",
    "neutral_anti_stereotype_caption",
    "annotator",
    "licence",
)
"""The probe-set columns, in the order they are written (:mod:`contrastkit.probes`)."""

OPTIONAL_COLUMNS: Final[frozenset[str]] = frozenset({"annotator", "licence"})
"""Columns a file may leave out (read as empty)."""

PROBE_FILE: Final[str] = "probes.tsv"
"""The probe file's name in a build folder (``contrastkit build stereoset``)."""

EXPORT_CONFIG: Final[str] = "stereotype"
"""The config name of a stereotype set in a ``contrastkit export`` folder
(``OUT/saved/stereotype``)."""

_REQUIRED_NONEMPTY: Final[tuple[str, ...]] = COLUMNS[:12]
_CAPTION_TERMS: Final[tuple[tuple[str, str], ...]] = (
    ("stereotype_caption", "stereotype_term"),
    ("anti_stereotype_caption", "anti_stereotype_term"),
    ("unrelated_caption", "unrelated_term"),
    ("neutral_stereotype_caption", "stereotype_term"),
    ("neutral_anti_stereotype_caption", "anti_stereotype_term"),
)
_URL_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")


@dataclass(frozen=True)
class ProbeRow:
    """One image of a probe set and its three candidate captions (VLStereoSet Sec. 3.2).

    The fields are the columns of :data:`COLUMNS`; ``source`` and ``line`` say where the
    row was read (for located errors) and do not take part in equality. A row read from
    a saved dataset with embedded images has ``dataset_index`` / ``dataset_split`` set and
    ``source`` the dataset folder; :attr:`image_ref` then names the stored image.
    """

    id: str
    image: str
    category: str
    target: str
    context: str
    stereotype_term: str
    anti_stereotype_term: str
    unrelated_term: str
    stereotype_caption: str
    anti_stereotype_caption: str
    unrelated_caption: str
    label: str
    neutral_stereotype_caption: str
    neutral_anti_stereotype_caption: str
    annotator: str = ""
    licence: str = ""
    source: str | None = field(default=None, compare=False)
    line: int | None = field(default=None, compare=False)
    dataset_index: int | None = field(default=None, compare=False)
    dataset_split: str | None = field(default=None, compare=False)

    def captions(self) -> tuple[str, str, str]:
        """``(S_s, S_a, S_i)``: the stereotypical, anti-stereotypical and irrelevant
        captions, in this order (the order of the scores of Sec. 3.3)."""
        return (self.stereotype_caption, self.anti_stereotype_caption, self.unrelated_caption)

    def neutral_captions(self) -> tuple[str, str]:
        """``(S'_s, S'_a)``, the neutralised captions of Sec. 3.5 (both empty when the
        target term has no neutral form)."""
        return (self.neutral_stereotype_caption, self.neutral_anti_stereotype_caption)

    @property
    def has_neutral(self) -> bool:
        """Whether the row has neutralised captions (lmss / vlss can use it)."""
        return bool(self.neutral_stereotype_caption)

    @property
    def is_anti_stereotypical(self) -> bool:
        """``y = a``: the row belongs to ``D_a`` (vlbs, lmss and vlss are computed there)."""
        return self.label == "anti-stereotype"

    @property
    def image_ref(self) -> str:
        """The image reference: ``dataset:<folder>#<split>/<index>`` for an image stored
        in a dataset (the form :class:`contrastkit.evaluators.data.EvalItem` uses), else
        :attr:`image` as written."""
        if self.dataset_index is not None:
            return f"dataset:{self.source}#{self.dataset_split or ''}/{self.dataset_index}"
        return self.image

    @property
    def has_url(self) -> bool:
        """Whether the image is an http(s) URL (not a local file)."""
        return urlparse(self.image).scheme in ("http", "https")

    def local_image(self) -> Path | None:
        """The image's local file (``file://`` URLs and paths; a relative path is taken
        from the folder of the file the row was read from), or ``None`` for an http(s)
        URL.

        Raises:
            DataFormatError: at the row's ``image``: the file is outside that folder
                (:func:`contrastkit.records.data_file`: ``..``, an absolute path or
                ``file://`` URL elsewhere, a link leading out of the folder).
        """
        if self.has_url:
            return None
        source = Path(self.source) if self.source is not None else Path.cwd() / "<probes>"
        folder = source if source.is_dir() else source.parent
        return data_file(source, self.line, "image", self.image, folder=folder)

    def to_record(self) -> dict[str, str]:
        """The row as a column -> value dict in :data:`COLUMNS` order."""
        return {name: getattr(self, name) for name in COLUMNS}


def _contains_term(caption: str, term: str) -> bool:
    return term.strip().casefold() in caption.casefold()


#: A broken rule of the format: (column, reason), or ``None`` when the rule holds.
Problem = tuple[str, str] | None


def _text_problem(row: ProbeRow) -> Problem:
    """Every column is text on one line, and the required ones are not empty."""
    for name in COLUMNS:
        value = getattr(row, name)
        if not isinstance(value, str):
            return name, f"expected text, found {type(value).__name__}"
        if any(c in value for c in "\t\r\n"):
            return name, "contains a tab or a line break"
    for name in _REQUIRED_NONEMPTY:
        if not getattr(row, name).strip():
            return name, "empty value"
    return None


def _value_problem(row: ProbeRow) -> Problem:
    """The category and the label are known ones."""
    if row.category not in CATEGORIES:
        return "category", f"unknown category {row.category!r}; one of {', '.join(CATEGORIES)}"
    if row.label not in LABELS:
        return "label", f"label {row.label!r} is not one of {', '.join(LABELS)}"
    return None


def _image_problem(row: ProbeRow) -> Problem:
    """An image given as a URL is a usable http(s) or file one."""
    scheme = _URL_SCHEME.match(row.image)
    if scheme is None:
        return None
    parsed = urlparse(row.image)
    if scheme.group(1).lower() not in ("http", "https", "file"):
        return "image", f"bad URL: scheme {scheme.group(1)!r} is not http(s) or file"
    if scheme.group(1).lower() in ("http", "https") and not parsed.hostname:
        return "image", "bad URL: no host"
    if any(ord(c) < 33 for c in row.image):
        return "image", "bad URL: contains whitespace or control characters"
    return None


def _caption_problem(row: ProbeRow) -> Problem:
    """The context has its BLANK, the neutral captions come as a pair, and every caption
    holds its attribute term."""
    if BLANK not in row.context:
        return "context", f"the context sentence has no {BLANK}"
    if bool(row.neutral_stereotype_caption) != bool(row.neutral_anti_stereotype_caption):
        missing = (
            "neutral_anti_stereotype_caption"
            if row.neutral_stereotype_caption
            else "neutral_stereotype_caption"
        )
        return missing, "the two neutral captions are given together or not at all"
    for caption, term in _CAPTION_TERMS:
        text = getattr(row, caption)
        if text and not _contains_term(text, getattr(row, term)):
            return caption, f"does not contain its attribute term {getattr(row, term)!r}"
    return None


#: The rules of the format, in the order they are checked (the first broken one is
#: reported).
_RULES: Final[tuple[Callable[[ProbeRow], Problem], ...]] = (
    _text_problem,
    _value_problem,
    _image_problem,
    _caption_problem,
)


def check_probe_row(row: ProbeRow, path: str | Path | None = None, line: int | None = None) -> None:
    """Raise a :class:`DataFormatError` located at ``path``:``line`` (default: the row's
    own ``source`` / ``line``) if ``row`` breaks a rule of the format (:mod:`contrastkit.probes`).
    """
    for rule in _RULES:
        problem = rule(row)
        if problem is not None:
            where = str(path if path is not None else row.source or "<probes>")
            at = line if line is not None else row.line
            raise DataFormatError(where, at, *problem)


def _field_names() -> tuple[str, ...]:  # keeps COLUMNS and the dataclass in step
    return tuple(f.name for f in fields(ProbeRow))[: len(COLUMNS)]


assert _field_names() == COLUMNS
