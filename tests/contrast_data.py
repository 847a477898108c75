"""A small contrast set in the export's layout, for tests that evaluate one."""

from __future__ import annotations

from pathlib import Path

import datasets
from PIL import Image

from contrastkit.builders.export import contrast_features


def contrast_export(folder: Path, sources: int = 3) -> Path:
    """An export-shaped folder: per source a red masculine and a blue feminine image."""
    rows = {name: [] for name in contrast_features()}  # type: dict[str, list[object]]
    for s in range(sources):
        for gender, colour in (("masculine", (200, 10, 60)), ("feminine", (60, 10, 200))):
            image = Image.new("RGB", (32, 32), colour)
            values = {
                "source_id": str(s), "gender": gender, "image": image, "edit_id": f"{s}-{gender}",
                "method": "gensynth", "source_label": "masculine",
                "captions": [f"A {'man' if gender == 'masculine' else 'woman'} in scene {s}."],
                "neutral_captions": [f"A person in scene {s}."],
                "original_captions": [f"A man in scene {s}."], "box": [0.0, 0.0, 32.0, 32.0],
                "p_real": 0.5, "p_gender": 0.9, "instruction": "x", "text_guidance_scale": 9.5,
                "image_guidance_scale": 1.5, "steps": 2, "seed": s, "donor": None,
            }  # fmt: skip
            for name in rows:
                rows[name].append(values[name])
    data = datasets.Dataset.from_dict(rows, features=contrast_features())
    datasets.DatasetDict({"test": data}).save_to_disk(str(folder / "saved" / "contrast"))
    return folder
