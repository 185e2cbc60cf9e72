"""CPESH margin through a local LLM (spec 004, optional signal), shared by agents and batch.

Protocol: Ollama's ``POST {LNSP_LLM_ENDPOINT}/api/generate`` with ``{"model", "prompt",
"stream": false, "format": "json", "options": {"temperature": 0, "seed": 0}}``; the reply's
``response`` string must be a JSON object with ``expected``, ``soft_negative`` and
``hard_negative`` answers for a probe question about the concept. The three are embedded with
the documents' embedder (``VERDICTFLOW_QUALITY_EMBEDDER``; the offline default unless set);
``soft_sim``/``hard_sim`` are the cosines of the expected answer with each negative, and the
margin is ``max(0, 1 - max(soft_sim, hard_sim))``.

Fail closed without failing the document: an endpoint that is down, slow (timeout) or answers
garbage after the retries gives ``(None, "cpesh_unavailable: ...")``; the document is scored
with no CPESH credit and the reason is recorded in its row.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence

import httpx
import numpy as np
import orjson

from verdictflow.evaluators.doc_quality import cpesh_margin
from verdictflow.evaluators.embedding import Embedder, default_embedder
from verdictflow.settings import CpeshSettings

logger = logging.getLogger(__name__)

PROMPT = (
    "You write contrastive probes for a knowledge base. For the concept below, return a JSON "
    'object with keys "probe" (a question the concept answers), "expected" (its answer), '
    '"soft_negative" (a plausible but wrong answer) and "hard_negative" (a wrong answer that '
    "shares many words with the right one).\n\nConcept: {text}"
)
MAX_PROMPT_CHARS = 4000

Result = tuple[float | None, str | None]


def margin_from_reply(reply: object, embedder: Embedder | None = None) -> float:
    """The margin from the parsed ``response`` object; ValueError when it lacks an answer."""
    if not isinstance(reply, dict):
        raise ValueError("response is not a JSON object")
    parts = [reply.get(k) for k in ("expected", "soft_negative", "hard_negative")]
    if not all(isinstance(p, str) and p.strip() for p in parts):
        raise ValueError("response lacks expected/soft_negative/hard_negative")
    vecs = (embedder or default_embedder()).embed([str(p) for p in parts]).astype(np.float64)
    soft_sim, hard_sim = float(vecs[0] @ vecs[1]), float(vecs[0] @ vecs[2])
    return cpesh_margin(soft_sim, hard_sim)


class CpeshClient:
    """Bounded-concurrency, retrying client; use as an async context manager."""

    def __init__(self, settings: CpeshSettings, embedder: Embedder | None = None) -> None:
        self.settings = settings
        self.embedder = embedder or default_embedder()
        self._sem = asyncio.Semaphore(settings.llm_concurrency)
        self._client: httpx.AsyncClient | None = None

    async def __aenter__(self) -> CpeshClient:
        self._client = httpx.AsyncClient(
            base_url=self.settings.llm_endpoint.rstrip("/"),
            timeout=httpx.Timeout(self.settings.llm_timeout_seconds),
        )
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    async def margin(self, text: str) -> Result:
        """(margin, None), or (None, reason) when the LLM could not give one."""
        if not text.strip():
            return None, "cpesh_unavailable: empty text"
        assert self._client is not None, "use CpeshClient as an async context manager"
        body = {
            "model": self.settings.llm_model,
            "prompt": PROMPT.format(text=text[:MAX_PROMPT_CHARS]),
            "stream": False,
            "format": "json",
            "options": {"temperature": 0, "seed": 0},
        }
        last = "no attempt"
        async with self._sem:
            for attempt in range(self.settings.llm_retries + 1):
                if attempt:
                    await asyncio.sleep(0.2 * 2 ** (attempt - 1))
                try:
                    resp = await self._client.post("/api/generate", json=body)
                    resp.raise_for_status()
                    reply = orjson.loads(resp.json()["response"])
                    return margin_from_reply(reply, self.embedder), None
                except (httpx.HTTPError, KeyError, TypeError, ValueError) as exc:
                    last = f"{type(exc).__name__}: {exc}"[:200]
        logger.warning("CPESH margin deferred after %d attempts: %s", attempt + 1, last)
        return None, f"cpesh_unavailable: {last}"

    async def margins(self, texts: Sequence[str]) -> list[Result]:
        return list(await asyncio.gather(*(self.margin(t) for t in texts)))


async def cpesh_margins(
    texts: Sequence[str], settings: CpeshSettings, embedder: Embedder | None = None
) -> list[Result]:
    """Margins of many texts (the batch job's call)."""
    async with CpeshClient(settings, embedder) as client:
        return await client.margins(texts)
