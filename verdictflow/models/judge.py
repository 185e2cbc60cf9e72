"""What the judge tier reads (``internal.judge-requests``) and keeps (its response cache).

A judge request carries everything the judge needs, so the judge tier joins nothing: the tier
that computed the reviewed verdict (the NLP tier for answers, the summaries agent for
summaries) had the text at hand and sent it along. Keyed by :func:`content_key`, so requests
for the same text land in the same partition as their cache entry.
"""

from __future__ import annotations

import hashlib
from typing import Literal

import orjson
from pydantic import BaseModel, ConfigDict

from verdictflow.models.events import AnswerEvent
from verdictflow.models.verdicts import Decision, VerdictKind

SCHEMA_VERSION = 1


class ReviewedVerdict(BaseModel):
    """The cheap verdict a judge verdict reviews (and supersedes)."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    verdict_id: str
    kind: VerdictKind
    score: float | None
    decision: Decision
    threshold: float
    config_digest: str


class JudgeRequest(BaseModel):
    """One escalated verdict and the text to judge (a summary is judged as an answer whose one
    context is its article, as its faithfulness verdict was)."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    schema_version: int = SCHEMA_VERSION
    #: ``faithfulness`` (a ``faithfulness_llm`` verdict) or ``rubric`` (a summary's spec-002
    #: rubric by the judge model: ``judge_llm`` verdicts, one per framework).
    task: Literal["faithfulness", "rubric"] = "faithfulness"
    scope: Literal["answer", "summary"]
    priority: Literal["fail", "band", "sample"]
    reviews: ReviewedVerdict
    event: AnswerEvent


class Judgement(BaseModel):
    """A judge's answer as received, kept in the cache table so that a re-delivered request
    (a restarted worker, a replay) gives the same verdict, byte for byte, without asking
    again."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    backend: str
    model: str
    prompt_version: str
    #: The message content (an LLM's JSON), or the cross-encoder's claims as JSON.
    content: str
    #: The same content again after one malformed reply, when there was one (then ``content``
    #: is the retry's).
    first_invalid: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    attempts: int = 1


def content_key(event: AnswerEvent, task: str = "faithfulness") -> str:
    """SHA-256 of what is judged (query, answer, contexts) and how: the cache key and record
    key (the faithfulness task keeps its former keys; another task's differ)."""
    texts: list[object] = [event.query, event.answer, [c.text for c in event.context_passages]]
    payload = orjson.dumps(texts if task == "faithfulness" else [task, *texts])
    return hashlib.sha256(payload).hexdigest()
