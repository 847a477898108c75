"""Memory stays bounded whatever a file holds (issue 44 item 9).

Every reader of a whole JSON document goes through ``contrastkit.records._read_text``,
which reads at most ``MAX_JSON_BYTES`` (``MAX_ANNOTATION_BYTES`` for COCO's annotation
files) and refuses a larger file naming it and the cap. ``urls maintain`` reads each TSV
in one pass over the open file (``tsv.read_tsv_document``): a file over
``MAX_DOCUMENT_BYTES`` is refused by its size, unread, and a line over the 4 MiB line
cap is refused as soon as the cap is passed, nothing after it read.

Peak memory is measured in a fresh process (its ``VmHWM``) on sparse files, which cost
no disk: the old readers held each file whole (1.1 GB for the 1 GiB TSV).
"""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest

from contrastkit.builders.stereoset_json import read_stereoset
from contrastkit.errors import DataFormatError
from contrastkit.evaluators.harness.predictions import read_predictions
from contrastkit.harness_key import read_key
from contrastkit.records import MAX_JSON_BYTES, read_json, read_json_object
from contrastkit.schema import OP_COLUMNS
from contrastkit.tsv import MAX_DOCUMENT_BYTES, read_tsv_document

CAP = f"larger than {MAX_JSON_BYTES:,} bytes"


def sparse(path: Path, head: str, size: int) -> Path:
    """``path`` of ``size`` bytes: ``head``, then zero bytes that take no disk."""
    with path.open("wb") as handle:
        handle.write(head.encode("utf-8"))
        handle.truncate(size)
    return path


def peak_kib(code: str) -> tuple[int, str]:
    """Run ``code`` in a fresh Python; its own peak resident memory (KiB) and output."""
    # VmHWM: the peak of this process image (ru_maxrss would carry the forking parent's)
    code += (
        "\nfrom pathlib import Path\nprint('peak', next(line.split()[1] for line in "
        "Path('/proc/self/status').read_text().splitlines() if line.startswith('VmHWM')))\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False, timeout=300
    )
    assert run.returncode == 0, run.stderr[-3000:]
    return int(run.stdout.split("peak ")[-1]), run.stdout


def test_a_json_document_over_the_cap_is_refused_by_every_reader(tmp_path: Path) -> None:
    big = sparse(tmp_path / "big.json", '{"data": {"intrasentence": "', MAX_JSON_BYTES + 1)
    for read in (read_json, read_json_object, read_stereoset):
        with pytest.raises(DataFormatError, match=CAP) as caught:
            read(big)
        assert caught.value.path == str(big)
    folder = tmp_path / "key"
    folder.mkdir()
    sparse(folder / "contrastkit_harness.json", '{"items": [', MAX_JSON_BYTES + 1)
    with pytest.raises(DataFormatError, match=CAP):
        read_key(folder)
    # under the cap, the same reader reads
    small = tmp_path / "small.json"
    small.write_text(json.dumps({"x": "y" * 1000}), encoding="utf-8")
    assert read_json(small) == {"x": "y" * 1000}
    with pytest.raises(DataFormatError, match="larger than 100 bytes"):
        read_json(small, max_bytes=100)


def test_a_500_mb_json_string_is_refused_in_little_memory(tmp_path: Path) -> None:
    """StereoSet JSON whose one sentence is 500 MB: refused after reading the cap (the
    old reader held it whole: past 8 GB for a real 500 MB sentence)."""
    big = sparse(tmp_path / "stereoset.json", '{"data": {"intrasentence": [{"sentence": "',
                 500 * 2**20)  # fmt: skip
    peak, out = peak_kib(
        "from contrastkit.builders.stereoset_json import read_stereoset\n"
        "from contrastkit.errors import DataFormatError\n"
        f"try:\n    read_stereoset({str(big)!r})\n"
        "except DataFormatError as error:\n    print(error)\n"
    )
    assert CAP in out and str(big) in out
    assert peak < 400 * 1024, f"peak {peak} KiB"


def tsv_head() -> str:
    return "\t".join(OP_COLUMNS) + "\n"


@pytest.mark.parametrize(("size", "reason"), [
    (2**30, f"larger than {MAX_DOCUMENT_BYTES:,} bytes"),  # refused by its size, unread
    (200 * 2**20, ":2: line longer than 4194304 bytes"),  # refused at the line cap
])  # fmt: skip
def test_urls_maintain_never_reads_a_huge_tsv_whole(tmp_path: Path, size: int, reason: str) -> None:
    tsv = sparse(tmp_path / "visogender_OP.tsv", tsv_head(), size)
    with pytest.raises(DataFormatError, match=reason):
        read_tsv_document(tsv)
    code = (
        "import sys\nfrom contrastkit.cli import app\nsys.argv = ['contrastkit', 'urls', "
        f"'maintain', {str(tsv)!r}, '--db', {str(tmp_path / 'state.sqlite')!r}]\n"
        "try:\n    app()\nexcept SystemExit as end:\n    print('exit', end.code)\n"
    )
    peak, out = peak_kib(code)
    assert "exit 2" in out
    assert peak < 400 * 1024, f"peak {peak} KiB"
    assert tsv.stat().st_size == size  # the file is left as it was


def test_a_prediction_workbook_that_unpacks_past_the_cap_is_refused_unpacked(
    tmp_path: Path,
) -> None:
    """A VLMEvalKit ``.xlsx`` is a zip: a sheet of 64 MiB of zeros packs into 64 kB. Its
    declared sizes are summed before anything is unpacked (zipfile reads no more than
    they declare)."""
    pytest.importorskip("openpyxl")
    book = tmp_path / "m_contrastkit_visogender.xlsx"
    with (
        zipfile.ZipFile(book, "w", zipfile.ZIP_DEFLATED) as archive,
        archive.open("xl/worksheets/sheet1.xml", "w", force_zip64=True) as sheet,
    ):
        for _ in range(MAX_JSON_BYTES // 2**20 + 1):
            sheet.write(bytes(2**20))
    assert book.stat().st_size < 2**20
    with pytest.raises(DataFormatError, match=f"more than the {MAX_JSON_BYTES:,}") as caught:
        read_predictions(book, cast(Any, SimpleNamespace(by_index=dict)))
    assert caught.value.path == str(book)
