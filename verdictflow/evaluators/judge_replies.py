"""Reading a judge model's JSON reply against its contract: the one reader behind both judge-tier
prompts (``faithfulness_llm``'s claims, the spec-002 rubric's judgements)."""

from __future__ import annotations

from typing import TypeVar

from pydantic import BaseModel, ValidationError

M = TypeVar("M", bound=BaseModel)


def read_reply(content: str, model: type[M], invalid: type[ValueError], whole: str) -> M:
    """``content`` validated as ``model``. A reply wrapped in a Markdown code fence is read as the
    JSON inside it (chat models often fence their JSON). Otherwise raises ``invalid`` naming the
    first error's place (``whole`` when the reply as a whole is wrong) and its message, cut to
    300 characters."""
    text = content.strip()
    if text.startswith("```"):
        text = text.strip("`")
        text = text[text.find("{") :] if "{" in text else text
    try:
        return model.model_validate_json(text)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or whole
        raise invalid(f"{where}: {first['msg']}"[:300]) from None
