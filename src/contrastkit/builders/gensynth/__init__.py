"""GenSynth: synthetic gender contrast sets from COCO (seeds/001, Sec. 4, Appendix A).

Three stages, each runnable alone on a build folder (layout:
:mod:`contrastkit.builders.manifest`):

1. :func:`run_edit_stage` (Sec. 4.1, App. A.2, Tab. 7; :mod:`.edit`): select the COCO
   sources (:func:`contrastkit.builders.coco.select_sources`), crop each person box, edit
   it with every instruction for each target gender at each text guidance scale
   (:mod:`contrastkit.curation.editing`), paste the edit back and record it in the
   manifest. Finished edits are skipped on a rerun.
2. :func:`run_filter_stage` (Sec. 4.2, Eq. 4-5, App. A.3; :mod:`.filter`): embed the real
   person crops ``R`` and the edited crops ``S`` with one image encoder, compute ``P_R``,
   ``P_G`` and the decisions (:func:`contrastkit.curation.knn_filter.knn_filter`) and
   write them into the manifest, with acceptance rates in the build summary.
3. :func:`run_select_stage` (Sec. 4.2, 4.3; :mod:`.select`): keep sources with an
   accepted edit of each gender, draw one per gender and write the contrast set with
   gender-adjusted captions. :func:`quality_sets` lists the image sets the Sec. 4.3 /
   Tab. 2 quality checks score (the evaluators' ``quality`` module computes them;
   :func:`contrastkit.builders.gensynth.job.build_gensynth` runs the whole build with them).

The build summary (``build_summary.json``) is read and written by :mod:`.summary`; its
``settings`` entry holds the options of the build's latest run, which a later run on the
folder reuses for every option it is not given (:func:`recorded_settings`), and an entry
made before a later stage changed its inputs (the selection, after a re-filter) is marked
``stale``.

Sharded builds (:mod:`.shards`): ``EditStageConfig(..., shard=Shard(K, N))`` edits one
shard's sources in ``out/shards/K-of-N`` and :func:`embed_build` embeds them there;
:func:`merge_shards` combines the shards into ``out`` for the filter and select stages.
"""

from contrastkit.builders.gensynth.edit import EditStageConfig, EditStageReport, run_edit_stage
from contrastkit.builders.gensynth.filter import (
    FilterSettings,
    embed_build,
    read_embeddings,
    run_filter_stage,
)
from contrastkit.builders.gensynth.select import LabeledImages, quality_sets, run_select_stage
from contrastkit.builders.gensynth.shards import MergeConfig, MergeReport, Shard, merge_shards
from contrastkit.builders.gensynth.summary import (
    SETTINGS,
    STALE,
    Progress,
    load_image,
    person_crop,
    read_summary,
    record_settings,
    recorded_settings,
    update_summary,
)

__all__ = [
    "SETTINGS",
    "STALE",
    "EditStageConfig",
    "EditStageReport",
    "FilterSettings",
    "LabeledImages",
    "MergeConfig",
    "MergeReport",
    "Progress",
    "Shard",
    "embed_build",
    "load_image",
    "merge_shards",
    "person_crop",
    "quality_sets",
    "read_embeddings",
    "read_summary",
    "record_settings",
    "recorded_settings",
    "run_edit_stage",
    "run_filter_stage",
    "run_select_stage",
    "update_summary",
]
