"""Stereotype probe sets: the VLStereoSet format (Zhou et al., 2022; seeds/002).

VLStereoSet (Sec. 3.1-3.2) pairs each image with the three statements of one StereoSet
intrasentence item (Nadeem et al., 2021): a context sentence ``c_t`` with a blank that
holds a target term ``t`` (*My sister is BLANK.*), filled with the stereotypical,
anti-stereotypical and irrelevant attribute terms ``a_{t,s}``, ``a_{t,a}``, ``a_{t,i}``
(*caring*, *rude*, *hi*). A row of the data set ``D = {(I, S_s, S_a, S_i, y)}`` is one
image ``I``, the three captions and the label ``y`` saying which of ``S_s`` / ``S_a``
the image shows (crowd-verified, Sec. 3.2). The neutralised captions ``S'_s`` / ``S'_a``
(the target term replaced by a neutral one, Sec. 3.5 and Fig. 2) feed the lmss / vlss
metrics.

**The format.** A probe set is a UTF-8 TSV (``.tsv``, a header line then one image per
line) or JSON Lines (``.jsonl``, one object per line with these keys), with the columns
of :data:`COLUMNS`, in this order when written:

=================================== ============================================================
column                              meaning
=================================== ============================================================
``id``                              unique row ID (the builder writes ``<statement id>-<n>``)
``image``                           an http(s) URL, a ``file://`` URL, or a local path
                                    (a relative path is relative to the file's folder)
``category``                        StereoSet bias type: ``gender``, ``profession``, ``race``,
                                    ``religion`` (:data:`CATEGORIES`)
``target``                          the target term ``t`` (``sister``)
``context``                         the context sentence ``c_t``, with ``BLANK``
``stereotype_term``                 ``a_{t,s}`` (``caring``)
``anti_stereotype_term``            ``a_{t,a}`` (``rude``)
``unrelated_term``                  ``a_{t,i}`` (``hi``)
``stereotype_caption``              ``S_s``: the context, BLANK filled with ``a_{t,s}``
``anti_stereotype_caption``         ``S_a``
``unrelated_caption``               ``S_i``
``label``                           ``y``: ``stereotype`` or ``anti-stereotype``
                                    (:data:`LABELS`): which statement the image shows
``neutral_stereotype_caption``      ``S'_s``: ``S_s`` with the target neutralised, or empty
                                    when the target has no neutral form (:func:`neutralise`)
``neutral_anti_stereotype_caption`` ``S'_a``, or empty (empty together with ``S'_s``)
``annotator``                       who verified the image (may be empty; optional column)
``licence``                         the image's licence (may be empty; optional column)
=================================== ============================================================

Reading checks every row and raises one :class:`~contrastkit.errors.DataFormatError`
naming the file, the line (the TSV header is line 1; a JSON Lines file's first object is
line 1) and the field: a missing column or key, a wrong number of fields, an empty
required value, an unknown category, a label outside :data:`LABELS`, an ID used twice,
an image reference that is a URL but not an http(s) / file one, a context without
``BLANK``, a caption that does not contain its attribute term, a neutral caption given
without its partner. Fields never hold tabs or line breaks. Text from data stays text:
nothing here interprets it as markup.
"""

from __future__ import annotations

from contrastkit.probes.files import is_probe_set, load_probe_set, read_probes, write_probes
from contrastkit.probes.format import (
    BLANK,
    CATEGORIES,
    COLUMNS,
    EXPORT_CONFIG,
    LABELS,
    OPTIONAL_COLUMNS,
    PROBE_FILE,
    ProbeRow,
    check_probe_row,
)
from contrastkit.probes.neutral import (
    EXTRA_GENDER_TERMS,
    NEUTRAL_TERMS,
    neutral_term,
    neutralise,
    read_neutral_terms,
)
from contrastkit.records import text_lines

__all__ = [
    "BLANK",
    "CATEGORIES",
    "COLUMNS",
    "EXPORT_CONFIG",
    "EXTRA_GENDER_TERMS",
    "LABELS",
    "NEUTRAL_TERMS",
    "OPTIONAL_COLUMNS",
    "PROBE_FILE",
    "ProbeRow",
    "check_probe_row",
    "is_probe_set",
    "load_probe_set",
    "neutral_term",
    "neutralise",
    "read_neutral_terms",
    "read_probes",
    "text_lines",
    "write_probes",
]
