"""Build rows for tests: taxonomy-consistent defaults, anything overridable."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from contrastkit.harness_key import KeyItem
from contrastkit.schema import Context, Gender, VisoGenderRow
from contrastkit.taxonomy import load_taxonomy


def photo(seed: int) -> bytes:
    """A 72 x 72 JPEG of random pixels, different for each seed."""
    from loopback import jpeg_bytes

    pixels = np.random.default_rng(seed).integers(0, 256, (72, 72, 3), dtype=np.uint8)
    return jpeg_bytes(Image.fromarray(pixels))


def pexels_url(n: int) -> str:
    """A Pexels-style image URL unique to ``n``."""
    return f"https://images.pexels.com/photos/{n}/pexels-photo-{n}.jpeg?auto=compress&w=600"


def make_row(
    occupation: str,
    occupation_gender: Gender,
    participant_gender: Gender | None = None,
    *,
    n: int = 1,
    **overrides: Any,
) -> VisoGenderRow:
    """An OP row when ``participant_gender`` is given, else an OO row.

    Sector, specialisation and nouns come from the built-in taxonomy (office /
    general_office / client / desk for occupations it does not know); the IDX is
    ``OP_{n}`` / ``OO_{n}`` and the URL unique to the context and ``n``.
    """
    known = load_taxonomy().get(occupation)
    context = Context.OO if participant_gender is None else Context.OP
    row = VisoGenderRow(
        idx=f"{context.value}_{n}",
        context=context,
        sector=known.sector if known else "office",
        specialisation=known.specialisation if known else "general_office",
        occupation=occupation,
        participant=(known.participant if known else "client") if context is Context.OP else None,
        object=(known.object if known else "desk") if context is Context.OO else None,
        url=pexels_url((1000 if context is Context.OP else 2000) + n),
        licence="Yes",
        occupation_gender=occupation_gender,
        participant_gender=participant_gender,
        annotator="tester",
    )
    return replace(row, **overrides) if overrides else row


def console_script() -> str:
    """The installed ``contrastkit`` console script (beside this Python, or on PATH)."""
    import shutil
    import sys
    from pathlib import Path

    beside = Path(sys.executable).with_name("contrastkit")
    exe = str(beside) if beside.exists() else shutil.which("contrastkit")
    assert exe is not None, "the console script is installed with the package"
    return exe


def hold_build_lock(folder: Path, release: Path) -> subprocess.Popen[str]:
    """Another process holding ``folder``'s build lock (``.build.lock``, as a running
    stage does) until the file ``release`` appears; returns once the lock is held."""
    folder.mkdir(parents=True, exist_ok=True)
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import sys, time, pathlib\n"
         "from contrastkit.io import exclusive_lock\n"
         "with exclusive_lock(pathlib.Path(sys.argv[1]) / '.build.lock', sys.argv[1], 'x'):\n"
         "    print('held', flush=True)\n"
         "    while not pathlib.Path(sys.argv[2]).exists(): time.sleep(0.05)\n",
         str(folder), str(release)],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
    return holder


def letter_of(item: KeyItem, label: str) -> str:
    """The option letter a harness export gave ``label`` in ``item``."""
    return next(letter for letter, value in item.labels.items() if value == label)
