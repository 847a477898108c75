"""Hostile strings through every reader and every printer: a located error or a clean
result, never a traceback.

Generated strings mix rich markup (``[/b]``, ``[bold``), control characters (ESC, NUL,
BEL, CR), odd Unicode (RTL overrides and isolates, combining marks, U+2028, a byte-order
mark, lone surrogates written as the invalid bytes they stand for) and very long fields
(about 100,000 characters). They go into official TSVs, candidate pools and taxonomy
files in every table format, and through ``validate``, ``build visogender``, ``taxonomy
show`` and ``urls check`` (whose URLs all point at a refused loopback address, so nothing
is fetched).

A reader may only raise :class:`~contrastkit.errors.DataFormatError` naming the file; a
command may only exit 0, 1 or 2, with no traceback and no exception but its exit.
"""

from __future__ import annotations

import csv
import io
import json
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from contrastkit.builders.visogender import read_candidates
from contrastkit.cli import app
from contrastkit.curation.validation import validate_files
from contrastkit.errors import DataFormatError
from contrastkit.records import read_records
from contrastkit.schema import OO_COLUMNS, OP_COLUMNS
from contrastkit.taxonomy import load_taxonomy
from contrastkit.tsv import parse_visogender_tsv, read_tsv_document, read_visogender_tsv

runner = CliRunner()
TAXONOMY = load_taxonomy()

PIECES = [
    "[/b]", "[bold", "[/]", "[link=file:///etc/passwd]x[/link]", "[red]", "]", "[",
    "\x1b[31m", "\x1b]0;title\x07", "\x00", "\x07", "\x08", "\r", "\n", "\t", "\x0b", "\x0c",
    "\x7f", "\x85", "\x9b",
    "\u202e", "\u2066", "\u2069", "\u200f", "\u061c", "\u2028", "\u2029", "\ufeff",
    "e\u0301", "\u0301\u0301\u0301", "漢字", "😀", "\U0010ffff",
    "\udcff", "\udc80", "\ud800",
    '"', "'", ",", ";", "\\", "%s", "{0}", "{}", "<script>", "../", "http://x/[/b]",
    "masculine", "feminine", "Yes", "doctor", "OO_1", "OP_1",
]  # fmt: skip

short = st.lists(
    st.one_of(st.sampled_from(PIECES), st.text(max_size=4)), min_size=0, max_size=6
).map("".join)
long = st.builds(lambda piece, n: (piece or "x") * n, short, st.integers(20_000, 100_000)).map(
    lambda text: text[:100_000]
)
hostile = st.one_of(short, short, short, long)

FAST = settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def to_bytes(text: str) -> bytes:
    """The bytes a careless editor might save: lone surrogates become invalid UTF-8."""
    return text.encode("utf-8", "surrogatepass")


def fresh(name: str) -> Path:
    return Path(tempfile.mkdtemp(prefix="hostile-")) / name


def located(path: Path, call: Callable[[], Any]) -> Any:
    """``call()``'s result, or None when it raised a DataFormatError naming ``path``."""
    try:
        return call()
    except DataFormatError as error:
        assert error.path == str(path), (error.path, str(path))
        assert error.reason
        return None


def exited_cleanly(args: list[str]) -> None:
    result = runner.invoke(app, args, env={"COLUMNS": "120"})
    assert result.exit_code in (0, 1, 2), (result.exit_code, result.output[-2000:])
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(
        result.exception
    )
    assert "Traceback" not in result.output
    for char in ("\x1b", "\x00", "\x07", "\u202e", "\u2066"):  # never sent to the terminal
        assert char not in result.output, (char, result.output[-2000:])


# -- official TSVs ---------------------------------------------------------------------------


def tsv_text(fields: list[str], op: bool) -> str:
    columns = OP_COLUMNS if op else OO_COLUMNS
    genders = ["masculine", "feminine"]
    lines = ["\t".join(columns)]
    for n, value in enumerate(fields):
        row = {
            "IDX": f"{'OP' if op else 'OO'}_{n}{value}",
            "Sector": "medical",
            "Specialisation": value,
            "Occupation": "doctor" if n % 2 else value or "doctor",
            "Participant": "patient" + value,
            "Object": value or "clipboard",
            "URL type (Type NA if can't find)": f"http://127.0.0.1:9/{n}{value}",
            "Licence": value,
            "LICENSE OK?": "Yes",
            "Occupation_perceived_gender": genders[n % 2] if n % 3 else value,
            "Participant_perceived_gender": genders[(n // 2) % 2],
            "Error codes": value,
            "Annotator": value,
        }
        lines.append("\t".join(row[column] for column in columns))
    return "\n".join(lines) + "\n"


@pytest.mark.slow
@FAST
@given(fields=st.lists(hostile, min_size=1, max_size=4), op=st.booleans(), bom=st.booleans())
def test_official_tsv_readers(fields: list[str], op: bool, bom: bool) -> None:
    path = fresh("data.tsv")
    path.write_bytes((b"\xef\xbb\xbf" if bom else b"") + to_bytes(tsv_text(fields, op)))
    table = located(path, lambda: read_visogender_tsv(path))
    document = located(path, lambda: read_tsv_document(path))
    assert (table is None) == (document is None)
    if document is not None:
        assert document.to_bytes() == path.read_bytes()  # every byte kept
    stream = located(path, lambda: parse_visogender_tsv(path))
    if stream is not None:
        located(path, lambda: list(stream.rows))
    report = validate_files([path], TAXONOMY, max_findings=5)
    assert all(len(f.message) <= 1000 for f in report.findings)
    assert report.to_text() and json.dumps(report.to_dict())


@FAST
@given(raw=hostile)
def test_any_bytes_as_a_tsv(raw: str) -> None:
    path = fresh("raw.tsv")
    path.write_bytes(to_bytes(raw))
    located(path, lambda: read_visogender_tsv(path))
    located(path, lambda: read_tsv_document(path))
    validate_files([path], max_findings=3)


# -- tables: candidate pools and taxonomy files --------------------------------------------

CANDIDATE_FIELDS = ["url", "occupation", "context", "occupation_gender", "participant_gender",
                    "licence_ok", "annotator", "source"]  # fmt: skip
TAXONOMY_FIELDS = ["occupation", "sector", "specialisation", "participant", "object"]


def write_table(path: Path, header: list[str], rows: list[list[str]]) -> None:
    """``rows`` in the format of ``path``'s suffix (CSV, TSV, JSONL or JSON)."""
    if path.suffix in (".csv", ".tsv"):
        buffer = io.StringIO(newline="")
        writer = csv.writer(buffer, delimiter="," if path.suffix == ".csv" else "\t")
        writer.writerow(header)
        writer.writerows(rows)
        path.write_bytes(to_bytes(buffer.getvalue()))
    elif path.suffix == ".jsonl":
        lines = [json.dumps(dict(zip(header, row, strict=True))) for row in rows]
        path.write_text("\n".join(lines) + "\n")
    else:
        path.write_text(json.dumps([dict(zip(header, row, strict=True)) for row in rows]))


def candidate_rows(values: list[str]) -> list[list[str]]:
    """A valid candidate with ``values[0]`` in its free-text fields (it reaches the TSVs),
    then candidates with hostile values anywhere."""
    rows = [["http://127.0.0.1:9/0", "doctor", "OO", "masculine", "", "yes", values[0],
             values[0]]]  # fmt: skip
    for n, value in enumerate(values[1:], start=1):
        context = ("OO", "OP", value)[n % 3]
        rows.append([f"http://127.0.0.1:9/{n}{value}", ("doctor", "nurse", value)[n % 3],
                     context, ("masculine", value)[n % 2],
                     "feminine" if context == "OP" else "", ("yes", value)[n % 2], value,
                     value])  # fmt: skip
    return rows


SUFFIX = st.sampled_from([".csv", ".tsv", ".jsonl", ".json"])


@FAST
@given(values=st.lists(hostile, min_size=1, max_size=3), suffix=SUFFIX, key=hostile)
def test_record_readers(values: list[str], suffix: str, key: str) -> None:
    path = fresh("table" + suffix)
    header = [*CANDIDATE_FIELDS[:-1], key or "extra"]
    if len(set(header)) < len(header):
        header[-1] = "extra"
    write_table(path, header, candidate_rows(values))
    located(path, lambda: list(read_records(path)))
    located(path, lambda: list(read_records(path, single_line=True)))
    located(path, lambda: read_candidates(path, TAXONOMY))


@pytest.mark.slow
@FAST
@given(values=st.lists(hostile, min_size=1, max_size=3), suffix=SUFFIX)
def test_taxonomy_files(values: list[str], suffix: str) -> None:
    path = fresh("taxonomy" + suffix)
    rows = [[f"job{n}{v}", v or "s", f"spec{v}", v or "p", f"o{v}"] for n, v in enumerate(values)]
    write_table(path, TAXONOMY_FIELDS, rows)
    located(path, lambda: load_taxonomy(path))
    exited_cleanly(["taxonomy", "show", "--taxonomy", str(path)])


@FAST
@given(raw=hostile, suffix=SUFFIX)
def test_any_bytes_as_a_table(raw: str, suffix: str) -> None:
    path = fresh("raw" + suffix)
    path.write_bytes(to_bytes(raw))
    located(path, lambda: list(read_records(path)))
    located(path, lambda: load_taxonomy(path))


# -- the commands ------------------------------------------------------------------------------


@pytest.mark.slow
@FAST
@given(fields=st.lists(hostile, min_size=1, max_size=3), op=st.booleans(), name=short)
def test_validate_and_urls_check_commands(fields: list[str], op: bool, name: str) -> None:
    safe_name = "".join(c for c in name if c not in "/\x00" and not 0xD800 <= ord(c) <= 0xDFFF)
    path = fresh(f"data{safe_name[:50]}.tsv")
    path.write_bytes(to_bytes(tsv_text(fields, op)))
    exited_cleanly(["validate", str(path), "--max-findings", "3"])
    exited_cleanly(["validate", str(path), "--json"])
    exited_cleanly(["urls", "check", str(path), "--retries", "0", "--timeout", "2"])


@pytest.mark.slow
@FAST
@given(values=st.lists(hostile, min_size=1, max_size=3), suffix=SUFFIX, taxonomy=hostile)
@example(values=["a\tb"], suffix=".csv", taxonomy="")
@example(values=["two\nlines"], suffix=".jsonl", taxonomy="x\ty")
@example(values=["nul\x00"], suffix=".json", taxonomy="")
def test_build_visogender_command(values: list[str], suffix: str, taxonomy: str) -> None:
    pool = fresh("pool" + suffix)
    write_table(pool, CANDIDATE_FIELDS, candidate_rows(values))
    extra = pool.with_name("taxonomy.csv")
    write_table(extra, TAXONOMY_FIELDS, [[f"nurse{taxonomy}", "medical", taxonomy or "s",
                                         "patient", f"chart{taxonomy}"]])  # fmt: skip
    out = pool.parent / "o[" / "b]"  # a path holding "[/b]"
    exited_cleanly(["build", "visogender", "--candidates", str(pool), "--out", str(out),
                    "--per-cell", "1", "--keep-incomplete"])  # fmt: skip
    exited_cleanly(["build", "visogender", "--candidates", str(pool), "--out", str(out),
                    "--per-cell", "1", "--taxonomy", str(extra)])  # fmt: skip
