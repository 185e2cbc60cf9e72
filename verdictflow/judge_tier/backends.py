"""Judge backends behind one interface: an OpenAI-compatible chat-completions endpoint, or a
local cross-encoder. Drivers (network, model files), not evaluators: what to ask and how to
read the answer is :mod:`verdictflow.evaluators.faithfulness_llm`'s.

- :class:`OpenAIBackend`: the official ``openai`` client against any compatible endpoint
  (OpenAI, Azure's OpenAI-compatible route, vLLM, llama.cpp's server, Ollama), with its own
  retries off (``max_retries=0``): every attempt must pass the budget
  (:mod:`verdictflow.judge_tier.client` retries). JSON mode is asked for
  (``response_format={"type": "json_object"}``), temperature 0 and a fixed seed.
- :class:`CrossEncoderBackend`: a sentence-transformers ``CrossEncoder`` from a local
  directory (an NLI model, or an HHEM- or MiniCheck-style one), for data that must not leave
  the network. The answer's sentences are its claims; a claim is supported when its best
  context sentence's entailment (or consistency) probability reaches 0.5; the reply is the
  same claims contract an LLM gives, so one verdict builder reads both.
"""

from __future__ import annotations

import asyncio
import hashlib
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import orjson

from verdictflow.evaluators import faithfulness_llm as contract
from verdictflow.evaluators import text_normalise
from verdictflow.exceptions import VerdictflowError
from verdictflow.judge_tier.pair_window import PairWindow
from verdictflow.models.events import AnswerEvent

#: Seed sent with every request: servers that honour it give repeatable samples.
SEED = 20_261_125


class BackendError(VerdictflowError):
    """A backend that cannot be set up (a missing model directory, a bad URL)."""


@dataclass(frozen=True)
class Reply:
    """One response: the message content and the token counts the server reported."""

    content: str
    prompt_tokens: int | None = None
    completion_tokens: int | None = None


Messages = list[dict[str, str]]


class Backend(Protocol):
    name: str
    model: str
    prompt_version: str
    #: Whether it can run the spec-002 rubric (a chat model can; a cross-encoder cannot).
    runs_rubric: bool

    async def ask(
        self, event: AnswerEvent, max_tokens: int, messages: Messages | None = None
    ) -> Reply: ...

    def too_long(self, event: AnswerEvent) -> str | None:
        """Why this backend will not take ``event`` (past a per-request bound of its own),
        checked before the budget is asked; None when it will."""
        ...

    async def close(self) -> None: ...


class OpenAIBackend:
    """Chat completions on an OpenAI-compatible endpoint (see the module doc). Errors are the
    client's own (``openai.RateLimitError``, ``APIStatusError``, ``APITimeoutError``, ...);
    the caller decides what to retry."""

    name = "openai"
    prompt_version = contract.PROMPT_VERSION
    runs_rubric = True

    def __init__(self, base_url: str, model: str, api_key: str, timeout: float) -> None:
        from openai import AsyncOpenAI

        self.model = model
        self.client = AsyncOpenAI(
            base_url=base_url, api_key=api_key or "none", max_retries=0, timeout=timeout
        )

    async def ask(
        self, event: AnswerEvent, max_tokens: int, messages: Messages | None = None
    ) -> Reply:
        """The reply to ``messages`` (default: the faithfulness prompt for ``event``)."""
        completion = await self.client.chat.completions.create(  # type: ignore[call-overload]
            model=self.model,
            messages=messages if messages is not None else contract.messages(event),
            temperature=0,
            seed=SEED,
            max_tokens=max_tokens,
            response_format={"type": "json_object"},
        )
        content = completion.choices[0].message.content if completion.choices else None
        usage = completion.usage
        return Reply(
            content or "",
            usage.prompt_tokens if usage is not None else None,
            usage.completion_tokens if usage is not None else None,
        )

    def too_long(self, event: AnswerEvent) -> str | None:
        return None  # the endpoint's limits are max_prompt_chars and its own refusals

    async def close(self) -> None:
        await self.client.close()


_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=\S)")
#: Probability from which a cross-encoder's pair counts as supported.
SUPPORTED_AT = 0.5


class LocalBackend:
    """A model run in this process: each answer judged in a worker thread, one at a time (the
    model and its caches are not shared between threads), by :meth:`_judge`."""

    runs_rubric = False

    def __init__(self) -> None:
        self._lock = asyncio.Lock()

    def _judge(self, event: AnswerEvent) -> str:
        raise NotImplementedError

    async def ask(
        self, event: AnswerEvent, max_tokens: int, messages: Messages | None = None
    ) -> Reply:
        async with self._lock:
            content = await asyncio.to_thread(self._judge, event)
        return Reply(content)

    def too_long(self, event: AnswerEvent) -> str | None:
        return None

    async def close(self) -> None:
        return None


class CrossEncoderBackend(LocalBackend):
    """A local cross-encoder (see the module doc); scored in a thread, one answer at a time."""

    name = "cross-encoder"
    prompt_version = "cross-encoder-claims/1"

    def __init__(self, model_dir: str, threads: int = 1) -> None:
        super().__init__()
        path = Path(model_dir)
        if not (path / "config.json").is_file():
            raise BackendError(f"{model_dir}: not a model directory (no config.json)")
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
        self._window = (
            PairWindow(backend, int(window)) if backend is not None and window else None
        )  # a flood's pair in linear time (pair_window's doc)
        weights = sorted(p for p in path.rglob("*") if p.is_file())
        digest = hashlib.sha256()
        for file in weights:  # the model's identity is its files' bytes
            digest.update(file.relative_to(path).as_posix().encode())
            digest.update(hashlib.sha256(file.read_bytes()).digest())
        self.model = f"{path.name}@{digest.hexdigest()[:16]}"

    def _judge(self, event: AnswerEvent) -> str:
        claims = [s for s in _SENTENCE.split(text_normalise.clean(event.answer).strip()) if s]
        sentences = [
            s
            for c in event.context_passages
            for s in _SENTENCE.split(text_normalise.clean(c.text).strip())
            if s.strip()
        ]
        out = []
        for claim in claims:
            best, quote = 0.0, ""
            if sentences:
                probabilities = self._probabilities([(s, claim) for s in sentences])
                top = max(range(len(sentences)), key=lambda i: (probabilities[i], -i))
                best, quote = probabilities[top], sentences[top]
            out.append(
                {"claim": claim, "supported": best >= SUPPORTED_AT, "evidence": quote,
                 "probability": round(best, 6)}
            )  # fmt: skip
        return orjson.dumps({"claims": out}).decode()

    def _probabilities(self, pairs: list[tuple[str, str]]) -> list[float]:
        import torch

        if self._window is not None:
            pairs = [self._window.pair(s, c) for s, c in pairs]
        logits: Any = self._model.predict(  # raw logits: the activation is chosen here
            pairs, convert_to_numpy=True, show_progress_bar=False, activation_fn=torch.nn.Identity()
        )
        if self._labels == 1:
            return [1.0 / (1.0 + math.exp(-float(x))) for x in logits.reshape(-1)]
        entail = self._entail if self._entail is not None else self._labels - 1
        out = []
        for row in logits:
            top = max(float(x) for x in row)
            exps = [math.exp(float(x) - top) for x in row]
            out.append(exps[entail] / sum(exps))
        return out
