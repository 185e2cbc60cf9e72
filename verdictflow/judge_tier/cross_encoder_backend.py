"""A sentence-transformers ``CrossEncoder`` from a local directory as the judge tier's backend
(``VERDICTFLOW_JUDGE_MODEL_DIR``): an NLI model (three labels, its entailment probability), or
an HHEM- or MiniCheck-style one with one output (its sigmoid), for data that must not leave the
network.

It judges as the shipped checker does (:mod:`~verdictflow.judge_tier.claim_checks`): at most
32 claims an answer, each against its three best chunks of the contexts, one pair per model
call, cached by the pair's digest. Until 2026-11-29 it paired every claim with every context
sentence, which made one answer's cost grow with the product of the two: 4 claims against 44 KB
of context took a MiniLM-L6 cross-encoder 71.5 s on one core (``prompt_version``
``cross-encoder-claims/1``); now ``cross-encoder-chunks/2``. A claim is supported when its
best chunk's probability reaches :data:`SUPPORTED_AT`. The model's identity is its
directory's name and the digest of its files.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from verdictflow.judge_tier.backends import BackendError
from verdictflow.judge_tier.claim_checks import (
    ClaimCheckBackend,
    PairCache,
    cpu_kernels,
)
from verdictflow.judge_tier.pair_window import PairWindow

#: Probability from which a cross-encoder's pair counts as supported.
SUPPORTED_AT = 0.5


class CrossEncoderModel:
    """The loaded cross-encoder as a (chunk, claim) model, with its pair cache
    (thread-confined: one caller at a time)."""

    supported_at = SUPPORTED_AT

    def __init__(self, path: Path, threads: int = 1) -> None:
        import sentence_transformers
        import torch
        from sentence_transformers import CrossEncoder

        torch.set_num_threads(threads)
        self._model = CrossEncoder(str(path), device="cpu")
        config = self._model.model.config
        labels = {int(k): str(v).lower() for k, v in (config.id2label or {}).items()}
        self._entail = next((i for i, v in labels.items() if "entail" in v), None)
        self._labels = int(getattr(config, "num_labels", 1))
        backend = getattr(self._model.tokenizer, "backend_tokenizer", None)  # a fast tokenizer
        window = getattr(self._model, "max_seq_length", None)
        self.window = (
            PairWindow(backend, int(window)) if backend is not None and window else None
        )  # a flood's pair in linear time (pair_window's doc)
        self.runtime = (
            f"sentence-transformers {sentence_transformers.__version__}; torch "
            f"{torch.__version__}; cpu {cpu_kernels()}"
        )
        self.cache = PairCache()

    def probabilities(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        """P(supported) of each (chunk, claim), one pair per call (padding beside a longer
        pair moves the float sums), cached by the pair's digest."""
        return self.cache.probabilities(pairs, self._run_one)

    def _run_one(self, pair: tuple[str, str]) -> float:
        import torch

        if self.window is not None:
            pair = self.window.pair(*pair)
        logits: Any = self._model.predict(  # raw logits: the activation is chosen here
            [pair],
            convert_to_numpy=True,
            show_progress_bar=False,
            activation_fn=torch.nn.Identity(),
        )
        row = logits.reshape(1, -1)[0]
        if self._labels == 1:
            return 1.0 / (1.0 + math.exp(-float(row[0])))
        entail = self._entail if self._entail is not None else self._labels - 1
        top = max(float(x) for x in row)
        exps = [math.exp(float(x) - top) for x in row]
        return exps[entail] / sum(exps)


class CrossEncoderBackend(ClaimCheckBackend):
    """A local cross-encoder (see the module doc); scored in a thread, one answer at a time."""

    _model: CrossEncoderModel

    name = "cross-encoder"
    prompt_version = "cross-encoder-chunks/2"

    def __init__(self, model_dir: str, threads: int = 1) -> None:
        super().__init__()
        path = Path(model_dir)
        if not (path / "config.json").is_file():
            raise BackendError(f"{model_dir}: not a model directory (no config.json)")
        self._model = CrossEncoderModel(path, threads)
        digest = hashlib.sha256()
        for file in sorted(p for p in path.rglob("*") if p.is_file()):
            digest.update(file.relative_to(path).as_posix().encode())  # identity: the bytes
            digest.update(hashlib.sha256(file.read_bytes()).digest())
        self.model = f"{path.name}@{digest.hexdigest()[:16]}"
