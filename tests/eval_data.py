"""Small evaluation datasets for tests: rows of the official VisoGender files, each with
its own local image cut from a real public-domain photo (matplotlib's grace_hopper.jpg)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import matplotlib
from PIL import Image

from contrastkit.evaluators.data import visogender_files
from contrastkit.schema import Context, VisoGenderRow
from contrastkit.tsv import read_visogender_tsv, write_visogender_tsv

OFFICIAL_OP, OFFICIAL_OO = visogender_files()  # bundled with contrastkit


def grace_hopper() -> Image.Image:
    """Public-domain photo of one person, shipped with matplotlib."""
    path = Path(matplotlib.get_data_path()) / "sample_data" / "grace_hopper.jpg"
    with Image.open(path) as image:
        return image.convert("RGB")


PER_CELL = 2
OCCUPATIONS = ("doctor", "teacher")


def _small_rows() -> dict[str, list[VisoGenderRow]]:
    """The first ``PER_CELL`` official rows of each cell of two occupations, per context."""
    chosen: dict[str, list[VisoGenderRow]] = {}
    for path in (OFFICIAL_OP, OFFICIAL_OO):
        table = read_visogender_tsv(path)
        counts: dict[tuple[str, str], int] = {}
        rows = []
        for row in table.rows:
            key = (row.occupation, row.cell)
            if row.occupation in OCCUPATIONS and counts.get(key, 0) < PER_CELL:
                counts[key] = counts.get(key, 0) + 1
                rows.append(row)
        chosen[table.context.value] = rows
    return chosen


def write_small_dataset(
    folder: Path, url_for: Callable[[int, Path], str] | None = None
) -> dict[str, Path]:
    """Two occupations x every cell x ``PER_CELL`` rows of the official files, each with
    its own image: a distinct crop of a real photo, ``40 + n`` pixels wide so a test
    scorer can tell the images apart. ``url_for(n, path)`` may replace the image path in
    the URL column (default: the file name, relative to the TSV)."""
    folder.mkdir(parents=True, exist_ok=True)
    photo = grace_hopper()
    paths = {}
    n = 0
    for context, rows in _small_rows().items():
        new_rows = []
        for row in rows:
            image_path = folder / f"img_{n:03d}.png"
            photo.crop((10 * n, 5 * n, 10 * n + 300, 5 * n + 300)).resize((40 + n, 40)).save(
                image_path
            )
            url = url_for(n, image_path) if url_for else image_path.name
            new_rows.append(replace(row, url=url))
            n += 1
        path = folder / f"visogender_{context}.tsv"
        write_visogender_tsv(path, new_rows, Context(context))
        paths[context] = path
    return paths
