"""Judge backends behind one interface: an OpenAI-compatible chat-completions endpoint, or a
local model. Drivers (network, model files), not evaluators: what to ask and how to
read the answer is :mod:`verdictflow.evaluators.faithfulness_llm`'s.

- :class:`OpenAIBackend`: the official ``openai`` client against any compatible endpoint
  (OpenAI, Azure's OpenAI-compatible route, vLLM, llama.cpp's server, Ollama), with its own
  retries off (``max_retries=0``): every attempt must pass the budget
  (:mod:`verdictflow.judge_tier.client` retries). JSON mode is asked for
  (``response_format={"type": "json_object"}``), temperature 0 and a fixed seed.
- :class:`LocalBackend`: a model run in this process, for data that must not leave the
  network: the shipped checker (:mod:`~verdictflow.judge_tier.checker_backend`) or a
  sentence-transformers cross-encoder (:mod:`~verdictflow.judge_tier.cross_encoder_backend`),
  both judging claim by claim (:mod:`~verdictflow.judge_tier.claim_checks`) and replying in
  the same claims contract an LLM gives, so one verdict builder reads every backend.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Protocol

from verdictflow.evaluators import faithfulness_llm as contract
from verdictflow.exceptions import VerdictflowError
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
