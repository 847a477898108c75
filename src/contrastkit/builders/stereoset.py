"""Build a VLStereoSet-style probe set from StereoSet and a table of verified images.

VLStereoSet (Zhou et al., 2022; seeds/002, Sec. 3.1-3.2) takes StereoSet's
intrasentence items (Nadeem et al., 2021) -- a target term, a context sentence with a
blank, and three sentences filling it with a stereotypical, an anti-stereotypical and
an unrelated attribute -- and pairs crowd-verified images with them: each image shows
either the stereotypical or the anti-stereotypical statement. The set is then balanced
"through down sampling to ensure that there are equal numbers of stereotypical and
anti-stereotypical images in each of the four categories" (Sec. 3.2; Table 1: 486
gender, 206 profession, 322 race, 14 religion, 1,028 images in all).

**Input 1, StereoSet.** The public ``dev.json`` / ``test.json`` layout::

    {"version": "...", "data": {"intrasentence": [
        {"id": "...", "target": "sister", "bias_type": "gender",
         "context": "My sister is BLANK.",
         "sentences": [{"sentence": "My sister is caring.", "id": "...",
                        "gold_label": "stereotype", "labels": [...]}, ...]}, ...]}}

Each item needs one sentence of each gold label (``stereotype``, ``anti-stereotype``,
``unrelated``) and a ``bias_type`` among gender / profession / race / religion;
``intersentence`` items are ignored. The attribute terms are recovered by diffing each
sentence with its context at ``BLANK``: the sentence must begin with the text before
the blank and end with the text after it (ignoring case, runs of spaces, and final
punctuation the sentence leaves out); what lies between is the term. A sentence that
does not line up is an error naming the item and sentence. The sentences themselves are
the captions ``S_s``, ``S_a``, ``S_i``.

**Input 2, the verified images.** A UTF-8 TSV with a header and the columns

================= =============================================================
``statement_id``  the StereoSet intrasentence item's ``id`` (or the ``id`` of one
                  of its sentences)
``image``         an http(s) URL, or a local file inside the table's folder (a
                  path relative to it, or an absolute path or ``file://`` URL of
                  a file in it); copied into the output folder
``label``         ``stereotype`` or ``anti-stereotype``: the statement the image
                  was verified to show
``annotator``     who verified it (optional column)
``licence``       the image's licence (optional column)
================= =============================================================

Errors name the file, line and field: a missing column, a wrong number of fields, an
empty value, a label outside the two, a statement ID the JSON does not hold, a bad URL,
a local image that does not exist or lies outside the table's folder (SECURITY.md), the
same image listed twice for one statement.

**Output.** ``OUT/probes.tsv`` (the probe-set format of :mod:`contrastkit.probes`; row
IDs ``<item id>-<n>``, ``n`` counting that item's images in table order, so an image
keeps its ID whatever the balancing drops) and ``OUT/build.json`` (parameters, counts
per category and label before and after balancing beside the paper's Table 1, rows
without a neutral form), and a copy of each local image under the name the table gives
it, relative to its folder (``OUT/images/00.jpg`` for ``images/00.jpg``), so that the
build folder holds every file its probe set names. Both files are rendered before
anything is written and written atomically: a failed build leaves them as they were.

**Balancing.** Per category, the larger of the two label groups is down-sampled to the
size of the smaller with a generator seeded by ``(seed, category)``; kept rows stay in
table order. ``balance=False`` keeps every row.

**Neutral captions** (``S'_s``, ``S'_a``; Sec. 3.5, Fig. 2) come from
:func:`contrastkit.probes.neutralise` with the default table for the gender category
(:data:`contrastkit.probes.NEUTRAL_TERMS`, from GenSynth's Table 4) extended by the
user's ``neutral_terms`` file; rows whose target has none get empty neutral captions and
are counted.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
import shutil
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Final, TypedDict

from contrastkit.builders.stereoset_json import Statement, attribute_term, read_stereoset
from contrastkit.config import require
from contrastkit.errors import ConfigError, DataFormatError
from contrastkit.io import atomic_path, atomic_write_text, check_writable
from contrastkit.probes import (
    CATEGORIES,
    LABELS,
    PROBE_FILE,
    ProbeRow,
    check_probe_row,
    neutralise,
    read_neutral_terms,
    text_lines,
)
from contrastkit.records import data_file

__all__ = [
    "BUILD_REPORT",
    "IMAGE_COLUMNS",
    "PAPER_TABLE1",
    "CategoryCounts",
    "Statement",
    "StereoSetConfig",
    "StereoSetParameters",
    "StereoSetReport",
    "StereoSetResult",
    "attribute_term",
    "build_stereoset",
    "read_stereoset",
]

BUILD_REPORT: Final[str] = "build.json"
"""The build report's name in the output folder."""

IMAGE_COLUMNS: Final[tuple[str, ...]] = ("statement_id", "image", "label", "annotator", "licence")
"""Columns of the verified-images table (``annotator`` and ``licence`` optional)."""

PAPER_TABLE1: Final[Mapping[str, int]] = {
    "gender": 486,
    "profession": 206,
    "race": 322,
    "religion": 14,
    "overall": 1028,
}
"""VLStereoSet Table 1: images per category after balancing, for reference."""

_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")


@dataclass(frozen=True)
class _Image:
    line: int
    statement: Statement
    image: str
    label: str
    annotator: str
    licence: str


def _rebase(image: str, table: Path, line: int) -> tuple[str, Path | None]:
    """The image reference as the output holds it, and its local file (``None`` for a
    URL): a local file must lie in the table's folder (:func:`data_file`); the output
    names it by its path relative to that folder, and the build copies it there
    (:func:`_copy_images`)."""
    scheme = _SCHEME.match(image)
    if scheme is not None and scheme.group(1).lower() != "file":
        return image, None
    local = data_file(table, line, "image", image)
    return local.relative_to(table.parent).as_posix(), local


def _copy_images(images: Mapping[str, Path], out: Path) -> None:
    """Copy each local image (its name in the output -> its file) into ``out``, so the
    build folder holds every file its probe set names (SECURITY.md: a probe set names
    files inside its own folder only)."""
    for name, source in images.items():
        target = out / name
        if name in (PROBE_FILE, BUILD_REPORT):
            raise DataFormatError(source, None, "image", f"an image may not be named {name}")
        if target.exists() and target.samefile(source):
            continue  # the build folder is the table's folder
        with atomic_path(target) as tmp:
            shutil.copyfile(source, tmp)


def _read_images(
    path: Path, statements: Mapping[str, Statement]
) -> list[tuple[_Image, str, Path | None]]:
    header: list[str] | None = None
    images: list[tuple[_Image, str, Path | None]] = []
    seen: dict[tuple[str, str], int] = {}
    for number, text in text_lines(path):
        if header is None:
            header = [name.strip() for name in text.split("\t")]
            for name in IMAGE_COLUMNS[:3]:
                if name not in header:
                    raise DataFormatError(path, 1, name, "missing column")
            unknown = [name for name in header if name not in IMAGE_COLUMNS]
            if unknown:
                raise DataFormatError(path, 1, unknown[0], "unknown column of an images table")
            continue
        if not text.strip():
            continue
        values = text.split("\t")
        if len(values) != len(header):
            raise DataFormatError(
                path,
                number,
                header[len(values)] if len(values) < len(header) else None,
                f"expected {len(header)} tab-separated fields, found {len(values)}",
            )
        record = {name: value.strip() for name, value in zip(header, values, strict=True)}
        for name in IMAGE_COLUMNS[:3]:
            if not record[name]:
                raise DataFormatError(path, number, name, "empty value")
        statement = statements.get(record["statement_id"])
        if statement is None:
            raise DataFormatError(
                path,
                number,
                "statement_id",
                f"{record['statement_id']!r} is not an intrasentence item or sentence ID of "
                "the StereoSet file",
            )
        if record["label"] not in LABELS:
            raise DataFormatError(
                path,
                number,
                "label",
                f"label {record['label']!r} is not one of {', '.join(LABELS)}",
            )
        key = (statement.id, record["image"])
        if key in seen:
            raise DataFormatError(
                path,
                number,
                "image",
                f"the same image is listed for item {statement.id!r} on line {seen[key]}",
            )
        seen[key] = number
        image = _Image(
            line=number,
            statement=statement,
            image=record["image"],
            label=record["label"],
            annotator=record.get("annotator", ""),
            licence=record.get("licence", ""),
        )
        reference, local = _rebase(record["image"], path, number)
        if local is not None and not local.is_file():
            raise DataFormatError(path, number, "image", f"image file not found: {local}")
        images.append((image, reference, local))
    if header is None:
        raise DataFormatError(path, None, None, "empty file: no header")
    return images


def _categories(value: str | Sequence[str] | None) -> tuple[str, ...]:
    if value is None:
        return CATEGORIES
    parts = value.split(",") if isinstance(value, str) else list(value)
    names = tuple(dict.fromkeys(p.strip() for p in parts if p.strip()))
    require(bool(names), "categories", f"name at least one of {', '.join(CATEGORIES)}")
    for name in names:
        require(
            name in CATEGORIES,
            "categories",
            f"unknown category {name!r}; one of {', '.join(CATEGORIES)}",
        )
    return names


@dataclass(frozen=True)
class StereoSetConfig:
    """What :func:`build_stereoset` builds.

    Attributes:
        stereoset: StereoSet's JSON (the intrasentence layout; module docstring).
        images: the verified-images TSV (``statement_id, image, label, annotator,
            licence``).
        out: the output folder (``probes.tsv``, ``build.json``).
        seed: seed of the per-category down-sampling.
        balance: down-sample so each category has as many stereotypical as
            anti-stereotypical images (Sec. 3.2); ``False`` keeps every image.
        neutral_terms: a ``target<TAB>neutral`` TSV extending (and overriding) the default
            neutral terms (:func:`contrastkit.probes.read_neutral_terms`).
        categories: the bias types to keep (a sequence or one comma-separated text);
            images of other items are skipped and counted.
    """

    stereoset: Path
    images: Path
    out: Path
    seed: int = 0
    balance: bool = True
    neutral_terms: Path | None = None
    categories: tuple[str, ...] = CATEGORIES

    def __post_init__(self) -> None:
        set_field = object.__setattr__
        set_field(self, "stereoset", Path(self.stereoset))
        set_field(self, "images", Path(self.images))
        set_field(self, "out", Path(self.out))
        if self.neutral_terms is not None:
            set_field(self, "neutral_terms", Path(self.neutral_terms))
        set_field(self, "categories", _categories(self.categories))
        require(isinstance(self.seed, int), "seed", f"must be an integer, not {self.seed!r}")
        for name in ("stereoset", "images"):
            path: Path = getattr(self, name)
            if path.exists() and not path.is_file():
                raise ConfigError(f"{name}: {path} is a folder; give the file")


def _count(rows: Sequence[ProbeRow], categories: Sequence[str]) -> dict[str, dict[str, int]]:
    counts = Counter((row.category, row.label) for row in rows)
    return {
        category: {label: counts[(category, label)] for label in LABELS}
        | {"total": sum(counts[(category, label)] for label in LABELS)}
        for category in categories
    }


class StereoSetParameters(TypedDict):
    """The inputs of a build, as ``build.json`` records them."""

    stereoset: str
    stereoset_sha256: str
    stereoset_version: str
    images: str
    images_sha256: str
    out: str
    seed: int
    balance: bool
    neutral_terms: str | None
    categories: list[str]


#: One category (or ``overall``) of the build's table (:meth:`StereoSetResult.table`).
CategoryCounts = TypedDict(
    "CategoryCounts",
    {
        "category": str,
        "stereotype": int,
        "anti-stereotype": int,
        "images": int,
        "before_balancing": int,
        "without_neutral": int,
        "paper_table1": int,
    },
)


class BalancingCounts(TypedDict):
    """Per category, the rows of each label and in all, before and after balancing."""

    before_balancing: dict[str, dict[str, int]]
    after_balancing: dict[str, dict[str, int]]


class StereoSetReport(TypedDict):
    """The build report, ``build.json`` (:meth:`StereoSetResult.report`)."""

    parameters: StereoSetParameters
    counts: BalancingCounts
    table: list[CategoryCounts]
    paper_table1: dict[str, int]
    paper_table1_note: str
    without_neutral: dict[str, int]
    skipped_other_categories: int
    stereoset_items_unusable: list[str]
    rows: int
    outputs: list[str]


@dataclass
class StereoSetResult:
    """What a StereoSet build kept and wrote.

    Attributes:
        rows: the probe rows written (after balancing), in images-table order.
        before: per category, ``{"stereotype": n, "anti-stereotype": n, "total": n}``
            before balancing.
        after: the same after balancing.
        without_neutral: per category, the written rows without neutral captions.
        skipped_categories: images of items outside ``categories``, left out.
        unusable_items: IDs of StereoSet items whose sentences do not line up with their
            context (no image of the build uses them).
        parameters: the inputs (paths, sha256, seed, balance ...).
        written: the files written.
    """

    rows: list[ProbeRow]
    before: dict[str, dict[str, int]]
    after: dict[str, dict[str, int]]
    without_neutral: dict[str, int]
    skipped_categories: int
    parameters: StereoSetParameters
    written: list[Path] = field(default_factory=list)
    unusable_items: list[str] = field(default_factory=list)

    @property
    def probes(self) -> Path:
        """The probe TSV written."""
        return Path(self.parameters["out"]) / PROBE_FILE

    def table(self) -> list[CategoryCounts]:
        """One entry per category and one ``overall``: counts before and after balancing,
        rows without a neutral form, and the paper's Table 1 count."""
        entries: list[CategoryCounts] = []
        for category in [*self.after, "overall"]:
            if category == "overall":
                before = {k: sum(c[k] for c in self.before.values()) for k in (*LABELS, "total")}
                after = {k: sum(c[k] for c in self.after.values()) for k in (*LABELS, "total")}
                neutral = sum(self.without_neutral.values())
            else:
                before, after = self.before[category], self.after[category]
                neutral = self.without_neutral[category]
            entries.append(
                {
                    "category": category,
                    "stereotype": after["stereotype"],
                    "anti-stereotype": after["anti-stereotype"],
                    "images": after["total"],
                    "before_balancing": before["total"],
                    "without_neutral": neutral,
                    "paper_table1": PAPER_TABLE1[category],
                }
            )
        return entries

    def report(self) -> StereoSetReport:
        """The build report (``build.json``) as JSON-ready data."""
        return {
            "parameters": self.parameters,
            "counts": {"before_balancing": self.before, "after_balancing": self.after},
            "table": self.table(),
            "paper_table1": dict(PAPER_TABLE1),
            "paper_table1_note": (
                "VLStereoSet (Zhou et al., 2022) Table 1: images per category of the "
                "published set, for reference; the counts here are this build's"
            ),
            "without_neutral": self.without_neutral,
            "skipped_other_categories": self.skipped_categories,
            "stereoset_items_unusable": self.unusable_items,
            "rows": len(self.rows),
            "outputs": [p.name for p in self.written],
        }


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def build_stereoset(config: StereoSetConfig) -> StereoSetResult:
    """Assemble a VLStereoSet-style probe set (Sec. 3.2) and write it.

    Reads and checks both inputs, recovers the attribute terms, makes the neutral
    captions, balances each category by seeded down-sampling (unless
    ``config.balance`` is off), then writes ``probes.tsv`` and ``build.json``.

    Raises:
        DataFormatError: a malformed StereoSet file, images table or neutral-terms file
            (located); nothing is written.
        ResourceError: the output folder cannot be written.
    """
    statements, version = read_stereoset(config.stereoset, strict=False)
    by_id: dict[str, Statement] = {}
    for statement in statements:
        by_id[statement.id] = statement
        for sentence_id in statement.sentence_ids:
            by_id.setdefault(sentence_id, statement)
    mapping = read_neutral_terms(config.neutral_terms) if config.neutral_terms else None
    images = _read_images(config.images, by_id)

    rows: list[ProbeRow] = []
    counters: Counter[str] = Counter()
    skipped = 0
    files: dict[str, Path] = {}
    for image, reference, local in images:
        statement = image.statement
        counters[statement.id] += 1
        if statement.category not in config.categories:
            skipped += 1
            continue
        if statement.problem is not None:
            raise DataFormatError(
                config.images,
                image.line,
                "statement_id",
                f"StereoSet item {statement.id!r} cannot be used: {statement.problem}",
            ) from statement.problem
        s, a, i = statement.sentences
        neutral_s = neutralise(s, statement.target, statement.category, mapping)
        neutral_a = neutralise(a, statement.target, statement.category, mapping)
        if not (neutral_s and neutral_a):
            neutral_s = neutral_a = ""
        row = ProbeRow(
            id=f"{statement.id}-{counters[statement.id]}",
            image=reference,
            category=statement.category,
            target=statement.target,
            context=statement.context,
            stereotype_term=statement.terms[0],
            anti_stereotype_term=statement.terms[1],
            unrelated_term=statement.terms[2],
            stereotype_caption=s,
            anti_stereotype_caption=a,
            unrelated_caption=i,
            label=image.label,
            neutral_stereotype_caption=neutral_s,
            neutral_anti_stereotype_caption=neutral_a,
            annotator=image.annotator,
            licence=image.licence,
            source=str(config.images),
            line=image.line,
        )
        check_probe_row(row)  # a term or caption that breaks the format, located
        rows.append(row)
        if local is not None:
            files[reference] = local

    before = _count(rows, config.categories)
    kept = _balance(rows, config.seed) if config.balance else rows
    written_at = str(config.out / PROBE_FILE)
    kept = [replace(row, source=written_at, line=None) for row in kept]
    after = _count(kept, config.categories)
    without_neutral = {
        category: sum(1 for row in kept if row.category == category and not row.has_neutral)
        for category in config.categories
    }
    result = StereoSetResult(
        rows=kept,
        before=before,
        after=after,
        without_neutral=without_neutral,
        skipped_categories=skipped,
        unusable_items=[st.id for st in statements if st.problem is not None],
        parameters={
            "stereoset": str(config.stereoset),
            "stereoset_sha256": _sha256(config.stereoset),
            "stereoset_version": version,
            "images": str(config.images),
            "images_sha256": _sha256(config.images),
            "out": str(config.out),
            "seed": config.seed,
            "balance": config.balance,
            "neutral_terms": str(config.neutral_terms) if config.neutral_terms else None,
            "categories": list(config.categories),
        },
    )
    from contrastkit.probes import write_probes  # renders and checks before writing

    check_writable(config.out, "the build folder")
    result.written = [config.out / PROBE_FILE, config.out / BUILD_REPORT]
    report = json.dumps(result.report(), indent=2, ensure_ascii=False) + "\n"
    _copy_images({row.image: files[row.image] for row in kept if row.image in files}, config.out)
    write_probes(kept, config.out / PROBE_FILE)
    atomic_write_text(config.out / BUILD_REPORT, report)
    return result


def _balance(rows: Sequence[ProbeRow], seed: int) -> list[ProbeRow]:
    """Down-sample per category to equal stereotype / anti-stereotype counts (Sec. 3.2)."""
    keep: set[int] = set()
    for category in CATEGORIES:
        groups = {
            label: [
                n for n, row in enumerate(rows) if row.category == category and row.label == label
            ]
            for label in LABELS
        }
        size = min(len(group) for group in groups.values())
        for label, group in groups.items():
            rng = random.Random(f"{seed}:{category}:{label}")
            keep.update(rng.sample(group, size))
    return [row for n, row in enumerate(rows) if n in keep]
