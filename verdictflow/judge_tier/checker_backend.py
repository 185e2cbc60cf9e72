"""The claim checker trained here, as the judge tier's local backend (issue 43).

An int8 ONNX cross-encoder (``verdictflow train-checker``; the one shipped in
``verdictflow/data/checker/`` unless ``VERDICTFLOW_JUDGE_MODEL_DIR`` names another export)
run by ONNX Runtime on the CPU, with its ``tokenizer.json`` read by Hugging Face's
``tokenizers``. Each answer is judged claim by claim against its best chunks
(:mod:`~verdictflow.judge_tier.claim_checks`, shared with the cross-encoder backend); each
pair goes through the model on its own (:meth:`CheckerModel.probabilities` says why); a claim
is supported from the card's ``supported_at`` (the one threshold that did best over the
held-out dev sets; :data:`SUPPORTED_AT` when an export has no card).

Probabilities are cached by (chunk, claim) digests (:class:`~verdictflow.judge_tier.
claim_checks.PairCache`): a context that recurs across answers, as in RAG, is paid once per
claim. The model's identity is the SHA-256 of its files; the shipped model's is checked at
start against its card, so a damaged or swapped file stops the worker instead of judging
silently with other weights.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Sequence
from importlib import resources
from pathlib import Path

from verdictflow.evaluators.checker_chunks import PAIR_TRUNCATION
from verdictflow.judge_tier.backends import BackendError
from verdictflow.judge_tier.claim_checks import (
    ClaimCheckBackend,
    PairCache,
    cpu_kernels,
)
from verdictflow.judge_tier.pair_window import PairWindow

#: P(supported) from which a claim counts as supported.
SUPPORTED_AT = 0.5
MAX_LENGTH = 256
#: Pairs per session call in :meth:`CheckerModel.run` when a caller batches (the benchmark's
#: reference); the backend itself scores one pair per call.
BATCH = 16
#: The files whose bytes are the model's identity.
MODEL_FILES = ("model.onnx", "tokenizer.json")


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
        self.cache = PairCache()

    def probabilities(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        """P(the chunk supports the claim) for each (chunk, claim), cached by their digests.

        One pair per session call, so that a probability is a function of its pair alone:
        the int8 export quantises its activations dynamically, with one scale for the whole
        input tensor, so a pair batched with others read 0.656 alone, 0.704 beside a longer
        pair and 0.661 in a batch of three, and a verdict depended on which answers' pairs
        were scored with it (or filled the cache before it). On the CPU one pair a call is no
        slower than batches of 16 (no padding): docs/checker.md."""
        return self.cache.probabilities(pairs, lambda pair: self.run([pair])[0])

    @property
    def hits(self) -> int:
        return self.cache.hits

    @property
    def misses(self) -> int:
        return self.cache.misses

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


class CheckerBackend(ClaimCheckBackend):
    """The judge tier's backend over :class:`CheckerModel` (see the module doc)."""

    _model: CheckerModel

    name = "checker"
    prompt_version = "checker-chunks/1"

    def __init__(self, model_dir: str | None = None, threads: int = 1) -> None:
        super().__init__()
        directory = Path(model_dir) if model_dir else shipped_dir()
        if model_dir is None and not (directory / "model_card.json").is_file():
            raise BackendError(f"{directory}: the shipped checker has no model card")
        self._model = CheckerModel(directory, threads)
        self.model = f"{directory.name}@{self._model.digest[:16]}"
