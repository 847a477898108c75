"""Dataset-bias audit (GenSynth Sec. 3 and 5): is the benchmark itself biased?

:func:`audit` (:mod:`contrastkit.audit.job`) runs, on a COCO folder or a contrast-set
export, the composition count (Sec. 3.2), the gender-agnostic retrieval baselines with
any registry models beside them (Sec. 3.4, Tab. 1; CLIP-clip of Sec. 5 via
:mod:`contrastkit.audit.clipclip`), the spurious-correlation caption classifier and
person-masked image probe, and the context clusters (Sec. 3.3, Fig. 1, Tab. 6), and
writes ``audit.json``, ``audit.md`` and PNG plots; on a VisoGender-style set, its
composition per cell. ``contrastkit audit`` is its command line.
"""

from __future__ import annotations

from contrastkit.audit.job import ANALYSES, AuditConfig, AuditResult, audit

__all__ = ["ANALYSES", "AuditConfig", "AuditResult", "audit"]
