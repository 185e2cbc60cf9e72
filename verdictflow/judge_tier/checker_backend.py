"""The claim checker trained here, as the judge tier's local backend (issue 43).

An int8 ONNX cross-encoder (``verdictflow train-checker``; the one shipped in
``verdictflow/data/checker/`` unless ``VERDICTFLOW_JUDGE_MODEL_DIR`` names another export)
run by ONNX Runtime on the CPU, with its ``tokenizer.json`` read by Hugging Face's
``tokenizers``. For each answer: its sentences are its claims; the contexts are cut into
chunks and each claim sent to its best chunks (:mod:`~verdictflow.evaluators.checker_chunks`);
each pair goes through the model on its own (:meth:`CheckerModel.probabilities` says why); a
claim's probability is its best chunk's, and it is supported from the card's
``supported_at`` (the one threshold that did best over the held-out dev sets;
:data:`SUPPORTED_AT` when an export has no card). The reply is the claims contract an LLM
gives (the quote is the best chunk, verbatim, so the verdict finds it in the contexts), plus
each claim's probability and chunk offsets and the cut used.

Probabilities are cached by (chunk, claim) digests (LRU, :data:`CACHE_PAIRS`): a context that
recurs across answers, as in RAG, is paid once per claim. The model's identity is the SHA-256
of its files; the shipped model's is checked at start against its card, so a damaged or
swapped file stops the worker instead of judging silently with other weights.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections import OrderedDict
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Any

import orjson

from verdictflow.evaluators import text_normalise
from verdictflow.evaluators.checker_chunks import (
    PAIR_TRUNCATION,
    TOP_CHUNKS,
    chunk_contexts,
    claim_sentences,
    cut_claim,
    top_chunks,
)
from verdictflow.judge_tier.backends import BackendError, LocalBackend
from verdictflow.judge_tier.pair_window import PairWindow
from verdictflow.models.events import AnswerEvent

#: P(supported) from which a claim counts as supported.
SUPPORTED_AT = 0.5
MAX_LENGTH = 256
#: Pairs per session call in :meth:`CheckerModel.run` when a caller batches (the benchmark's
#: reference); the backend itself scores one pair per call.
BATCH = 16
CACHE_PAIRS = 100_000
#: The most claims (sentences) of one answer the backend judges: each costs up to three pairs,
#: ~150 ms each on one core, and the backend judges one answer at a time, so an answer of 190
#: sentences (15 KB, under ``max_prompt_chars``) held every other escalation for ~80 s. Past
#: it the request DEFERs ``too_long_for_judge``, as a prompt past ``max_prompt_chars`` does:
#: at most ~15 s of one core an answer (docs/checker.md).
MAX_CLAIMS = 32
#: The files whose bytes are the model's identity.
MODEL_FILES = ("model.onnx", "tokenizer.json")


#: CPU features that choose ONNX Runtime's int8 and float kernels (MLAS): the same pair can
#: read differently on a CPU with other ones (docs/checker.md, "Determinism").
KERNEL_FEATURES = ("avx2", "avx512f", "avx512_vnni", "avx_vnni", "amx_int8", "asimd", "i8mm")


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


def shipped_dir() -> Path:
    return Path(str(resources.files("verdictflow") / "data" / "checker"))


def model_digest(directory: Path) -> str:
    digest = hashlib.sha256()
    for name in MODEL_FILES:
        path = directory / name
        if not path.is_file():
            raise BackendError(f"{directory}: not a checker export (no {name})")
        digest.update(name.encode())
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


class CheckerModel:
    """The ONNX session and tokenizer, batched, with the pair cache (thread-confined: one
    caller at a time)."""

    def __init__(self, directory: Path, threads: int = 1, *, expected_digest: str | None = None):
        import onnxruntime as ort
        from tokenizers import Tokenizer

        card_path = directory / "model_card.json"
        card = json.loads(card_path.read_text("utf-8")) if card_path.is_file() else {}
        # an export with a card (the shipped one, any train-checker output) is checked against it
        expected_digest = expected_digest or card.get("model_digest")
        self.digest = model_digest(directory)
        if expected_digest is not None and self.digest != expected_digest:
            raise BackendError(
                f"{directory}: the checker's files do not match its card (digest "
                f"{self.digest[:16]}, card says {expected_digest[:16]}); reinstall the package "
                "or point VERDICTFLOW_JUDGE_MODEL_DIR at a checker you trust"
            )
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        self.session = ort.InferenceSession(
            str(directory / "model.onnx"), options, providers=["CPUExecutionProvider"]
        )
        self.inputs = {i.name for i in self.session.get_inputs()}
        self.runtime = f"onnxruntime {ort.__version__}; cpu {cpu_kernels()}"
        self.tokenizer = Tokenizer.from_file(str(directory / "tokenizer.json"))
        self.tokenizer.enable_truncation(MAX_LENGTH, strategy=PAIR_TRUNCATION)
        self.tokenizer.enable_padding()
        self.window = PairWindow(self.tokenizer, MAX_LENGTH)  # a flood's pair in linear time
        found = card.get("supported_at")
        self.supported_at = float(found) if found is not None else SUPPORTED_AT
        self.cache: OrderedDict[bytes, float] = OrderedDict()
        self.hits = 0
        self.misses = 0

    def probabilities(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        """P(the chunk supports the claim) for each (chunk, claim), cached by their digests.

        One pair per session call, so that a probability is a function of its pair alone:
        the int8 export quantises its activations dynamically, with one scale for the whole
        input tensor, so a pair batched with others read 0.656 alone, 0.704 beside a longer
        pair and 0.661 in a batch of three, and a verdict depended on which answers' pairs
        were scored with it (or filled the cache before it). On the CPU one pair a call is no
        slower than batches of 16 (no padding): docs/checker.md."""
        keys = [_pair_key(c, q) for c, q in pairs]
        out = []
        for key, pair in zip(keys, pairs, strict=True):
            p = self.cache.get(key)
            if p is None:
                self.misses += 1
                (p,) = self.run([pair])
                self.cache[key] = p
                while len(self.cache) > CACHE_PAIRS:
                    self.cache.popitem(last=False)
            else:
                self.hits += 1
                self.cache.move_to_end(key)
            out.append(p)
        return out

    def run(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        """One session call over ``pairs`` (no cache). A pair's probability depends on the
        other pairs of the call (see :meth:`probabilities`): the backend passes one."""
        import numpy as np

        encoded = self.tokenizer.encode_batch([self.window.pair(c, q) for c, q in pairs])
        feeds = {
            "input_ids": np.array([e.ids for e in encoded], dtype=np.int64),
            "attention_mask": np.array([e.attention_mask for e in encoded], dtype=np.int64),
            "token_type_ids": np.array([e.type_ids for e in encoded], dtype=np.int64),
        }
        logits = self.session.run(["logits"], {k: v for k, v in feeds.items() if k in self.inputs})
        return [1.0 / (1.0 + math.exp(-float(x))) for x in logits[0][:, 0]]


def _pair_key(chunk: str, claim: str) -> bytes:
    return hashlib.blake2b(f"{chunk}\x1f{claim}".encode(), digest_size=16).digest()


def judge_answer(model: CheckerModel, event: AnswerEvent) -> dict[str, Any]:
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


class CheckerBackend(LocalBackend):
    """The judge tier's backend over :class:`CheckerModel` (see the module doc)."""

    name = "checker"
    prompt_version = "checker-chunks/1"

    def __init__(self, model_dir: str | None = None, threads: int = 1) -> None:
        super().__init__()
        directory = Path(model_dir) if model_dir else shipped_dir()
        if model_dir is None and not (directory / "model_card.json").is_file():
            raise BackendError(f"{directory}: the shipped checker has no model card")
        self._model = CheckerModel(directory, threads)
        self.model = f"{directory.name}@{self._model.digest[:16]}"

    def too_long(self, event: AnswerEvent) -> str | None:
        claims = len(claim_sentences(text_normalise.clean(event.answer)))
        if claims <= MAX_CLAIMS:
            return None
        return f"{claims} claims > the checker's {MAX_CLAIMS} an answer (3 pairs a claim)"

    def _judge(self, event: AnswerEvent) -> str:
        return orjson.dumps(judge_answer(self._model, event)).decode()
