"""One answer judged claim by claim by a local (chunk, claim) model: the path the shipped
checker (:mod:`~verdictflow.judge_tier.checker_backend`) and a sentence-transformers
cross-encoder (:mod:`~verdictflow.judge_tier.cross_encoder_backend`) share, so that both
read long documents the same way and cost the same bounded number of pairs an answer.

The answer's sentences are its claims (at most :data:`MAX_CLAIMS`); the contexts are cut into
chunks and each claim sent to its best :data:`~verdictflow.evaluators.checker_chunks.TOP_CHUNKS`
(:mod:`~verdictflow.evaluators.checker_chunks`); a claim's probability is its best chunk's,
supported from the model's ``supported_at``. The reply is the claims contract an LLM gives
(the quote is the best chunk, verbatim, so the verdict finds it in the contexts), plus each
claim's probability and chunk offsets, the cut used and the runtime.

Why a bound on pairs: a local model judges one answer at a time, so what one answer costs
holds every other escalation. Pairing each claim with every context sentence (the
cross-encoder backend before 2026-11-29) cost claims x sentences pairs: 4 claims against 44 KB
of context took a MiniLM-L6 cross-encoder 71.5 s on one core, and an answer of 32 claims
would have taken ~10 minutes (docs/checker.md).
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import orjson

from verdictflow.evaluators import text_normalise
from verdictflow.evaluators.checker_chunks import (
    TOP_CHUNKS,
    chunk_contexts,
    claim_sentences,
    cut_claim,
    top_chunks,
)
from verdictflow.judge_tier.backends import LocalBackend
from verdictflow.models.events import AnswerEvent

#: The most claims (sentences) of one answer a local model judges: each costs up to
#: :data:`TOP_CHUNKS` pairs, ~150 ms each on one core for the shipped checker, and one answer
#: is judged at a time, so an answer of 190 sentences (15 KB, under ``max_prompt_chars``) held
#: every other escalation for ~80 s. Past it the request DEFERs ``too_long_for_judge``, as a
#: prompt past ``max_prompt_chars`` does: at most ~15 s of one core an answer (docs/checker.md).
MAX_CLAIMS = 32
#: (chunk, claim) probabilities kept per model (LRU).
CACHE_PAIRS = 100_000
#: CPU features that choose the int8 and float kernels (ONNX Runtime's MLAS, PyTorch's
#: oneDNN): the same pair can read differently on a CPU with other ones (docs/checker.md,
#: "Determinism").
KERNEL_FEATURES = ("avx2", "avx512f", "avx512_vnni", "avx_vnni", "amx_int8", "asimd", "i8mm")


class PairModel(Protocol):
    """A (chunk, claim) model: P(the chunk supports the claim) for each pair."""

    #: P(supported) from which a claim counts as supported.
    supported_at: float
    #: What ran it (library versions, the CPU's kernels), recorded in every reply.
    runtime: str

    def probabilities(self, pairs: Sequence[tuple[str, str]]) -> list[float]: ...


class PairCache:
    """Probabilities by (chunk, claim) digest, LRU (:data:`CACHE_PAIRS`), each pair run on its
    own: a context that recurs across answers, as in RAG, is paid once per claim, and a
    probability never depends on which other pairs shared a model call (or filled the cache
    before it). Thread-confined, as its model is."""

    def __init__(self, size: int = CACHE_PAIRS) -> None:
        self._size = size
        self._store: OrderedDict[bytes, float] = OrderedDict()
        self.hits = 0
        self.misses = 0

    def probabilities(
        self, pairs: Sequence[tuple[str, str]], run_one: Callable[[tuple[str, str]], float]
    ) -> list[float]:
        out = []
        for pair in pairs:
            key = hashlib.blake2b(f"{pair[0]}\x1f{pair[1]}".encode(), digest_size=16).digest()
            p = self._store.get(key)
            if p is None:
                self.misses += 1
                p = run_one(pair)
                self._store[key] = p
                while len(self._store) > self._size:
                    self._store.popitem(last=False)
            else:
                self.hits += 1
                self._store.move_to_end(key)
            out.append(p)
        return out


def cpu_kernels() -> str:
    """The machine and the :data:`KERNEL_FEATURES` its CPU has ("x86_64 avx2+avx512f+..."),
    recorded in every reply, so that a replay on other hardware that reads a probability
    differently says why."""
    import platform

    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as cpuinfo:
            flags = next(
                (line.split(":", 1)[1].split() for line in cpuinfo
                 if line.startswith(("flags", "Features"))),
                [],
            )  # fmt: skip
    except OSError:
        flags = []
    found = [f for f in KERNEL_FEATURES if f in flags]
    return " ".join([platform.machine() or "unknown", "+".join(found) or "-"])


def too_many_claims(event: AnswerEvent, backend: str) -> str | None:
    """Why ``backend`` will not judge ``event`` (past :data:`MAX_CLAIMS`); None when it will."""
    claims = len(claim_sentences(text_normalise.clean(event.answer)))
    if claims <= MAX_CLAIMS:
        return None
    return f"{claims} claims > the {backend}'s {MAX_CLAIMS} an answer ({TOP_CHUNKS} pairs a claim)"


def judge_answer(model: PairModel, event: AnswerEvent) -> dict[str, Any]:
    """The claims reply for one answer (see the module doc)."""
    contexts = [c.text for c in event.context_passages]
    chunks = chunk_contexts(contexts)
    claims = [cut_claim(c) for c in claim_sentences(text_normalise.clean(event.answer))]
    asked: list[tuple[int, int]] = []
    for n, claim in enumerate(claims):
        asked += [(n, i) for i in (top_chunks(claim, chunks, TOP_CHUNKS) if chunks else [])]
    probabilities = model.probabilities([(chunks[i].text, claims[n]) for n, i in asked])
    best: dict[int, tuple[float, int]] = {}
    for (n, i), p in zip(asked, probabilities, strict=True):
        if n not in best or p > best[n][0]:
            best[n] = (p, i)
    out = []
    for n, claim in enumerate(claims):
        p, i = best.get(n, (0.0, -1))
        chunk = chunks[i] if i >= 0 else None
        out.append(
            {
                "claim": claim,
                "supported": p >= model.supported_at,
                "evidence": chunk.text if chunk is not None else "",
                "probability": round(p, 6),
                "chunk": None if chunk is None
                else {"context": chunk.context, "start": chunk.start, "end": chunk.end},
            }
        )  # fmt: skip
    return {"claims": out, "supported_at": model.supported_at, "runtime": model.runtime}


class ClaimCheckBackend(LocalBackend):
    """A judge backend over a local (chunk, claim) model (set by the subclass as ``_model``):
    the claim cap and the claim-by-claim reply, the same for every such model."""

    name: str
    _model: PairModel

    def too_long(self, event: AnswerEvent) -> str | None:
        return too_many_claims(event, self.name)

    def _judge(self, event: AnswerEvent) -> str:
        return orjson.dumps(judge_answer(self._model, event)).decode()
