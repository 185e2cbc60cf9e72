"""The summary judges of spec 002, Twin-Lock and Judge-Lock, as deterministic code.

Modules: ``text`` (parsed-text values), ``rules`` (rounding, bands, caps), ``keypoints``
(TextRank key points), ``claims`` (claim support, extraneous tokens), ``qag`` (cloze QAG),
``segments`` (relevance), ``alignment`` (tone/stance), ``toxicity`` (bias and toxicity),
``twin_lock`` and ``judge_lock`` (the two judges), ``verdicts`` (records and batches).
"""
