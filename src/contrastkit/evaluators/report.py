"""Benchmark JSON (the structure of VisoGender Appendix J), markdown tables, PNG plots, and
side-by-side comparison of several models.

The benchmark JSON holds one object, ``visogender_<model>_results``, with ``metadata``
(``experiment_desc`` ``CLIP`` or ``CAPTIONING``, ``model_name``, ...),
``resolution_bias`` and ``retrieval_bias`` as in Appendix J (plus finer breakdowns),
``labour_statistics`` (Appendix F) and ``error_analysis`` (Appendix G). Undefined numbers
(an accuracy over no images, a skew of ``-inf``) are written as ``null``.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from contrastkit import __version__
from contrastkit.errors import DataFormatError
from contrastkit.evaluators.runner import EvalConfig, ScoredRun
from contrastkit.evaluators.stats import (
    labor_comparison,
    labor_shares,
    resolution_subsamples,
    retrieval_random_baseline,
)
from contrastkit.evaluators.tasks.resolution import SPLITS, summarize_resolution
from contrastkit.evaluators.tasks.retrieval import summarize_retrieval
from contrastkit.io import atomic_write_text

__all__ = [
    "PLOTS",
    "benchmark",
    "comparison_markdown",
    "jsonable",
    "load_benchmark",
    "markdown_report",
    "model_slug",
    "write_outputs",
    "write_plots",
]

#: PNG files :func:`write_plots` draws (when their data exist).
PLOTS = (
    "accuracy_by_gender_pair.png",
    "gap_per_occupation.png",
    "bias_at_k_per_occupation.png",
    "labour_statistics.png",
)
_SPLIT_TITLES = {
    "all_images": "Overall",
    "single_person_images": "Single person",
    "two_person_images": "Two people",
    "two_person_images_same_gender": "Two people, same gender",
    "two_person_images_diff_gender": "Two people, different gender",
}


def model_slug(spec: str) -> str:
    """A folder-safe name for a model spec: ``open_clip:ViT-B-32/openai`` ->
    ``open_clip-ViT-B-32-openai``; a local path contributes its last two parts."""
    prefix, _, target = spec.partition(":")
    path = Path(target)
    if path.exists():
        target = "-".join(path.resolve().parts[-2:])
    return re.sub(r"[^A-Za-z0-9._-]+", "-", f"{prefix}-{target}").strip("-.")


def jsonable(value: Any) -> Any:
    """``value`` with non-finite floats as ``None`` and numpy scalars as Python ones."""
    if isinstance(value, Mapping):
        return {str(key): jsonable(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(item) for item in value]
    if hasattr(value, "item") and not isinstance(value, str | bytes):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _labour_section(resolution: Mapping[str, Any], retrieval: Mapping[str, Any]) -> dict[str, Any]:
    """Appendix F: per-occupation values against the male share."""
    shares = labor_shares()
    section: dict[str, Any] = {
        "source": next(iter(shares.values())).source,
        "male_share_percent": {name: share.male_share_percent for name, share in shares.items()},
    }
    comparisons: dict[str, Any] = {}
    occupations = resolution.get("per_occupation", {})
    if occupations:
        comparisons["resolution_gap"] = labor_comparison(
            {name: entry["gender_gap"] for name, entry in occupations.items()}
        )
        comparisons["resolution_gap_two_person"] = labor_comparison(
            {name: entry["two_person"]["gender_gap"] for name, entry in occupations.items()}
        )
        for cell in ("MM", "FF", "MF", "FM"):  # Tab. 7: occupation | participant
            comparisons[f"resolution_accuracy_{cell}"] = labor_comparison(
                {
                    name: entry["per_cell"][cell]["accuracy"]
                    for name, entry in occupations.items()
                    if cell in entry["per_cell"]
                }
            )
    if retrieval.get("context"):
        headline = retrieval[
            "two_person_images" if retrieval["context"] == "OP" else "single_person_images"
        ]
        k = 10 if 10 in retrieval["ks"] else max(retrieval["ks"])
        comparisons[f"retrieval_bias@{k}"] = labor_comparison(
            {name: values[f"bias@{k}"] for name, values in headline["per_occupation"].items()}
        )
    section["comparisons"] = comparisons
    return section


def benchmark(run: ScoredRun, config: EvalConfig, data: Sequence[str | Path]) -> dict[str, Any]:
    """The benchmark JSON object of one scored run (Appendix J structure)."""
    results: dict[str, Any] = {
        "metadata": {
            "experiment_desc": "CLIP" if run.kind == "dual" else "CAPTIONING",
            "model_name": run.model,
            "contrastkit_version": __version__,
            "data": [str(path) for path in data],
            "tasks": [
                task for task in config.tasks if not any(s.startswith(task) for s in run.skipped)
            ],
            "skipped": run.skipped,
            "neutral": config.neutral,
            "ks": list(config.ks),
            "ndkl_k": config.ndkl_k,
            "seed": config.seed,
            "n_resolution_cases": len(run.resolution),
            "n_retrieval_images": len(run.retrieval),
            "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        }
    }
    resolution = summarize_resolution(run.resolution) if run.resolution else {}
    retrieval = (
        summarize_retrieval(run.retrieval, config.ks, ndkl_k=config.ndkl_k) if run.retrieval else {}
    )
    if resolution:
        results["resolution_bias"] = resolution
    if retrieval:
        results["retrieval_bias"] = retrieval
    results["labour_statistics"] = _labour_section(resolution, retrieval)
    error: dict[str, Any] = {}
    if run.resolution:
        error["resolution_subsamples"] = {
            f"k={k}": resolution_subsamples(
                run.resolution, k, runs=config.subsample_runs, seed=config.seed
            )
            for k in config.subsample_ks
        }
        error["resolution_subsample_runs"] = config.subsample_runs
    if run.retrieval:
        error["retrieval_random_baseline"] = retrieval_random_baseline(
            run.retrieval,
            config.ks,
            runs=config.baseline_runs,
            seed=config.seed,
            ndkl_k=config.ndkl_k,
        )
        error["retrieval_baseline_runs"] = config.baseline_runs
    results["error_analysis"] = error
    return {f"visogender_{model_slug(run.model)}_results": jsonable(results)}


def load_benchmark(path: str | Path) -> tuple[str, dict[str, Any]]:
    """Read a benchmark JSON (or the ``benchmark.json`` of an output folder).

    Returns:
        The top-level name and its results object.

    Raises:
        DataFormatError: missing file, invalid JSON, or not a benchmark.
    """
    path = Path(path)
    if path.is_dir():
        path = path / "benchmark.json"
    if not path.is_file():
        raise DataFormatError(path, None, None, "no such benchmark file")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise DataFormatError(path, exc.lineno, None, f"invalid JSON: {exc.msg}") from None
    if not isinstance(data, dict) or len(data) != 1:
        raise DataFormatError(path, None, None, "expected one visogender_<model>_results object")
    name, results = next(iter(data.items()))
    if not isinstance(results, dict) or "metadata" not in results:
        raise DataFormatError(path, None, name, "not a benchmark result (no metadata)")
    return name, results


def _fmt(value: Any, digits: int = 2) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "–"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def _table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(_fmt(cell) for cell in row) + " |" for row in rows]
    return [*lines, ""]


def _metric_names(retrieval: Mapping[str, Any]) -> list[str]:
    ks = retrieval.get("ks", [5, 10])
    return [f"bias@{k}" for k in ks] + [f"maxskew@{k}" for k in ks] + ["NDKL"]


def markdown_report(results: Mapping[str, Any]) -> str:
    """A markdown report of one model: Tab. 2/3/4-style tables, per occupation, labour
    statistics and error analysis."""
    meta = results["metadata"]
    lines = [f"# VisoGender results: `{meta['model_name']}`", ""]
    lines += [
        f"{meta['experiment_desc']} model; data: {', '.join(meta['data'])}; "
        f"contrastkit {meta['contrastkit_version']}.",
        "",
    ]
    for note in meta.get("skipped", []):
        lines += [f"Skipped: {note}.", ""]
    resolution = results.get("resolution_bias")
    if resolution:
        lines += ["## Resolution bias (VisoGender Tab. 2)", ""]
        lines += _table(
            ["split", "RA_avg", "gap", "RA_masculine", "RA_feminine", "accuracy", "n"],
            [
                [
                    _SPLIT_TITLES[name],
                    r["RA_avg"],
                    r["gender_gap"],
                    r["RA_masculine"],
                    r["RA_feminine"],
                    r["overall_accuracy"],
                    r["n"],
                ]
                for name in SPLITS
                if (r := resolution[name])["n"]
            ],
        )
        lines += [
            "Gap = RA_masculine − RA_feminine (positive: masculine-presenting subjects "
            "are resolved more accurately).",
            "",
        ]
        lines += ["### Accuracy by gender pair (occupation, participant)", ""]
        flip = resolution.get("participant_first", {}).get("per_cell", {})
        lines += _table(
            ["cell", "accuracy", "n", "participant-first accuracy"],
            [
                [cell, v["accuracy"], v["n"], flip.get(cell, {}).get("accuracy")]
                for cell, v in resolution["per_cell"].items()
            ],
        )
        if "neutral" in resolution:
            lines += ["### Neutral pronoun (VisoGender Tab. 4)", ""]
            lines += _table(
                ["split", "R_neutral", "Δ_N", "n"],
                [
                    [_SPLIT_TITLES[name], v["R_neutral"], v["neutral_gap"], v["n"]]
                    for name, v in resolution["neutral"].items()
                    if v["n"]
                ],
            )
        for field, title in (("per_sector", "sector"), ("per_specialisation", "specialisation")):
            lines += [f"### Per {title}", ""]
            lines += _table(
                [title, "RA_avg", "gap", "accuracy", "n"],
                [
                    [name, v["RA_avg"], v["gender_gap"], v["overall_accuracy"], v["n"]]
                    for name, v in resolution[field].items()
                ],
            )
    retrieval = results.get("retrieval_bias")
    if retrieval:
        names = _metric_names(retrieval)
        lines += ["## Retrieval bias (VisoGender Tab. 3: mean and σ across occupations)", ""]
        rows = []
        for section, title in (
            ("two_person_images", "two people"),
            ("single_person_images", "single person"),
        ):
            if section in retrieval:
                values = retrieval[section]
                rows.append(
                    [title]
                    + [f"{_fmt(values[n]['mean'])} ± {_fmt(values[n]['sigma'])}" for n in names]
                )
        lines += _table(["images", *names], rows)
        lines += ["Positive Bias@K: more masculine-presenting subjects retrieved.", ""]
    occupations = (resolution or {}).get("per_occupation", {})
    shares = results["labour_statistics"]["male_share_percent"]
    retrieved = {}
    if retrieval and retrieval.get("context"):
        section = "two_person_images" if retrieval["context"] == "OP" else "single_person_images"
        retrieved = retrieval[section]["per_occupation"]
    names_all = list(dict.fromkeys([*occupations, *retrieved]))
    if names_all:
        ks = (retrieval or {}).get("ks", [])
        lines += ["## Per occupation", ""]
        lines += _table(
            ["occupation", "RA_avg", "gap", *[f"bias@{k}" for k in ks], "male share %"],
            [
                [
                    name,
                    occupations.get(name, {}).get("RA_avg"),
                    occupations.get(name, {}).get("gender_gap"),
                    *[retrieved.get(name, {}).get(f"bias@{k}") for k in ks],
                    shares.get(name),
                ]
                for name in names_all
            ],
        )
    comparisons = results["labour_statistics"]["comparisons"]
    if comparisons:
        lines += ["## Compared with US labour statistics (VisoGender Appendix F)", ""]
        lines += _table(
            ["per-occupation value", "Pearson r", "p", "Kendall τ", "p", "n"],
            [
                [name, c["pearson_r"], c["pearson_p"], c["kendall_tau"], c["kendall_p"], c["n"]]
                for name, c in comparisons.items()
            ],
        )
    error = results.get("error_analysis", {})
    for k, splits in error.get("resolution_subsamples", {}).items():
        lines += [
            f"## Error analysis: random subsamples, {k} image(s) per group, "
            f"{error['resolution_subsample_runs']} runs (Appendix G.1)",
            "",
        ]
        lines += _table(
            ["split", "RA_avg mean", "RA_avg σ", "gap mean", "gap σ"],
            [
                [
                    _SPLIT_TITLES[name],
                    v["RA_avg"]["mean"],
                    v["RA_avg"]["sigma"],
                    v["gender_gap"]["mean"],
                    v["gender_gap"]["sigma"],
                ]
                for name, v in splits.items()
            ],
        )
    for section, metrics in error.get("retrieval_random_baseline", {}).items():
        lines += [
            f"## Error analysis: random relabelling, {error['retrieval_baseline_runs']} runs, "
            f"{section.replace('_', ' ')} (Appendix G.2)",
            "",
        ]
        lines += _table(
            ["metric", "real", "baseline mean", "baseline σ", "z"],
            [
                [
                    name,
                    metrics[name]["real"],
                    metrics[name]["baseline_mean"],
                    metrics[name]["baseline_sigma"],
                    metrics[name]["z"],
                ]
                for name in _metric_names(retrieval or {})
                if name in metrics
            ],
        )
    return "\n".join(lines).rstrip() + "\n"


def write_plots(results: Mapping[str, Any], folder: Path) -> list[Path]:
    """Draw the PNG plots whose data exist; return their paths."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    folder.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []

    def save(figure: Any, name: str) -> None:
        figure.tight_layout()
        target = folder / name
        tmp = folder / f".{name}.tmp.png"
        figure.savefig(tmp, dpi=110)
        plt.close(figure)
        tmp.replace(target)
        written.append(target)

    model = results["metadata"]["model_name"]
    resolution = results.get("resolution_bias")
    if resolution:
        cells = resolution["per_cell"]
        flip = resolution.get("participant_first", {}).get("per_cell", {})
        figure, axis = plt.subplots(figsize=(6, 3.5))
        names = list(cells)
        axis.bar(
            [i - 0.2 for i in range(len(names))],
            [cells[n]["accuracy"] or 0 for n in names],
            width=0.4,
            label="occupation first",
        )
        if flip:
            axis.bar(
                [i + 0.2 for i in range(len(names))],
                [(flip.get(n) or {}).get("accuracy") or 0 for n in names],
                width=0.4,
                label="participant first",
            )
        axis.set_xticks(range(len(names)), names)
        axis.set_ylim(0, 1)
        axis.set_ylabel("resolution accuracy")
        axis.set_title(f"Accuracy by gender pair: {model}", fontsize=9)
        axis.legend(fontsize=8)
        save(figure, "accuracy_by_gender_pair.png")
        occupations = resolution["per_occupation"]
        ordered = sorted(occupations, key=lambda n: occupations[n]["gender_gap"] or 0)
        figure, axis = plt.subplots(figsize=(6, max(3, 0.25 * len(ordered) + 1)))
        axis.barh(ordered, [occupations[n]["gender_gap"] or 0 for n in ordered])
        axis.axvline(0, color="black", linewidth=0.8)
        axis.set_xlabel("gap = RA_masculine − RA_feminine")
        axis.set_title(f"Resolution gap per occupation: {model}", fontsize=9)
        save(figure, "gap_per_occupation.png")
    retrieval = results.get("retrieval_bias")
    if retrieval and retrieval.get("context"):
        section = "two_person_images" if retrieval["context"] == "OP" else "single_person_images"
        per = retrieval[section]["per_occupation"]
        ks = retrieval["ks"]
        ordered = sorted(per, key=lambda n: per[n][f"bias@{ks[0]}"] or 0)
        figure, axis = plt.subplots(figsize=(6, max(3, 0.25 * len(ordered) + 1)))
        height = 0.8 / len(ks)
        for j, k in enumerate(ks):
            axis.barh(
                [i + j * height for i in range(len(ordered))],
                [per[n][f"bias@{k}"] or 0 for n in ordered],
                height=height,
                label=f"Bias@{k}",
            )
        axis.set_yticks([i + height * (len(ks) - 1) / 2 for i in range(len(ordered))], ordered)
        axis.axvline(0, color="black", linewidth=0.8)
        axis.set_xlim(-1, 1)
        axis.legend(fontsize=8)
        axis.set_title(f"Bias@K per occupation ({retrieval['context']}): {model}", fontsize=9)
        save(figure, "bias_at_k_per_occupation.png")
    comparisons = results["labour_statistics"]["comparisons"]
    panels = [
        name
        for name in ("resolution_gap", *[n for n in comparisons if n.startswith("retrieval_bias")])
        if name in comparisons and comparisons[name]["points"]
    ]
    if panels:
        figure, axes = plt.subplots(1, len(panels), figsize=(5 * len(panels), 4), squeeze=False)
        for axis, name in zip(axes[0], panels, strict=True):
            c = comparisons[name]
            xs = [p["male_share"] for p in c["points"]]
            ys = [p["value"] for p in c["points"]]
            axis.scatter(xs, ys)
            for p in c["points"]:
                axis.annotate(p["occupation"], (p["male_share"], p["value"]), fontsize=6)
            axis.axhline(0, color="grey", linewidth=0.6)
            axis.set_xlabel("US labour statistics: share of men (%)")
            axis.set_ylabel(name.replace("_", " "))
            axis.set_title(f"r = {_fmt(c['pearson_r'])}, τ = {_fmt(c['kendall_tau'])}", fontsize=9)
        save(figure, "labour_statistics.png")
    return written


def write_outputs(results_json: Mapping[str, Any], folder: Path) -> dict[str, Path]:
    """Write ``benchmark.json``, ``report.md`` and ``plots/*.png`` into ``folder``."""
    _, results = next(iter(results_json.items()))
    folder.mkdir(parents=True, exist_ok=True)
    atomic_write_text(folder / "benchmark.json", json.dumps(results_json, indent=2) + "\n")
    atomic_write_text(folder / "report.md", markdown_report(results))
    plots = write_plots(results, folder / "plots")
    files = {"benchmark": folder / "benchmark.json", "report": folder / "report.md"}
    files.update({path.stem: path for path in plots})
    return files


def comparison_markdown(results: Sequence[Mapping[str, Any]]) -> str:
    """Several models side by side: Tab. 2 (resolution) and Tab. 3 (retrieval) shapes."""
    lines = ["# VisoGender: models side by side", ""]
    with_resolution = [r for r in results if r.get("resolution_bias")]
    if with_resolution:
        header = ["model"]
        for name in SPLITS:
            header += [f"{_SPLIT_TITLES[name]} RA_avg", "gap"]
        lines += ["## Resolution bias", ""]
        lines += _table(
            header,
            [
                [r["metadata"]["model_name"]]
                + [
                    value
                    for name in SPLITS
                    for value in (
                        r["resolution_bias"][name]["RA_avg"],
                        r["resolution_bias"][name]["gender_gap"],
                    )
                ]
                for r in with_resolution
            ],
        )
    with_retrieval = [r for r in results if (r.get("retrieval_bias") or {}).get("context")]
    if with_retrieval:
        names = _metric_names(with_retrieval[0]["retrieval_bias"])
        lines += ["## Retrieval bias (mean ± σ across occupations)", ""]
        lines += _table(
            ["model", "images", *names],
            [
                [r["metadata"]["model_name"], r["retrieval_bias"]["context"]]
                + [
                    f"{_fmt(r['retrieval_bias'].get(n, {}).get('mean'))} ± "
                    f"{_fmt(r['retrieval_bias'].get(n, {}).get('sigma'))}"
                    for n in names
                ]
                for r in with_retrieval
            ],
        )
    return "\n".join(lines).rstrip() + "\n"
