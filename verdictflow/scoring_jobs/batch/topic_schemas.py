"""JSON Schema of each topic value, for monitoring consumers written in other languages."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import orjson
from pydantic import BaseModel, Field, TypeAdapter

from verdictflow.evaluators.kinds import KINDS
from verdictflow.models.alerts import (
    AgreementAlert,
    DriftAlert,
    FailRateAlert,
    JudgeBudgetAlert,
)
from verdictflow.models.dead_letter import DeadLetter
from verdictflow.models.events import AnswerEvent, DocUpdate, EdgeEvent, SummaryEvent
from verdictflow.models.labels import ReviewLabel
from verdictflow.models.quality import DocQuality

#: ``alerts`` carries every kind of alert, told apart by its ``alert`` field.
Alert = Annotated[
    DriftAlert | AgreementAlert | FailRateAlert | JudgeBudgetAlert, Field(discriminator="alert")
]

TOPIC_VALUE_MODELS: dict[str, Any] = {
    "answers": AnswerEvent,
    "summaries": SummaryEvent,
    "docs": DocUpdate,
    "doc-edges": EdgeEvent,
    "doc-quality": DocQuality,
    "dead-letters": DeadLetter,
    "alerts": Alert,
    "labels": ReviewLabel,
    **{f"verdicts.{spec.kind.value}": spec.verdict_model for spec in KINDS},
}


def write_schemas(out_dir: Path) -> list[Path]:
    """Write ``<topic>.schema.json`` for every topic; return the paths written, sorted."""
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for topic, model in sorted(TOPIC_VALUE_MODELS.items()):
        schema = (
            model.model_json_schema(mode="serialization")
            if isinstance(model, type) and issubclass(model, BaseModel)
            else TypeAdapter(model).json_schema(mode="serialization")
        )
        schema["$id"] = f"verdictflow/{topic}.schema.json"
        schema["x-topic"] = topic
        path = out_dir / f"{topic}.schema.json"
        path.write_bytes(orjson.dumps(schema, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS))
        written.append(path)
    return written
