"""Pydantic v2 schemas of every topic value, and the orjson codec used on the wire."""

from verdictflow.models.dead_letter import DeadLetter
from verdictflow.models.events import (
    AnswerEvent,
    Context,
    DocUpdate,
    EdgeEvent,
    SummaryEvent,
)
from verdictflow.models.quality import DocQuality, QualityFeatures
from verdictflow.models.verdicts import Decision, Reason, ReasonCode, Verdict, VerdictKind

__all__ = [
    "AnswerEvent",
    "Context",
    "DeadLetter",
    "Decision",
    "DocQuality",
    "DocUpdate",
    "EdgeEvent",
    "QualityFeatures",
    "Reason",
    "ReasonCode",
    "SummaryEvent",
    "Verdict",
    "VerdictKind",
]
