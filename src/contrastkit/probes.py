"""Stereotype probe sets: the VLStereoSet format (Zhou et al., 2022; seeds/002).

VLStereoSet (Sec. 3.1-3.2) pairs each image with the three statements of one StereoSet
intrasentence item (Nadeem et al., 2021): a context sentence ``c_t`` with a blank that
holds a target term ``t`` (*My sister is BLANK.*), filled with the stereotypical,
anti-stereotypical and irrelevant attribute terms ``a_{t,s}``, ``a_{t,a}``, ``a_{t,i}``
(*caring*, *rude*, *hi*). A row of the data set ``D = {(I, S_s, S_a, S_i, y)}`` is one
image ``I``, the three captions and the label ``y`` saying which of ``S_s`` / ``S_a``
the image shows (crowd-verified, Sec. 3.2). The neutralised captions ``S'_s`` / ``S'_a``
(the target term replaced by a neutral one, Sec. 3.5 and Fig. 2) feed the lmss / vlss
metrics.

**The format.** A probe set is a UTF-8 TSV (``.tsv``, a header line then one image per
line) or JSON Lines (``.jsonl``, one object per line with these keys), with the columns
of :data:`COLUMNS`, in this order when written:

=================================== ============================================================
column                              meaning
=================================== ============================================================
``id``                              unique row ID (the builder writes ``<statement id>-<n>``)
``image``                           an http(s) URL, a ``file://`` URL, or a local path
                                    (a relative path is relative to the file's folder)
``category``                        StereoSet bias type: ``gender``, ``profession``, ``race``,
                                    ``religion`` (:data:`CATEGORIES`)
``target``                          the target term ``t`` (``sister``)
``context``                         the context sentence ``c_t``, with ``BLANK``
``stereotype_term``                 ``a_{t,s}`` (``caring``)
``anti_stereotype_term``            ``a_{t,a}`` (``rude``)
``unrelated_term``                  ``a_{t,i}`` (``hi``)
``stereotype_caption``              ``S_s``: the context, BLANK filled with ``a_{t,s}``
``anti_stereotype_caption``         ``S_a``
``unrelated_caption``               ``S_i``
``label``                           ``y``: ``stereotype`` or ``anti-stereotype``
                                    (:data:`LABELS`): which statement the image shows
``neutral_stereotype_caption``      ``S'_s``: ``S_s`` with the target neutralised, or empty
                                    when the target has no neutral form (:func:`neutralise`)
``neutral_anti_stereotype_caption`` ``S'_a``, or empty (empty together with ``S'_s``)
``annotator``                       who verified the image (may be empty; optional column)
``licence``                         the image's licence (may be empty; optional column)
=================================== ============================================================

Reading checks every row and raises one :class:`~contrastkit.errors.DataFormatError`
naming the file, the line (the TSV header is line 1; a JSON Lines file's first object is
line 1) and the field: a missing column or key, a wrong number of fields, an empty
required value, an unknown category, a label outside :data:`LABELS`, an ID used twice,
an image reference that is a URL but not an http(s) / file one, a context without
``BLANK``, a caption that does not contain its attribute term, a neutral caption given
without its partner. Fields never hold tabs or line breaks. Text from data stays text:
nothing here interprets it as markup.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from types import MappingProxyType
from typing import Any, Final
from urllib.parse import unquote, urlparse

from contrastkit.errors import DataFormatError
from contrastkit.gender_words import WORD_TABLE, is_determiner_use, match_case
from contrastkit.io import atomic_write_text
from contrastkit.records import json_lines, parse_json, read_json, text_lines
from contrastkit.saved_datasets import load_saved_split

__all__ = [
    "BLANK",
    "CATEGORIES",
    "COLUMNS",
    "EXPORT_CONFIG",
    "EXTRA_GENDER_TERMS",
    "LABELS",
    "NEUTRAL_TERMS",
    "OPTIONAL_COLUMNS",
    "PROBE_FILE",
    "ProbeRow",
    "check_probe_row",
    "is_probe_set",
    "load_probe_set",
    "neutral_term",
    "neutralise",
    "read_neutral_terms",
    "read_probes",
    "text_lines",
    "write_probes",
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
"""The probe-set columns, in the order they are written (module docstring)."""

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

    def local_image(self) -> Path | None:
        """The image's local file (``file://`` URLs and paths; a relative path is taken
        from the folder of the file the row was read from), or ``None`` for an http(s)
        URL."""
        parsed = urlparse(self.image)
        if parsed.scheme in ("http", "https"):
            return None
        if parsed.scheme == "file":
            return Path(unquote(parsed.path))
        path = Path(self.image).expanduser()
        if not path.is_absolute() and self.source is not None:
            base = Path(self.source)
            path = (base if base.is_dir() else base.parent) / path
        return path

    def to_record(self) -> dict[str, str]:
        """The row as a column -> value dict in :data:`COLUMNS` order."""
        return {name: getattr(self, name) for name in COLUMNS}


def _contains_term(caption: str, term: str) -> bool:
    return term.strip().casefold() in caption.casefold()


def check_probe_row(row: ProbeRow, path: str | Path | None = None, line: int | None = None) -> None:
    """Raise a :class:`DataFormatError` located at ``path``:``line`` (default: the row's
    own ``source`` / ``line``) if ``row`` breaks a rule of the format (module docstring).
    """
    where = str(path if path is not None else row.source or "<probes>")
    at = line if line is not None else row.line

    def fail(column: str, reason: str) -> DataFormatError:
        return DataFormatError(where, at, column, reason)

    for name in COLUMNS:
        value = getattr(row, name)
        if not isinstance(value, str):
            raise fail(name, f"expected text, found {type(value).__name__}")
        if any(c in value for c in "\t\r\n"):
            raise fail(name, "contains a tab or a line break")
    for name in _REQUIRED_NONEMPTY:
        if not getattr(row, name).strip():
            raise fail(name, "empty value")
    if row.category not in CATEGORIES:
        raise fail("category", f"unknown category {row.category!r}; one of {', '.join(CATEGORIES)}")
    if row.label not in LABELS:
        raise fail("label", f"label {row.label!r} is not one of {', '.join(LABELS)}")
    scheme = _URL_SCHEME.match(row.image)
    if scheme is not None:
        parsed = urlparse(row.image)
        if scheme.group(1).lower() not in ("http", "https", "file"):
            raise fail("image", f"bad URL: scheme {scheme.group(1)!r} is not http(s) or file")
        if scheme.group(1).lower() in ("http", "https") and not parsed.hostname:
            raise fail("image", "bad URL: no host")
        if any(ord(c) < 33 for c in row.image):
            raise fail("image", "bad URL: contains whitespace or control characters")
    if BLANK not in row.context:
        raise fail("context", f"the context sentence has no {BLANK}")
    if bool(row.neutral_stereotype_caption) != bool(row.neutral_anti_stereotype_caption):
        missing = (
            "neutral_anti_stereotype_caption"
            if row.neutral_stereotype_caption
            else "neutral_stereotype_caption"
        )
        raise fail(missing, "the two neutral captions are given together or not at all")
    for caption, term in _CAPTION_TERMS:
        text = getattr(row, caption)
        if text and not _contains_term(text, getattr(row, term)):
            raise fail(caption, f"does not contain its attribute term {getattr(row, term)!r}")


# ----------------------------------------------------------------------------- reading


def _row_from(record: Mapping[str, str], path: Path, line: int) -> ProbeRow:
    values: dict[str, Any] = {name: record.get(name, "") for name in COLUMNS}
    row = ProbeRow(**values, source=str(path), line=line)
    check_probe_row(row)
    return row


def _check_header(path: Path, names: list[str]) -> None:
    import difflib

    unknown = [n for n in names if n not in COLUMNS]
    for name in COLUMNS:
        if name not in names and name not in OPTIONAL_COLUMNS:
            close = difflib.get_close_matches(name, unknown, n=1, cutoff=0.6)
            hint = f" (found {close[0]!r}: rename it)" if close else ""
            raise DataFormatError(path, 1, name, f"missing column{hint}")
    if unknown:
        raise DataFormatError(path, 1, unknown[0], "unknown column for a probe set")
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise DataFormatError(path, 1, name, "column appears twice")
        seen.add(name)


def _read_tsv(path: Path) -> Iterator[ProbeRow]:
    lines = text_lines(path)
    header: list[str] | None = None
    for number, text in lines:
        if header is None:
            if not text.strip():
                raise DataFormatError(path, 1, None, "empty header line")
            header = [name.strip() for name in text.split("\t")]
            _check_header(path, header)
            continue
        if not text.strip():
            continue
        values = text.split("\t")
        if len(values) != len(header):
            name = header[len(values)] if len(values) < len(header) else None
            raise DataFormatError(
                path,
                number,
                name,
                f"expected {len(header)} tab-separated fields, found {len(values)}",
            )
        yield _row_from(dict(zip(header, values, strict=True)), path, number)
    if header is None:
        raise DataFormatError(path, None, None, "empty file: no header")


def _read_jsonl(path: Path) -> Iterator[ProbeRow]:
    for number, record in json_lines(path):
        if not isinstance(record, dict):
            raise DataFormatError(path, number, None, "expected a JSON object")
        for name in COLUMNS:
            if name not in record and name not in OPTIONAL_COLUMNS:
                raise DataFormatError(path, number, name, "missing key")
        for name, value in record.items():
            if name not in COLUMNS:
                raise DataFormatError(path, number, str(name), "unknown key for a probe set")
            if not isinstance(value, str):
                raise DataFormatError(
                    path, number, name, f"expected a string, found {type(value).__name__}"
                )
        yield _row_from(record, path, number)


def _check_unique(rows: Iterable[ProbeRow]) -> list[ProbeRow]:
    seen: dict[str, ProbeRow] = {}
    out = []
    for row in rows:
        if row.id in seen:
            first = seen[row.id]
            raise DataFormatError(
                row.source or "<probes>",
                row.line,
                "id",
                f"duplicate id {row.id!r} (first on line {first.line})",
            )
        seen[row.id] = row
        out.append(row)
    return out


def read_probes(path: str | Path) -> list[ProbeRow]:
    """Read and check a probe file: ``.tsv`` or ``.jsonl`` (module docstring).

    Raises:
        DataFormatError: the first problem, naming the file, line and field.
    """
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix == ".tsv":
        return _check_unique(_read_tsv(path))
    if suffix == ".jsonl":
        return _check_unique(_read_jsonl(path))
    raise DataFormatError(path, None, None, "a probe file ends in .tsv or .jsonl")


def write_probes(rows: Iterable[ProbeRow], path: Path) -> None:
    """Write ``rows`` to ``path`` atomically, as TSV or JSON Lines by its suffix.

    Every row is checked first (:func:`check_probe_row`, unique IDs); on an error
    nothing is written.
    """
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in (".tsv", ".jsonl"):
        raise DataFormatError(path, None, None, "a probe file ends in .tsv or .jsonl")
    rows = list(rows)
    for row in rows:
        check_probe_row(row)
    _check_unique(rows)
    if suffix == ".tsv":
        lines = ["\t".join(COLUMNS)]
        lines += ["\t".join(row.to_record().values()) for row in rows]
    else:
        lines = [json.dumps(row.to_record(), ensure_ascii=False) for row in rows]
    atomic_write_text(path, "".join(line + "\n" for line in lines))


def _sniff_file(path: Path) -> bool:
    try:
        with path.open("rb") as handle:
            first = handle.readline(1 << 20).decode("utf-8", "replace").lstrip("\ufeff")
    except OSError:
        return False
    if path.suffix.lower() == ".tsv":
        names = {name.strip() for name in first.split("\t")}
        return {"stereotype_caption", "anti_stereotype_caption", "label"} <= names
    if path.suffix.lower() == ".jsonl":
        try:
            record = parse_json(path, 1, first)
        except DataFormatError:
            return False
        return isinstance(record, dict) and "stereotype_caption" in record
    return False


def _probe_files(folder: Path) -> list[Path]:
    return sorted(
        p for p in folder.iterdir() if p.suffix.lower() in (".tsv", ".jsonl") and _sniff_file(p)
    )


def _dataset_folder(path: Path) -> Path | None:
    def is_dataset(folder: Path) -> bool:
        return (folder / "dataset_info.json").is_file() or (folder / "dataset_dict.json").is_file()

    exported = path / "saved" / EXPORT_CONFIG
    if is_dataset(exported):
        return exported
    if is_dataset(path):
        return path
    return None


def _dataset_is_probes(folder: Path) -> bool:
    for info in (folder / "dataset_dict.json", folder / "dataset_info.json"):
        if not info.is_file():
            continue
        try:
            data = read_json(info)
        except DataFormatError:
            return False
        if not isinstance(data, dict):
            return False
        if info.name == "dataset_dict.json":
            splits = data.get("splits", [])
            names = [s for s in splits if isinstance(s, str)] if isinstance(splits, list) else []
            # a split is a folder of this one: a plain name, never a path out of it
            plain = [s for s in names if s == Path(s).name and s not in ("", ".", "..")]
            return any(_dataset_is_probes(folder / split) for split in plain)
        features = data.get("features", {})
        return isinstance(features, dict) and "stereotype_caption" in features
    return False


def is_probe_set(path: str | Path) -> bool:
    """Whether ``path`` looks like a probe set, from its header alone (cheap): a ``.tsv``
    / ``.jsonl`` with the probe columns, a folder holding one, a ``contrastkit export``
    folder of a stereotype set, or a saved dataset with a ``stereotype_caption`` column.
    """
    path = Path(path)
    if path.is_file():
        return _sniff_file(path)
    if not path.is_dir():
        return False
    folder = _dataset_folder(path)
    if folder is not None:
        return _dataset_is_probes(folder)
    return bool(_probe_files(path))


def load_probe_set(path: str | Path, *, split: str | None = None) -> list[ProbeRow]:
    """The rows of a probe set given as a file, a folder or an export.

    Args:
        path: a ``.tsv`` / ``.jsonl`` probe file; a folder holding exactly one (a build
            folder's ``probes.tsv`` is preferred); a ``contrastkit export stereotype``
            folder (its ``saved/stereotype`` dataset) or a ``save_to_disk`` folder of a
            stereotype set. A dataset's rows come back with the columns they were
            exported with (the image reference as written, in ``image_ref``); when
            the images are embedded, :attr:`ProbeRow.image_ref` names the stored one.
        split: the split of a dataset dict (default: its only split, or ``test``).

    Raises:
        DataFormatError: a missing or malformed file or dataset, located.
    """
    path = Path(path)
    if not path.exists():
        raise DataFormatError(path, None, None, "no such file or folder")
    if path.is_file():
        return read_probes(path)
    folder = _dataset_folder(path)
    if folder is not None:
        return _dataset_rows(folder, split)
    if (path / PROBE_FILE).is_file():
        return read_probes(path / PROBE_FILE)
    files = _probe_files(path)
    if len(files) != 1:
        found = "no probe file" if not files else f"{len(files)} probe files"
        raise DataFormatError(
            path, None, None, f"folder holds {found}: name one .tsv / .jsonl probe file"
        )
    return read_probes(files[0])


def _dataset_rows(folder: Path, split: str | None) -> list[ProbeRow]:
    from datasets import ClassLabel

    loaded, split = load_saved_split(folder, split)
    columns = loaded.column_names
    sources = {name: ("image_ref" if name == "image" else name) for name in COLUMNS}
    for name, column in sources.items():
        if column not in columns and name not in OPTIONAL_COLUMNS:
            raise DataFormatError(folder, None, column, "the dataset has no such column")
    text_columns = [c for c in sources.values() if c in columns]
    labels = {
        c: feature.int2str
        for c in text_columns
        if isinstance(feature := loaded.features[c], ClassLabel)
    }
    embedded = "image" in columns and type(loaded.features["image"]).__name__ == "Image"
    rows = []
    for index, record in enumerate(loaded.select_columns(text_columns)):
        values: dict[str, Any] = {}
        for name, column in sources.items():
            value = record.get(column)
            if column in labels and value is not None:
                value = labels[column](value)
            values[name] = "" if value is None else str(value)
        row = ProbeRow(
            **values,
            source=str(folder),
            line=None,
            dataset_index=index if embedded else None,
            dataset_split=split if embedded else None,
        )
        try:
            check_probe_row(row, folder, None)
        except DataFormatError as exc:
            raise DataFormatError(folder, None, f"row {index} {exc.field}", exc.reason) from None
        rows.append(row)
    seen: set[str] = set()
    for index, row in enumerate(rows):
        if row.id in seen:
            raise DataFormatError(folder, None, f"row {index} id", f"duplicate id {row.id!r}")
        seen.add(row.id)
    return rows


# ---------------------------------------------------------------------- neutralisation


def _gender_terms() -> dict[str, str]:
    terms: dict[str, str] = {}
    for masculine, feminine, neutral in WORD_TABLE:
        terms[masculine] = neutral
        terms[feminine] = neutral
    return terms


EXTRA_GENDER_TERMS: Final[Mapping[str, str]] = MappingProxyType(
    {
        "mom": "parent",
        "mommy": "parent",
        "dad": "parent",
        "daddy": "parent",
        "grandfather": "grandparent",
        "grandmother": "grandparent",
        "grandpa": "grandparent",
        "grandma": "grandparent",
        "stepfather": "stepparent",
        "stepmother": "stepparent",
        "schoolboy": "schoolchild",
        "schoolgirl": "schoolchild",
        "gentlemen": "people",
        "ladies": "people",
        "sisters": "siblings",
        "brothers": "siblings",
        "himself": "themselves",
        "herself": "themselves",
        "bride": "spouse",
        "groom": "spouse",
        "fiance": "partner",
        "fiancee": "partner",
        "nephew": "nibling",
        "niece": "nibling",
        "uncle": "relative",
        "aunt": "relative",
    }
)
"""StereoSet gender targets outside GenSynth's Tab. 4, with the neutral word used for
them (contrastkit's choice, not the paper's): ``mommy -> parent``, ``schoolgirl ->
schoolchild``, ``herself -> themselves``, ``bride -> spouse`` ..."""

NEUTRAL_TERMS: Final[Mapping[str, str]] = MappingProxyType(
    {**_gender_terms(), **EXTRA_GENDER_TERMS}
)
"""The default target -> neutral term table, for the ``gender`` category (lower case).

Derived from the Table 4 word table of GenSynth (:data:`contrastkit.curation.
gender_words.WORD_TABLE`): every masculine and feminine word maps to the neutral word of
its row (``sister -> sibling``, ``mother -> parent``, ``she -> they``, ``her -> them``;
``his`` / ``her`` before a noun become ``their``), plus :data:`EXTRA_GENDER_TERMS`. The
other categories have no defaults (a neutral word for *Ethiopia* or *chess player* depends
on the sentence): give them with ``--neutral-terms FILE`` (:func:`read_neutral_terms`),
whose entries apply to every category and override these.
"""


def neutral_term(
    target: str, category: str, mapping: Mapping[str, str] | None = None
) -> str | None:
    """The neutral term for ``target`` (case-insensitive): the user's ``mapping`` first,
    then :data:`NEUTRAL_TERMS` for the gender category; ``None`` when there is none."""
    key = " ".join(target.split()).casefold()
    if mapping:
        for name, value in mapping.items():
            if " ".join(name.split()).casefold() == key:
                return value
    if category == "gender":
        return NEUTRAL_TERMS.get(key)
    return None


def _term_pattern(target: str) -> re.Pattern[str]:
    words = [re.escape(word) for word in target.split()]
    return re.compile(r"(?<!\w)" + r"\s+".join(words) + r"(?!\w)", re.IGNORECASE)


def neutralise(
    caption: str, target: str, category: str, mapping: Mapping[str, str] | None = None
) -> str:
    """``caption`` with every whole-word occurrence of ``target`` replaced by its neutral
    term (VLStereoSet Sec. 3.5, Fig. 2: *My sister is rude* -> *My sibling is rude*).

    The neutral term comes from :func:`neutral_term` (``mapping`` overrides the default
    :data:`NEUTRAL_TERMS`). Matching ignores case and the replacement takes the case of
    the word it replaces (*Sister* -> *Sibling*, *SISTER* -> *SIBLING*); only whole words
    match (*sisterhood* is kept). For the Tab. 4 pronouns ``his`` / ``her`` without a
    user mapping the GenSynth rule picks the form: ``their`` before a noun, else
    ``theirs`` / ``them`` (``hers`` -> ``theirs``). Only the target is replaced, as in
    the paper: other gendered words in the sentence stay.

    Returns:
        The neutralised caption, or ``""`` when the target has no neutral term or does not
        occur in the caption (such rows have no ``S'_s`` / ``S'_a``).
    """
    neutral = neutral_term(target, category, mapping)
    if neutral is None or not neutral.strip():
        return ""
    pattern = _term_pattern(target)
    if pattern.search(caption) is None:
        return ""
    pronoun = target.strip().casefold() if category == "gender" else ""
    user_given = neutral_term(target, "", mapping) is not None

    def replace(match: re.Match[str]) -> str:
        word = match.group(0)
        value = neutral
        if pronoun == "hers" and not user_given:
            value = "theirs"
        elif pronoun in ("his", "her") and not user_given:
            if is_determiner_use(caption, match.end()):
                value = "their"
            else:
                value = "theirs" if pronoun == "his" else "them"
        return match_case(value, word)

    return pattern.sub(replace, caption)


def read_neutral_terms(path: str | Path) -> dict[str, str]:
    """Read a user's neutral-term table: UTF-8 TSV lines ``target<TAB>neutral``.

    An optional header ``target<TAB>neutral`` is skipped, and so are blank lines and lines
    starting with ``#``. Targets are matched case-insensitively.

    Raises:
        DataFormatError: a line without exactly two fields, an empty value, or a target
            given twice (located).
    """
    path = Path(path)
    terms: dict[str, str] = {}
    lines: dict[str, int] = {}
    for number, text in text_lines(path):
        if not text.strip() or text.lstrip().startswith("#"):
            continue
        values = text.split("\t")
        if number == 1 and [v.strip().lower() for v in values] == ["target", "neutral"]:
            continue
        if len(values) != 2:
            raise DataFormatError(
                path,
                number,
                None,
                f"expected 2 tab-separated fields (target, neutral), found {len(values)}",
            )
        target, neutral = (" ".join(v.split()) for v in values)
        for name, value in (("target", target), ("neutral", neutral)):
            if not value:
                raise DataFormatError(path, number, name, "empty value")
        key = target.casefold()
        if key in lines:
            raise DataFormatError(
                path, number, "target", f"{target!r} is also given on line {lines[key]}"
            )
        lines[key] = number
        terms[target] = neutral
    return terms


def _field_names() -> tuple[str, ...]:  # keeps COLUMNS and the dataclass in step
    return tuple(f.name for f in fields(ProbeRow))[: len(COLUMNS)]


assert _field_names() == COLUMNS
