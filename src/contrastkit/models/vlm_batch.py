"""Padding and stacking the rows of a ``vlm:`` batch (:mod:`.vlm`, "Batching"): each
row is the processor's tensors for one image and one text, with its scored tokens
appended (batch dimension 1)."""

from __future__ import annotations

from collections.abc import Sequence

import torch

__all__ = ["collate_rows"]


def collate_rows(
    rows: Sequence[dict[str, torch.Tensor]], pad: int, *, left: bool
) -> tuple[dict[str, torch.Tensor], list[int]]:
    """Pad and stack rows; also each row's offset (padding before it).

    Tensors that run along the token sequence are padded on the left (``left``) or the
    right, token ids with ``pad`` and the others with 0; the Q-Former's own text
    (``qformer_*``) is right-padded; image tensors are concatenated. An attention mask
    over the real tokens is added when the processor gave none.
    """
    width = max(row["input_ids"].shape[1] for row in rows)
    batch: dict[str, torch.Tensor] = {}
    offsets = []
    for row in rows:
        length = row["input_ids"].shape[1]
        offsets.append(width - length if left else 0)
    per_token = [
        key
        for key, value in rows[0].items()
        if value.dim() == 2
        and value.shape[1] == rows[0]["input_ids"].shape[1]
        and not key.startswith("qformer_")
    ]
    for key in per_token:
        fill = pad if key == "input_ids" else 0
        out = torch.full((len(rows), width), fill, dtype=rows[0][key].dtype)
        for r, row in enumerate(rows):
            length = row[key].shape[1]
            out[r, offsets[r] : offsets[r] + length] = row[key][0]
        batch[key] = out
    for key in rows[0]:
        if key in per_token:
            continue
        values = [row[key] for row in rows]
        if key.startswith("qformer_"):  # the Q-Former's own text, right-padded
            q_width = max(value.shape[1] for value in values)
            q_pad = pad if key.endswith("input_ids") else 0
            out = torch.full((len(rows), q_width), q_pad, dtype=values[0].dtype)
            for r, value in enumerate(values):
                out[r, : value.shape[1]] = value[0]
            batch[key] = out
            continue
        batch[key] = _concat(values)
    if "attention_mask" not in batch:
        mask = torch.zeros((len(rows), width), dtype=torch.long)
        for r, row in enumerate(rows):
            mask[r, offsets[r] : offsets[r] + row["input_ids"].shape[1]] = 1
        batch["attention_mask"] = mask
    return batch, offsets


def _concat(values: Sequence[torch.Tensor]) -> torch.Tensor:
    """Stack per-row image tensors along their first dimension, zero-padding the others
    where rows differ (LLaVA-NeXT's varying number of image crops)."""
    if all(value.shape[1:] == values[0].shape[1:] for value in values):
        return torch.cat(list(values), dim=0)
    shape = [max(value.shape[d] for value in values) for d in range(1, values[0].dim())]
    padded = []
    for value in values:
        out = torch.zeros((value.shape[0], *shape), dtype=value.dtype)
        out[tuple(slice(0, s) for s in value.shape)] = value
        padded.append(out)
    return torch.cat(padded, dim=0)
