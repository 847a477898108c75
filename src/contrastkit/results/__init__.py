"""Typed results: one frozen dataclass tree per task, read from and written back to the
JSON files the evaluations write.

Every results file has ``task`` (which tree reads it) and ``schema_version`` (files
without it are version 1, the shape every file written before the field existed has; a
VisoGender benchmark keeps Appendix J's single ``visogender_<model>_results`` object and
has both inside it). :func:`load_result` reads any of them and picks the tree:

* ``visogender`` — :class:`VisoGenderResult` (``benchmark.json`` of a VisoGender set, or
  of a harness's answers to its export);
* ``contrast`` — :class:`ContrastResult`; ``stereotype`` — :class:`StereotypeResult`;
  ``decisions`` — :class:`DecisionsResult`;
* ``harness-contrast`` — :class:`HarnessResult` (``harness_results.json``);
* ``zero-shot-disparity`` — :class:`ZeroShotResult` (``disparity.json``);
* ``audit`` — :class:`AuditReport` (``audit.json``).

Example::

    from contrastkit.results import load_result, VisoGenderResult

    result = load_result("out/open_clip-ViT-B-32-openai")  # the folder, or its benchmark.json
    if isinstance(result, VisoGenderResult):
        split = result.resolution_bias.two_person_images
        print(result.metadata.model_name, split.gender_gap, split.intervals["gender_gap_ci"])
    data = result.to_json()  # the file's JSON again, keys it does not type included

A value of the wrong type is a :class:`~contrastkit.errors.DataFormatError` naming the
file and the field's dotted path; keys a tree does not know are kept in each node's
``extra``, so ``to_json(from_json(x)) == x``. :func:`json_schema` gives a tree's JSON
Schema; ``docs/schemas/<task>.schema.json`` are those files.
"""

from __future__ import annotations

from contrastkit.results.audit import (
    AuditReport,
    ClusterMember,
    Composition,
    ContextCluster,
    ContextClusters,
)
from contrastkit.results.base import (
    SCHEMA_VERSION,
    Node,
    Result,
    load_result,
    register_result,
    registered_results,
    result_class,
    task_of,
)
from contrastkit.results.common import Interval, KWarning, MetricSummary, SkippedRows
from contrastkit.results.contrast import ContrastResult, ContrastSummary
from contrastkit.results.decisions import DecisionFigures, DecisionsResult
from contrastkit.results.harness import HarnessResult, HarnessSection
from contrastkit.results.schema import json_schema, write_schemas
from contrastkit.results.stereotype import StereotypeResult, StereotypeScores
from contrastkit.results.visogender import (
    ResolutionBias,
    ResolutionSplit,
    RetrievalBias,
    VisoGenderMetadata,
    VisoGenderResult,
)
from contrastkit.results.zero_shot import ConceptDisparity, ZeroShotResult

__all__ = [
    "SCHEMA_VERSION",
    "AuditReport",
    "ClusterMember",
    "Composition",
    "ConceptDisparity",
    "ContextCluster",
    "ContextClusters",
    "ContrastResult",
    "ContrastSummary",
    "DecisionFigures",
    "DecisionsResult",
    "HarnessResult",
    "HarnessSection",
    "Interval",
    "KWarning",
    "MetricSummary",
    "Node",
    "ResolutionBias",
    "ResolutionSplit",
    "Result",
    "RetrievalBias",
    "SkippedRows",
    "StereotypeResult",
    "StereotypeScores",
    "VisoGenderMetadata",
    "VisoGenderResult",
    "ZeroShotResult",
    "json_schema",
    "load_result",
    "register_result",
    "registered_results",
    "result_class",
    "task_of",
    "write_schemas",
]
