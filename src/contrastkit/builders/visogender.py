"""Build balanced VisoGender-style URL datasets from a pool of candidate images.

Balance follows VisoGender (Hall et al., 2023, arXiv:2306.12424, Sec. 3.2-3.3, Tab. 1):
per occupation, the occupation-object (OO) set holds ``n`` images of each perceived
gender (M, F) and the occupation-participant (OP) set ``n`` of each pair (MM, MF, FM,
FF), ``n = 5`` in the paper. As in the paper, only occupations with a full set of images
are included ("we mitigate effects of imbalance across genders by only including
occupations with a full set of images"); ``keep_incomplete=True`` keeps the others.

Candidate pool: a CSV, TSV, JSONL or JSON file, one candidate image per record, with the
fields

==================== ==========================================================
``url``              image URL (required)
``occupation``       an occupation of the taxonomy (required)
``context``          ``OP`` or ``OO`` (required)
``occupation_gender`` perceived gender of the occupation: masculine / feminine
``participant_gender`` perceived gender of the participant (OP only)
``licence_ok``       yes / no: the image's licence allows the use (required)
``annotator``        who labelled it (optional)
``source``           where it was found (optional; kept in the build report)
``participant`` /    optional; when given they must equal the taxonomy's noun
``object``
==================== ==========================================================

Selection is deterministic: unlicensed candidates are skipped; of candidates that share
a URL, exactly or canonically (:func:`contrastkit.curation.dedup.canonical_url`), the
first in file order is kept; each cell is then sampled with its own generator seeded by
``(seed, occupation, context, cell)``, so adding candidates to one cell never changes
another's selection. Row IDs are ``{context}_{hash}`` with the hash taken from the
canonical URL, so an image keeps its ID across rebuilds.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypedDict

from contrastkit.config import require
from contrastkit.curation.dedup import canonical_url
from contrastkit.errors import ConfigError, DataFormatError
from contrastkit.io import atomic_write_text, check_writable
from contrastkit.records import Record, parse_bool, read_records
from contrastkit.schema import Context, Gender, VisoGenderRow
from contrastkit.taxonomy import Taxonomy, load_taxonomy
from contrastkit.text import table_header, table_row
from contrastkit.tsv import render_visogender_tsv

__all__ = [
    "DEFAULT_PER_CELL",
    "BuildParameters",
    "BuildReport",
    "BuildResult",
    "BuildVisoGenderConfig",
    "Candidate",
    "Shortfall",
    "SkippedDuplicate",
    "build_visogender",
    "output_name",
    "read_candidates",
]

DEFAULT_PER_CELL = 5
_ALIASES = {
    "license_ok": "licence_ok",
    "occupation_perceived_gender": "occupation_gender",
    "participant_perceived_gender": "participant_gender",
}


def output_name(context: Context) -> str:
    """File name of the built TSV of ``context``: ``visogender_OP.tsv`` / ``visogender_OO.tsv``."""
    return f"visogender_{context.value}.tsv"


@dataclass(frozen=True)
class Candidate:
    """One validated candidate image from the pool."""

    line: int | None
    url: str
    occupation: str
    context: Context
    occupation_gender: Gender
    participant_gender: Gender | None
    licensed: bool
    annotator: str
    source: str

    @property
    def cell(self) -> str:
        """``M``/``F`` for OO, ``MM``/``MF``/``FM``/``FF`` for OP."""
        second = self.participant_gender.short if self.participant_gender else ""
        return self.occupation_gender.short + second


def _candidate(record: Record, taxonomy: Taxonomy) -> Candidate:
    values = {_ALIASES.get(key, key): value for key, value in record.values.items()}
    record = Record(record.path, record.line, values)
    for required in ("url", "occupation", "context", "occupation_gender", "licence_ok"):
        if required not in values:
            raise record.error(required, "missing field")
    url = record.get("url")
    if not url:
        raise record.error("url", "empty URL")
    if any(ch.isspace() for ch in url):
        raise record.error("url", f"URL contains whitespace: {url!r}")
    try:
        context = Context.parse(record.get("context"))
    except ValueError as exc:
        raise record.error("context", str(exc)) from exc
    occupation_name = record.get("occupation")
    occupation = taxonomy.get(occupation_name)
    if occupation is None:
        raise record.error(
            "occupation",
            f"unknown occupation {occupation_name!r}; add it to a taxonomy file and pass "
            "--taxonomy FILE",
        )
    try:
        occupation_gender = Gender.parse_label(record.get("occupation_gender"))
    except ValueError as exc:
        raise record.error("occupation_gender", str(exc)) from exc
    participant_gender: Gender | None = None
    if context is Context.OP:
        try:
            participant_gender = Gender.parse_label(record.get("participant_gender"))
        except ValueError as exc:
            raise record.error("participant_gender", str(exc)) from exc
    elif record.get("participant_gender"):
        raise record.error("participant_gender", "OO candidates have no participant")
    for kind in ("participant", "object"):
        given = record.get(kind)
        expected = occupation.participant if kind == "participant" else occupation.object
        if given and given != expected:
            raise record.error(
                kind,
                f"{given!r} differs from the taxonomy's {kind} {expected!r} for "
                f"{occupation_name}; captions use the taxonomy's noun",
            )
    return Candidate(
        line=record.line,
        url=url,
        occupation=occupation_name,
        context=context,
        occupation_gender=occupation_gender,
        participant_gender=participant_gender,
        licensed=parse_bool(record, "licence_ok"),
        annotator=record.get("annotator"),
        source=record.get("source"),
    )


def read_candidates(path: str | Path, taxonomy: Taxonomy) -> list[Candidate]:
    """Read and validate every candidate of a pool file.

    Raises:
        DataFormatError: naming file, line and field of the first bad candidate (missing
            field, empty URL, unknown context, occupation or gender label, a noun that
            disagrees with the taxonomy, a licence flag that is not yes/no).
    """
    candidates = [_candidate(record, taxonomy) for record in read_records(path, single_line=True)]
    if not candidates:
        raise DataFormatError(path, None, None, "no candidates in the file")
    return candidates


@dataclass(frozen=True)
class Shortfall:
    """A cell that has fewer usable candidates than the balance needs."""

    occupation: str
    context: str
    cell: str
    available: int
    needed: int

    @property
    def short_by(self) -> int:
        """How many more candidates the cell needs."""
        return self.needed - self.available


class SkippedDuplicate(TypedDict):
    """A licensed candidate left out as a duplicate of an earlier one: ``exact`` (the same
    URL) or ``canonical`` (the same URL once normalised)."""

    line: int | None
    duplicate_of_line: int | None
    kind: str
    url: str


class RowSource(TypedDict):
    """Where a built row came from: its IDX, the candidate's line and ``source``."""

    idx: str
    line: int | None
    source: str


class BuildParameters(TypedDict):
    """The inputs of a build, as its report records them."""

    candidates: str
    candidates_sha256: str
    per_cell: int
    seed: int
    contexts: list[str]
    occupations_requested: list[str]
    keep_incomplete: bool
    taxonomy: list[str]


class ShortfallRecord(TypedDict):
    """A :class:`Shortfall` in the build report."""

    occupation: str
    context: str
    cell: str
    available: int
    needed: int
    short_by: int


class BuildCounts(TypedDict):
    """The rows selected per context, and the candidates skipped."""

    selected: dict[str, int]
    skipped_unlicensed: int
    skipped_duplicates: int


class BuildReport(TypedDict):
    """The build report (``build_report.json``, :meth:`BuildResult.report`)."""

    parameters: BuildParameters
    counts: BuildCounts
    complete: bool
    occupations_included: list[str]
    occupations_excluded: list[str]
    shortfalls: list[ShortfallRecord]
    skipped_unlicensed_lines: list[int | None]
    skipped_duplicates: list[SkippedDuplicate]
    rows: list[RowSource]
    outputs: list[str]


@dataclass
class BuildResult:
    """What a build selected, skipped and wrote."""

    rows: dict[Context, list[VisoGenderRow]]
    shortfalls: list[Shortfall]
    included: list[str]
    excluded: list[str]
    skipped_unlicensed: list[int | None]
    skipped_duplicates: list[SkippedDuplicate]
    provenance: list[RowSource]
    parameters: BuildParameters
    written: list[Path] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        """Whether every requested cell was filled."""
        return not self.shortfalls

    @property
    def tables(self) -> tuple[Path, ...]:
        """The official-format TSVs written (OP, then OO), without the reports."""
        return tuple(path for path in self.written if path.suffix == ".tsv")

    def report(self) -> BuildReport:
        """The build report as JSON-ready data."""
        return {
            "parameters": self.parameters,
            "counts": {
                "selected": {c.value: len(rows) for c, rows in self.rows.items()},
                "skipped_unlicensed": len(self.skipped_unlicensed),
                "skipped_duplicates": len(self.skipped_duplicates),
            },
            "complete": self.complete,
            "occupations_included": self.included,
            "occupations_excluded": self.excluded,
            "shortfalls": [
                {
                    "occupation": s.occupation,
                    "context": s.context,
                    "cell": s.cell,
                    "available": s.available,
                    "needed": s.needed,
                    "short_by": s.short_by,
                }
                for s in self.shortfalls
            ],
            "skipped_unlicensed_lines": self.skipped_unlicensed,
            "skipped_duplicates": self.skipped_duplicates,
            "rows": self.provenance,
            "outputs": [p.name for p in self.written],
        }

    def report_markdown(self) -> str:
        """The build report as markdown a person reads."""
        p = self.parameters
        lines = [
            "# VisoGender-style build report",
            "",
            f"- candidates: `{p['candidates']}` (sha256 `{p['candidates_sha256'][:16]}`)",
            f"- per cell: {p['per_cell']}, seed: {p['seed']}, contexts: {', '.join(p['contexts'])}",
            "- selected: "
            + ", ".join(f"{c.value} {len(rows)} rows" for c, rows in self.rows.items()),
            f"- skipped: {len(self.skipped_unlicensed)} unlicensed, "
            f"{len(self.skipped_duplicates)} duplicates",
            f"- occupations included ({len(self.included)}): {', '.join(self.included) or '-'}",
            f"- occupations excluded ({len(self.excluded)}): {', '.join(self.excluded) or '-'}",
            "",
        ]
        if self.shortfalls:
            lines += [
                "## Cells that fall short",
                "",
                *table_header(
                    ["occupation", "context", "cell", "available", "needed", "short by"],
                    "lllrrr",
                ),
            ]
            lines += [
                table_row([s.occupation, s.context, s.cell, s.available, s.needed, s.short_by])
                for s in self.shortfalls
            ]
        else:
            lines.append("Every requested cell is full.")
        return "\n".join(lines) + "\n"


def _row_id(context: Context, url: str) -> str:
    digest = hashlib.sha256(canonical_url(url).encode("utf-8")).hexdigest()
    return f"{context.value}_{digest[:12]}"


def _requested_occupations(
    occupations: tuple[str, ...] | str | None, candidates: list[Candidate], taxonomy: Taxonomy
) -> list[str]:
    if occupations == "all":
        return taxonomy.names
    if occupations is None:
        present = {c.occupation for c in candidates}
        return [name for name in taxonomy.names if name in present]
    names = [occupations] if isinstance(occupations, str) else list(occupations)
    unknown = [name for name in names if taxonomy.get(name) is None]
    if unknown:
        raise ConfigError(
            f"occupations: unknown occupation {unknown[0]!r}; known: "
            f"{', '.join(taxonomy.names)}. Add your own with a taxonomy file (--taxonomy FILE)"
        )
    return sorted(set(names), key=taxonomy.position)


def _paths(value: object) -> tuple[Path, ...]:
    """One path or several, as a tuple of paths (a lone string is one path)."""
    if isinstance(value, str | Path):
        return (Path(value),)
    if not isinstance(value, Iterable):
        raise ConfigError(f"taxonomy: expected a Taxonomy or paths, not {value!r}")
    return tuple(Path(p) for p in value)


def _contexts(value: str | Context | Sequence[str | Context]) -> tuple[Context, ...]:
    parts = value.split(",") if isinstance(value, str) else list(value)
    try:
        contexts = [Context.parse(p) if isinstance(p, str) else Context(p) for p in parts
                    if not isinstance(p, str) or p.strip()]  # fmt: skip
    except ValueError as error:
        raise ConfigError(f"contexts: {error}") from error
    require(bool(contexts), "contexts", "needs at least one of OP, OO")
    return tuple(dict.fromkeys(contexts))


def _occupations(value: str | Sequence[str] | None) -> tuple[str, ...] | str | None:
    if value is None:
        return None
    if isinstance(value, str):
        if value.strip() == "all":
            return "all"
        value = value.split(",")
    names = tuple(name.strip() for name in value if name.strip())
    require(bool(names), "occupations", "name at least one occupation, or 'all'")
    return names


@dataclass(frozen=True)
class BuildVisoGenderConfig:
    """What :func:`build_visogender` builds.

    Attributes:
        candidates: the candidate pool (see the module docstring for its fields).
        out: where ``visogender_OP.tsv``, ``visogender_OO.tsv``, ``build_report.json``
            and ``build_report.md`` are written, each atomically.
        taxonomy: a :class:`~contrastkit.taxonomy.Taxonomy`, or files of extra
            occupations (CSV, TSV, JSONL, JSON) that extend the built-in one.
        per_cell: images per gender cell and occupation (``n``; 5 in the paper).
        seed: seed of the per-cell sampling.
        contexts: which scene types to build: ``Context`` values or ``"OP"`` / ``"OO"``,
            or one comma-separated text (``"OP,OO"``).
        occupations: ``None`` for the occupations present in the pool, ``"all"`` for
            every taxonomy occupation, or names (a sequence, or one comma-separated
            text).
        keep_incomplete: also write occupations whose cells fall short (unbalanced).
        strict: with any shortfall, write only the reports, leaving earlier TSVs in place.
    """

    candidates: Path
    out: Path
    taxonomy: Taxonomy | tuple[Path, ...] = ()
    per_cell: int = DEFAULT_PER_CELL
    seed: int = 0
    contexts: tuple[Context, ...] = (Context.OP, Context.OO)
    occupations: tuple[str, ...] | str | None = None
    keep_incomplete: bool = False
    strict: bool = False

    def __post_init__(self) -> None:
        set_field = object.__setattr__
        set_field(self, "candidates", Path(self.candidates))
        set_field(self, "out", Path(self.out))
        if not isinstance(self.taxonomy, Taxonomy):
            set_field(self, "taxonomy", _paths(self.taxonomy))
        require(self.per_cell >= 1, "per_cell", f"must be at least 1, not {self.per_cell}")
        set_field(self, "contexts", _contexts(self.contexts))
        set_field(self, "occupations", _occupations(self.occupations))


def build_visogender(config: BuildVisoGenderConfig) -> BuildResult:
    """Select balanced OP and OO sets from a candidate pool and write them.

    The pool is read and checked first; the output folder is then checked for
    writability before anything is written.

    Returns:
        The result; ``result.written`` lists the files written.

    Raises:
        DataFormatError: if the pool (or a taxonomy file) is malformed; nothing is
            written then.
        ConfigError: if an occupation asked for is not in the taxonomy.
        ResourceError: if the output folder cannot be written.
    """
    taxonomy = (
        config.taxonomy
        if isinstance(config.taxonomy, Taxonomy)
        else load_taxonomy(list(config.taxonomy) or None)
    )
    candidates_path, out_dir = config.candidates, config.out
    per_cell, seed, contexts = config.per_cell, config.seed, config.contexts
    keep_incomplete = config.keep_incomplete
    candidates = read_candidates(candidates_path, taxonomy)
    requested = _requested_occupations(config.occupations, candidates, taxonomy)

    unlicensed = [c.line for c in candidates if not c.licensed]
    kept_by_url: dict[str, Candidate] = {}
    kept_by_key: dict[str, Candidate] = {}
    duplicates: list[SkippedDuplicate] = []
    pools: dict[tuple[str, Context, str], list[Candidate]] = defaultdict(list)
    for candidate in candidates:
        if not candidate.licensed:
            continue
        key = canonical_url(candidate.url)
        earlier = kept_by_url.get(candidate.url) or kept_by_key.get(key)
        if earlier is not None:
            duplicates.append(
                {
                    "line": candidate.line,
                    "duplicate_of_line": earlier.line,
                    "kind": "exact" if earlier.url == candidate.url else "canonical",
                    "url": candidate.url,
                }
            )
            continue
        kept_by_url[candidate.url] = candidate
        kept_by_key[key] = candidate
        pools[(candidate.occupation, candidate.context, candidate.cell)].append(candidate)

    selected: dict[tuple[str, Context, str], list[Candidate]] = {}
    shortfalls: list[Shortfall] = []
    for occupation in requested:
        for context in contexts:
            for cell in context.cells:
                pool = pools.get((occupation, context, cell), [])
                rng = random.Random(f"{seed}:{occupation}:{context.value}:{cell}")
                chosen = rng.sample(pool, min(per_cell, len(pool)))
                selected[(occupation, context, cell)] = sorted(
                    chosen, key=lambda c: (c.line or 0, c.url)
                )
                if len(pool) < per_cell:
                    shortfalls.append(
                        Shortfall(occupation, context.value, cell, len(pool), per_cell)
                    )
    short = {s.occupation for s in shortfalls}
    included = [o for o in requested if keep_incomplete or o not in short]
    excluded = [o for o in requested if o not in included]

    rows: dict[Context, list[VisoGenderRow]] = {context: [] for context in contexts}
    provenance: list[RowSource] = []
    for occupation in included:
        definition = taxonomy[occupation]
        for context in contexts:
            for cell in context.cells:
                for candidate in selected[(occupation, context, cell)]:
                    row = VisoGenderRow(
                        idx=_row_id(context, candidate.url),
                        context=context,
                        sector=definition.sector,
                        specialisation=definition.specialisation,
                        occupation=occupation,
                        participant=definition.participant if context is Context.OP else None,
                        object=definition.object if context is Context.OO else None,
                        url=candidate.url,
                        licence="Yes",
                        occupation_gender=candidate.occupation_gender,
                        participant_gender=candidate.participant_gender,
                        annotator=candidate.annotator,
                    )
                    rows[context].append(row)
                    provenance.append(
                        {"idx": row.idx, "line": candidate.line, "source": candidate.source}
                    )

    result = BuildResult(
        rows=rows,
        shortfalls=shortfalls,
        included=included,
        excluded=excluded,
        skipped_unlicensed=unlicensed,
        skipped_duplicates=duplicates,
        provenance=provenance,
        parameters={
            "candidates": str(candidates_path),
            "candidates_sha256": hashlib.sha256(candidates_path.read_bytes()).hexdigest(),
            "per_cell": per_cell,
            "seed": seed,
            "contexts": [c.value for c in contexts],
            "occupations_requested": requested,
            "keep_incomplete": keep_incomplete,
            "taxonomy": taxonomy.sources,
        },
    )
    check_writable(out_dir, "the build folder")  # quick: the pool is read, nothing written
    # Render everything first: a failure here leaves the output folder untouched.
    outputs: dict[Path, str] = {}
    if not (config.strict and shortfalls):
        for context, context_rows in rows.items():
            outputs[out_dir / output_name(context)] = render_visogender_tsv(context_rows, context)
    result.written = [*outputs, out_dir / "build_report.json", out_dir / "build_report.md"]
    outputs[out_dir / "build_report.json"] = json.dumps(result.report(), indent=2) + "\n"
    outputs[out_dir / "build_report.md"] = result.report_markdown()
    for path, text in outputs.items():
        atomic_write_text(path, text)
    return result
