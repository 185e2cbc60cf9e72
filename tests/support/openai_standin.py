"""A local OpenAI-compatible chat-completions server for the judge tier's tests: scripted,
deterministic replies, latency, and failures (500, 429 with Retry-After) on a fixed pattern.

The reply to a request is computed from its prompt, as a careful judge would answer on easy
cases: each sentence of the answer is a claim, supported when the contexts contain it verbatim
(case and final full stop aside), quoted as its own evidence. So the same prompt always gets the
same reply, and a test knows which claims are supported.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import orjson
import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response

from verdictflow.dev_servers import free_port

_SENTENCE = re.compile(r"(?<=[.!?])\s+")


def _user_fields(body: dict[str, Any], keys: set[str]) -> dict[str, Any] | None:
    """The user message's JSON object when it has ``keys``, else None (another prompt)."""
    for message in body.get("messages", []):
        if message.get("role") != "user":
            continue
        try:
            data = orjson.loads(message.get("content", ""))
        except orjson.JSONDecodeError:
            return None
        if isinstance(data, dict) and keys <= data.keys():
            return data
    return None


def judge_fields(body: dict[str, Any]) -> dict[str, Any] | None:
    """The judge prompt's JSON fields (question, contexts, answer), or None for another prompt."""
    return _user_fields(body, {"contexts", "answer"})


def rubric_fields(body: dict[str, Any]) -> dict[str, Any] | None:
    """The rubric prompt's JSON fields (article, summary), or None for another prompt."""
    return _user_fields(body, {"article", "summary"})


#: A summary holding this gets a malformed reply every time (the rubric's hard-fail case).
ALWAYS_MALFORMED = "[standin: malformed]"


def scripted_rubric(fields: dict[str, Any]) -> dict[str, Any]:
    """The rubric's judgements as a careful judge gives them on easy cases: the article's
    sentences are its key points (Fully when the summary has them verbatim, else Not), the
    summary's sentences its claims (Supported when the article has them), six questions on the
    article's sentences answered from the summary the same way, six on the claims from the
    article; a neutral tone, no drift."""
    article = [s.strip() for s in _SENTENCE.split(fields["article"]) if s.strip()]
    summary = [s.strip() for s in _SENTENCE.split(fields["summary"]) if s.strip()]
    low_article, low_summary = fields["article"].lower(), fields["summary"].lower()

    def has(text: str, sentence: str) -> bool:
        return sentence.rstrip(".").lower() in text

    def qag(sentences: list[str], other: str, other_sentences: list[str]) -> list[dict[str, Any]]:
        out = []
        for i in range(6):
            sentence = sentences[i % len(sentences)] if sentences else ""
            found = has(other, sentence)
            out.append({"question": f"What does sentence {i} say?", "expected": sentence,
                        "label": "Correct" if found else "Wrong",
                        "answered_from": sentence if found else ""})  # fmt: skip
        return out

    frame = {
        "article_intent": "tone: neutral; stance: report",
        "summary_intent": "tone: neutral; stance: report",
        "deviations": {"meaning": "none", "tone": "none", "framing": "none"},
        "theme": article[0] if article else "",
    }
    points = [{"point": p, "label": "Fully" if has(low_summary, p) else "Not"}
              for p in article[:7]]  # fmt: skip
    return {
        "extraneous_tokens": [],
        "claims": [
            {"claim": c, "label": "Supported" if has(low_article, c) else "Unsupported"}
            for c in summary[:10]
        ],
        "tone": "neutral",
        "twin_lock": {**frame, "key_points": points},
        "judge_lock": {
            **frame,
            "key_points": points,
            "qag": qag(article, low_summary, summary),
            "claim_qag": qag(summary, low_article, article),
        },
    }


def scripted_reply(fields: dict[str, Any]) -> dict[str, Any]:
    """The claims a careful judge gives on easy cases (see the module doc)."""
    contexts = "\n\n".join(fields["contexts"]).lower()
    answer = fields["answer"].strip()
    claims = []
    for sentence in (s for s in _SENTENCE.split(answer) if s.strip()):
        core = sentence.strip().rstrip(".").lower()
        supported = core in contexts
        claims.append({"claim": sentence.strip(), "supported": supported,
                       "evidence": sentence.strip().rstrip(".") if supported else ""})  # fmt: skip
    return {"claims": claims}


@dataclass
class StandIn:
    """What the server does and what it saw."""

    #: One entry per request, cycling: "ok", "500", "429", "400", "malformed", "huge".
    pattern: Sequence[str] = ("ok",)
    latency: float = 0.0
    #: Per request, cycling, instead of ``latency`` when given.
    latencies: Sequence[float] = ()
    retry_after: float = 1.0
    model: str = "standin-judge"
    #: time.monotonic() of every request received, and its outcome.
    seen: list[tuple[float, str]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def app(self) -> FastAPI:
        app = FastAPI()

        @app.post("/v1/chat/completions")
        async def complete(request: Request) -> Response:
            body = await request.json()
            with self.lock:
                outcome = self.pattern[len(self.seen) % len(self.pattern)]
                latency = (
                    self.latencies[len(self.seen) % len(self.latencies)]
                    if self.latencies
                    else self.latency
                )
                self.seen.append((time.monotonic(), outcome))
            if latency:
                import asyncio

                await asyncio.sleep(latency)
            if outcome == "500":
                return JSONResponse({"error": {"message": "scripted failure"}}, status_code=500)
            if outcome == "400":  # this request refused (an endpoint's content filter, say)
                return JSONResponse({"error": {"message": "scripted refusal"}}, status_code=400)
            if outcome == "429":
                return JSONResponse(
                    {"error": {"message": "slow down"}},
                    status_code=429,
                    headers={"retry-after": str(self.retry_after)},
                )
            prompt = "\n".join(m["content"] for m in body["messages"])
            fields = judge_fields(body)
            rubric = rubric_fields(body)
            if outcome == "malformed" or (rubric and ALWAYS_MALFORMED in rubric["summary"]):
                content = "this is not json"
            elif outcome == "huge":  # a reply of megabytes (the hardening probe's 10 MB)
                content = orjson.dumps(
                    {"claims": [{"claim": "x", "supported": True, "evidence": "y" * 3_000_000}]}
                ).decode()
            elif rubric is not None:  # the rubric's prompt: the judgements contract
                content = orjson.dumps(scripted_rubric(rubric)).decode()
            elif fields is not None:  # the judge's prompt: the claims contract
                content = orjson.dumps(scripted_reply(fields)).decode()
            else:  # an application's question: answer with the context's first sentence
                lines = [ln for ln in prompt.splitlines()[1:] if ln.strip()]
                content = lines[0] if lines else "I do not know."
            return JSONResponse(
                {
                    "id": "chatcmpl-standin",
                    "object": "chat.completion",
                    "created": 0,
                    "model": body.get("model", self.model),
                    "choices": [
                        {
                            "index": 0,
                            "message": {"role": "assistant", "content": content},
                            "finish_reason": "stop",
                        }
                    ],
                    "usage": {
                        "prompt_tokens": len(prompt) // 4,
                        "completion_tokens": len(content) // 4,
                        "total_tokens": len(prompt) // 4 + len(content) // 4,
                    },
                }
            )

        return app

    def max_in_window(self, seconds: float = 60.0) -> int:
        """The most requests any ``seconds``-long window held."""
        times = sorted(t for t, _ in self.seen)
        best, start = 0, 0
        for end in range(len(times)):
            while times[end] - times[start] >= seconds:
                start += 1
            best = max(best, end - start + 1)
        return best


@contextmanager
def serve(standin: StandIn) -> Iterator[str]:
    """Run ``standin`` on a free loopback port; yields its base URL (``.../v1``)."""
    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(standin.app(), host="127.0.0.1", port=port, log_level="warning")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        server.should_exit = True
        thread.join(10)
