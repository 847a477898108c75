"""contrastkit: build, maintain, publish and score datasets that measure gender bias in
vision-language models.

The main entry points are importable from here; each is one function taking one frozen
config dataclass and returning a typed result::

    import contrastkit as ck

    build = ck.build_visogender(ck.BuildVisoGenderConfig(candidates="pool.csv", out="build"))
    report = ck.check_dataset_urls(ck.URLCheckJobConfig(files=build.written, store="images"))
    run = ck.evaluate(ck.EvaluateConfig(data=("build",), models=("open_clip:ViT-B-32/openai",),
                                        out="results", store="images"))

Names are loaded on first use, so ``import contrastkit`` stays light (no torch, no
datasets) until a job that needs them is touched.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

#: Public name -> the module that defines it.
_API: dict[str, str] = {
    # errors and shared configuration
    "ContrastkitError": "contrastkit.errors",
    "ConfigError": "contrastkit.errors",
    "DataFormatError": "contrastkit.errors",
    "ModelNotFoundError": "contrastkit.errors",
    "ResourceError": "contrastkit.errors",
    "StateError": "contrastkit.errors",
    "ModelConfig": "contrastkit.config",
    "ImageTextScorer": "contrastkit.interfaces",
    "PronounScorer": "contrastkit.interfaces",
    "CaptionScorer": "contrastkit.interfaces",
    # build
    "BuildVisoGenderConfig": "contrastkit.builders.visogender",
    "build_visogender": "contrastkit.builders.visogender",
    "GenSynthConfig": "contrastkit.builders.gensynth.job",
    "build_gensynth": "contrastkit.builders.gensynth.job",
    "GenSwapConfig": "contrastkit.builders.genswap_job",
    "build_genswap": "contrastkit.builders.genswap_job",
    "EditSettings": "contrastkit.curation.editing",
    "MergeConfig": "contrastkit.builders.gensynth.shards",
    "merge_shards": "contrastkit.builders.gensynth.shards",
    "StereoSetConfig": "contrastkit.builders.stereoset",
    "build_stereoset": "contrastkit.builders.stereoset",
    # export and publish
    "ExportConfig": "contrastkit.builders.export",
    "export": "contrastkit.builders.export",
    "ExportVisoGenderConfig": "contrastkit.builders.export",
    "export_visogender": "contrastkit.builders.export",
    "ExportContrastConfig": "contrastkit.builders.export",
    "export_contrast_set": "contrastkit.builders.export",
    "ExportStereotypeConfig": "contrastkit.builders.export",
    "export_stereotype": "contrastkit.builders.export",
    "HarnessExportConfig": "contrastkit.builders.harness",
    "export_harness": "contrastkit.builders.harness",
    "PublishConfig": "contrastkit.builders.publish",
    "publish": "contrastkit.builders.publish",
    # URL checks and maintenance
    "CheckConfig": "contrastkit.curation.urls",
    "URLCheckJobConfig": "contrastkit.curation.integrity",
    "check_dataset_urls": "contrastkit.curation.integrity",
    "MaintainConfig": "contrastkit.curation.maintenance",
    "RetirementPolicy": "contrastkit.curation.maintenance",
    "maintain": "contrastkit.curation.maintenance",
    # evaluation
    "EvalConfig": "contrastkit.evaluators.runner",
    "EvaluateConfig": "contrastkit.evaluators.job",
    "evaluate": "contrastkit.evaluators.job",
    "ReportConfig": "contrastkit.evaluators.job",
    "compare_results": "contrastkit.evaluators.job",
    "HtmlReportConfig": "contrastkit.evaluators.html",
    "write_html_report": "contrastkit.evaluators.html",
    "load_model": "contrastkit.models",
    "load_scorer": "contrastkit.models",
    "visogender_files": "contrastkit.evaluators.data",
    "HarnessReportConfig": "contrastkit.evaluators.harness",
    "harness_report": "contrastkit.evaluators.harness",
    "ZeroShotDisparityConfig": "contrastkit.evaluators.tasks.zero_shot.job",
    "zero_shot_disparity": "contrastkit.evaluators.tasks.zero_shot.job",
    # any results file read back as its typed tree (contrastkit.results)
    "load_result": "contrastkit.results",
    # is the data itself biased? (GenSynth Sec. 3)
    "AuditConfig": "contrastkit.audit",
    "audit": "contrastkit.audit",
    # the whole workflow
    "QuickstartConfig": "contrastkit.apps.quickstart",
    "quickstart": "contrastkit.apps.quickstart",
}

__all__ = ["__version__", *sorted(_API)]


def __getattr__(name: str) -> Any:
    module = _API.get(name)
    if module is None:
        raise AttributeError(f"module 'contrastkit' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)


if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs only
    from contrastkit.apps.quickstart import (
        QuickstartConfig as QuickstartConfig,
    )
    from contrastkit.apps.quickstart import (
        quickstart as quickstart,
    )
    from contrastkit.audit import (
        AuditConfig as AuditConfig,
    )
    from contrastkit.audit import (
        audit as audit,
    )
    from contrastkit.builders.export import (
        ExportConfig as ExportConfig,
    )
    from contrastkit.builders.export import (
        ExportContrastConfig as ExportContrastConfig,
    )
    from contrastkit.builders.export import (
        ExportStereotypeConfig as ExportStereotypeConfig,
    )
    from contrastkit.builders.export import (
        ExportVisoGenderConfig as ExportVisoGenderConfig,
    )
    from contrastkit.builders.export import (
        export as export,
    )
    from contrastkit.builders.export import (
        export_contrast_set as export_contrast_set,
    )
    from contrastkit.builders.export import (
        export_stereotype as export_stereotype,
    )
    from contrastkit.builders.export import (
        export_visogender as export_visogender,
    )
    from contrastkit.builders.genswap_job import (
        GenSwapConfig as GenSwapConfig,
    )
    from contrastkit.builders.genswap_job import (
        build_genswap as build_genswap,
    )
    from contrastkit.builders.gensynth.job import (
        GenSynthConfig as GenSynthConfig,
    )
    from contrastkit.builders.gensynth.job import (
        build_gensynth as build_gensynth,
    )
    from contrastkit.builders.gensynth.shards import (
        MergeConfig as MergeConfig,
    )
    from contrastkit.builders.gensynth.shards import (
        merge_shards as merge_shards,
    )
    from contrastkit.builders.harness import (
        HarnessExportConfig as HarnessExportConfig,
    )
    from contrastkit.builders.harness import (
        export_harness as export_harness,
    )
    from contrastkit.builders.publish import (
        PublishConfig as PublishConfig,
    )
    from contrastkit.builders.publish import (
        publish as publish,
    )
    from contrastkit.builders.stereoset import (
        StereoSetConfig as StereoSetConfig,
    )
    from contrastkit.builders.stereoset import (
        build_stereoset as build_stereoset,
    )
    from contrastkit.builders.visogender import (
        BuildVisoGenderConfig as BuildVisoGenderConfig,
    )
    from contrastkit.builders.visogender import (
        build_visogender as build_visogender,
    )
    from contrastkit.config import (
        ModelConfig as ModelConfig,
    )
    from contrastkit.curation.editing import (
        EditSettings as EditSettings,
    )
    from contrastkit.curation.integrity import (
        URLCheckJobConfig as URLCheckJobConfig,
    )
    from contrastkit.curation.integrity import (
        check_dataset_urls as check_dataset_urls,
    )
    from contrastkit.curation.maintenance import (
        MaintainConfig as MaintainConfig,
    )
    from contrastkit.curation.maintenance import (
        RetirementPolicy as RetirementPolicy,
    )
    from contrastkit.curation.maintenance import (
        maintain as maintain,
    )
    from contrastkit.curation.urls import (
        CheckConfig as CheckConfig,
    )
    from contrastkit.errors import (
        ConfigError as ConfigError,
    )
    from contrastkit.errors import (
        ContrastkitError as ContrastkitError,
    )
    from contrastkit.errors import (
        DataFormatError as DataFormatError,
    )
    from contrastkit.errors import (
        ModelNotFoundError as ModelNotFoundError,
    )
    from contrastkit.errors import (
        ResourceError as ResourceError,
    )
    from contrastkit.errors import (
        StateError as StateError,
    )
    from contrastkit.evaluators.data import (
        visogender_files as visogender_files,
    )
    from contrastkit.evaluators.harness import (
        HarnessReportConfig as HarnessReportConfig,
    )
    from contrastkit.evaluators.harness import (
        harness_report as harness_report,
    )
    from contrastkit.evaluators.html import (
        HtmlReportConfig as HtmlReportConfig,
    )
    from contrastkit.evaluators.html import (
        write_html_report as write_html_report,
    )
    from contrastkit.evaluators.job import (
        EvaluateConfig as EvaluateConfig,
    )
    from contrastkit.evaluators.job import (
        ReportConfig as ReportConfig,
    )
    from contrastkit.evaluators.job import (
        compare_results as compare_results,
    )
    from contrastkit.evaluators.job import (
        evaluate as evaluate,
    )
    from contrastkit.evaluators.runner import (
        EvalConfig as EvalConfig,
    )
    from contrastkit.evaluators.tasks.zero_shot.job import (
        ZeroShotDisparityConfig as ZeroShotDisparityConfig,
    )
    from contrastkit.evaluators.tasks.zero_shot.job import (
        zero_shot_disparity as zero_shot_disparity,
    )
    from contrastkit.interfaces import (
        CaptionScorer as CaptionScorer,
    )
    from contrastkit.interfaces import (
        ImageTextScorer as ImageTextScorer,
    )
    from contrastkit.interfaces import (
        PronounScorer as PronounScorer,
    )
    from contrastkit.models import (
        load_model as load_model,
    )
    from contrastkit.models import (
        load_scorer as load_scorer,
    )
    from contrastkit.results import (
        load_result as load_result,
    )
