"""The dataset audit in the HTML report (``contrastkit report AUDIT_FOLDER --html OUT``):
an audit's ``audit.json`` read as one more result (its ``audit.md`` is its page), and
the gallery of its context clusters: each cluster's members the audit listed (at most
its ``members_per_cluster``, in data order) with their labels, beside the cluster's
``ΔM`` and salient words, so a reader sees the images behind the over-representation
factor.

A member's ``file`` is read only inside the audited data's folder
(:func:`contrastkit.records.data_file`); a contrast set's member (no file, its id
``source:gender``) is read from the set's dataset."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict

from PIL import Image

from contrastkit.errors import DataFormatError
from contrastkit.evaluators.html.cards import Card, Entry, Gallery, Line
from contrastkit.evaluators.html.galleries import ContrastImages, Drawing
from contrastkit.evaluators.html.thumbs import Thumb

__all__ = ["AUDIT_FILE", "audit_entry", "audit_file", "audit_gallery"]

AUDIT_FILE = "audit.json"
"""The file an audit writes its findings to."""


def audit_file(path: Path) -> Path | None:
    """The ``audit.json`` that ``path`` names (the file, or the folder holding one), or
    ``None`` when ``path`` is no audit's."""
    if path.name == AUDIT_FILE and path.is_file():
        return path
    if path.is_dir() and (path / AUDIT_FILE).is_file():
        return path / AUDIT_FILE
    return None


class _AuditHeadline(TypedDict):
    """The figures the report's index shows for an audit: images, the masculine share
    of the labelled ones, and whether its models had random weights."""

    images: int | None
    masculine_share_of_labelled: float | None
    random_weights: bool


def audit_entry(file: Path, taken: set[str]) -> Entry:
    """The report entry of the audit ``file`` (its page is ``result-audit-<folder>``).

    Raises:
        DataFormatError: the file is malformed or no audit's.
    """
    from contrastkit.results import AuditReport, load_result

    result = load_result(file)
    if not isinstance(result, AuditReport):
        raise DataFormatError(file, None, "task", f"a {result.task} result, not an audit")
    report = result.to_json()
    composition = report.get("composition") or {}
    headline: _AuditHeadline = {
        "images": composition.get("images"),
        "masculine_share_of_labelled": composition.get("masculine_share_of_labelled"),
        "random_weights": bool(report.get("random_weights")),
    }
    folder = file.parent
    data = str(report.get("data", ""))
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", f"audit-{folder.name}").strip("-")
    while slug in taken:
        slug += "-2"
    taken.add(slug)
    return Entry("audit", Path(data).name or data, folder, report, headline, slug)


@dataclass
class _Members:
    """Reads the members of one audit's clusters: from the data's folder, or from a
    contrast set's dataset (loaded once)."""

    data: Path
    format: str
    drawing: Drawing
    contrast: ContrastImages | None = None

    def thumb(self, cluster: int, member: Mapping[str, Any]) -> Thumb:
        image, label = str(member.get("image")), str(member.get("label"))
        gender = label if label in ("masculine", "feminine") else None
        alt = f"Image {image} ({label}), cluster {cluster} of the audit of {self.data.name}"
        short = f"{label[:3]}."
        file = member.get("file")
        if isinstance(file, str):
            return self.drawing.thumbs.thumb(
                f"audit:{self.data}:{file}", lambda: self._open(file), short, alt, gender
            )
        if self.format == "contrast":
            if self.contrast is None:
                self.contrast = ContrastImages(self.data)
            source, _, version = image.rpartition(":")
            return self.drawing.thumbs.thumb(
                f"contrast:{self.data}:{source}:{version}",
                self.contrast.opener(source, version),
                short,
                alt,
                gender,
            )
        reason = "image not available: the audit recorded no file for it"
        return self.drawing.thumbs.missing(short, alt, reason, gender)

    def _open(self, file: str) -> Image.Image:
        from contrastkit.pipeline.sources import decode
        from contrastkit.records import data_file

        path = data_file(self.data / AUDIT_FILE, None, "file", file, folder=self.data)
        image: Image.Image = decode(path)
        return image


def _number(value: Any) -> float:
    return float(value) if isinstance(value, int | float) else 0.0


def _factor(value: Any) -> str:
    return f"{value:+.1f} pp" if isinstance(value, int | float) else "–"


def _card(row: Mapping[str, Any], entry: Entry, members: _Members, listed: int | None) -> Card:
    cluster = int(row.get("cluster", 0))
    found = list(row.get("members") or [])
    size = int(row.get("size", len(found)))
    words = ", ".join(row.get("words") or []) or "none stand out"
    factor = row.get("factor_pp")
    lean = (
        "men over-represented"
        if isinstance(factor, int | float) and factor > 0
        else "women over-represented"
        if isinstance(factor, int | float) and factor < 0
        else "at the set's share"
    )
    shown = (
        f"{len(found)} of its {size} images"
        if len(found) < size
        else ("its one image" if size == 1 else f"all {size} of its images")
    )
    caption = f"Members: {shown}" + (
        f" (the audit lists at most {listed}, in data order)" if listed else ""
    )
    return Card(
        f"Cluster {cluster}: {words}",
        (),
        (
            Line("images", str(size)),
            Line("masculine", str(row.get("masculine")), "masculine"),
            Line("feminine", str(row.get("feminine")), "feminine"),
            Line("ΔM (masculine share minus the set's)", _factor(factor)),
        ),
        entry.model,
        marks=(lean,),
        sort={
            "gap": abs(_number(factor)),
            "factor": _number(factor),
            "size": float(size),
            "cluster": float(cluster),
        },
        subtitle=f"Audit of {entry.model}"
        + ("" if "members" in row else ": written before audits listed each cluster's images"),
        strips=((caption, tuple(members.thumb(cluster, m) for m in found)),) if found else (),
    )


def audit_gallery(entries: Sequence[Entry], drawing: Drawing) -> Gallery | None:
    """Each context cluster of each audit with the images it lists."""
    chosen = [e for e in entries if e.task == "audit"]
    if not chosen:
        return None
    found: list[tuple[Mapping[str, Any], Entry, _Members, int | None]] = []
    for entry in chosen:
        section = entry.results.get("clusters") or {}
        members = _Members(
            Path(str(entry.results.get("data", ""))), str(entry.results.get("format")), drawing
        )
        listed = section.get("members_per_cluster")
        for row in section.get("clusters") or []:
            found.append((row, entry, members, listed if isinstance(listed, int) else None))
    found.sort(key=lambda one: -abs(_number(one[0].get("factor_pp"))))
    cards = [_card(*one) for one in found[: drawing.cap]]
    return Gallery(
        "gallery-audit-clusters",
        "Audit: the images of each context cluster",
        "Each context cluster of the audited images' gender-neutral captions (GenSynth "
        "Tab. 6) with its salient words, its masculine and feminine images, its ΔM (the "
        "cluster's masculine share minus the whole set's, in percentage points; positive: "
        "men over-represented) and the images the audit listed for it (blue border and "
        "'mas.': labelled masculine; orange and 'fem.': feminine). Largest ΔM (either "
        "sign) first.",
        tuple(cards),
        len(found),
        (
            ("gap:desc", "largest ΔM (either sign)"),
            ("factor:desc", "ΔM, men most over-represented first"),
            ("factor:asc", "ΔM, women most over-represented first"),
            ("size:desc", "largest cluster first"),
            ("cluster:asc", "cluster number"),
        ),
        "audit",
        ("men over-represented", "women over-represented", "at the set's share"),
        tuple(chosen),
        "No context cluster: these audits did not cluster (a VisoGender set has no "
        "captions), or were written before the audit listed each cluster's members.",
    )
