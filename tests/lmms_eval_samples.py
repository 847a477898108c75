"""lmms-eval 0.7.3 ``--log_samples`` files: real ones, and lines built in their exact shape.

``tests/evaluators/lmms_eval_0_7_3/`` holds sample files that lmms-eval 0.7.3 itself wrote
(``python -m lmms_eval --include_path EXPORT --tasks contrastkit_visogender_all --limit 4
--batch_size 1 --log_samples --output_path OUT``, run from another folder) for the export
:func:`write_export` writes (the small VisoGender set of ``eval_data``, option seed 3):

* ``generate/``: ``--model dummy`` (lmms-eval's ``models/simple/dummy.py``), its
  ``generate_until`` patched to answer, by ``doc_id``, ``B``, ``The answer is (A).``, ``C``
  and ``I cannot tell from the picture.``.
* ``multiple_choice/``: the task YAMLs' ``output_type`` set to ``multiple_choice``;
  ``--model dummy`` with ``loglikelihood`` patched to return ``(-ln p, is_greedy)`` with
  ``p`` 0.7 / 0.2 / 0.1, the 0.7 going to A, B, C as ``doc_id`` goes 0, 1, 2, and the same
  ``ln 3`` for every letter at ``doc_id`` 3 (a tie).
* ``llava_hf_multiple_choice/``: ``output_type: multiple_choice``, ``--model llava_hf
  --force_simple --model_args pretrained=<a tiny random-weight LLaVA>,device=cpu,
  device_map=cpu,dtype=float32 --tasks contrastkit_visogender --limit 3`` (transformers
  4.57): the real model class's ``loglikelihood``.

lmms-eval composes each line in ``evaluator._process_document_results`` (``doc_id``,
``doc``, ``target``, ``arguments``, ``resps``, ``filtered_resps``, ``token_counts``,
``doc_hash``, then the task's ``process_results`` metrics) and writes it in
``loggers/evaluation_tracker.EvaluationTracker.save_results_samples``: ``input`` is
``arguments[0]``; ``arguments`` and ``doc`` are dropped; a one-element ``resps`` /
``filtered_resps`` list is flattened and ``resps`` dropped when it equals
``filtered_resps``. A log-likelihood response is text by then: ``api/instance.py``'s
``unwrap_generation_output`` returns ``str(output)`` for the ``(loss, is_greedy)`` tuple.

:func:`sample_line` builds a line of that shape for any answers (a test checks it
rebuilds the real files byte for byte).
"""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

from contrastkit.builders.harness import HarnessExportConfig, export_harness
from eval_data import write_small_dataset

#: The real files.
FOLDER = Path(__file__).parent / "evaluators" / "lmms_eval_0_7_3"
#: ``doc_hash`` of every line: the sha256 of ``json.dumps(None)`` (``requests[0].doc`` is
#: ``None`` for the exported tasks' requests).
DOC_HASH = "74234e98afe7498fb5daf1f36ac2d78acc339464f950703b8c019892f982b90b"


def write_export(folder: Path, out: Path) -> Path:
    """The lmms-eval export the real files answer (small VisoGender set, seed 3)."""
    paths = write_small_dataset(folder)
    export_harness(
        HarnessExportConfig(source=(paths["OP"], paths["OO"]), format="lmms-eval", out=out, seed=3)
    )
    return out


def import_utils(folder: Path) -> ModuleType:
    """An export's ``utils.py``, imported as lmms-eval imports it (by path)."""
    spec = importlib.util.spec_from_file_location(
        f"harness_utils_{id(folder)}", folder / "utils.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def rows(export: Path, dataset: str) -> list[dict[str, Any]]:
    """The task's data rows (``doc``), in the order lmms-eval numbers them (``doc_id``)."""
    import pyarrow.parquet as pq

    columns = ["index", "question", "A", "B", "C", "D", "answer"]
    return pq.read_table(export / "data" / f"{dataset}.parquet", columns=columns).to_pylist()


def loss_text(loss: float, is_greedy: bool) -> str:
    """One option's log-likelihood response as lmms-eval 0.7.3 logs it."""
    return str((loss, is_greedy))


def sample_line(utils: ModuleType, doc_id: int, doc: dict[str, Any],
                responses: Sequence[str]) -> str:  # fmt: skip
    """The line lmms-eval 0.7.3 writes for one doc of an exported task (``utils``: the
    export's ``utils.py``). ``responses``: one generated text (``generate_until``), or one
    :func:`loss_text` per option (``multiple_choice``)."""
    kwargs = {"pre_prompt": "", "post_prompt": "\n" + utils.POST_PROMPT}  # the YAML's default
    generated = len(responses) == 1
    results = [responses[0].strip()] if generated else list(responses)
    metrics = utils.process_results(doc, results)
    record = {
        "doc_id": doc_id,
        "target": str(utils.doc_to_target(doc)),
        "filtered_resps": responses[0] if generated else list(responses),
        "token_counts": [None] * len(responses),
        "doc_hash": DOC_HASH,
        **metrics,
        "input": utils.doc_to_text(doc, kwargs),
    }
    return json.dumps(record, ensure_ascii=False)
