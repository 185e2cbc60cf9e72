"""Answer events with their text normalised (:mod:`~verdictflow.evaluators.text_normalise`),
and evidence offsets taken back to the text the producer sent.

Scorers read the normalised event, so their spans are positions in the normalised answer and
contexts. A verdict's evidence must point into the original text (the console highlights it
there; an operator quotes it), so :func:`original_offsets` rewrites every span of the
evidence: a mapping with integer ``start`` and ``end`` is a span of the answer, or of context
``index`` (the position among the non-blank contexts, as the scorers number them) when it has
an integer ``index``; its ``text``, a slice of that text, is cut again from the original. When
nothing was normalised (the common case) the evidence is returned as it is.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from verdictflow.evaluators.text_normalise import NormalisedText, normalise
from verdictflow.models.events import AnswerEvent, Context


@dataclass(frozen=True, slots=True)
class TextMaps:
    """Position maps of an event's answer and of its non-blank contexts, in scorer order."""

    answer: NormalisedText
    contexts: tuple[NormalisedText, ...]
    #: Whether any of them was changed; asked once per verdict, so worked out once.
    changed: bool = field(init=False)

    def __post_init__(self) -> None:
        changed = self.answer.changed or any(c.changed for c in self.contexts)
        object.__setattr__(self, "changed", changed)


def normalised_event(event: AnswerEvent) -> tuple[AnswerEvent, TextMaps]:
    """``event`` with query, answer, contexts and variants normalised, and the maps."""
    answer = normalise(event.answer)
    contexts: list[Context | str] = []
    maps: list[NormalisedText] = []
    for context in event.contexts:
        text = context.text if isinstance(context, Context) else context
        clean = normalise(text)
        if clean.text.strip():
            maps.append(clean)
        if isinstance(context, Context) and clean.changed:
            context = context.model_copy(update={"text": clean.text})
        contexts.append(context if isinstance(context, Context) else clean.text)
    changed = TextMaps(answer, tuple(maps))
    query = normalise(event.query).text
    variants = [normalise(v).text for v in event.variants]
    if not changed.changed and query == event.query and variants == event.variants:
        return event, changed
    update = {"answer": answer.text, "query": query, "contexts": contexts, "variants": variants}
    return event.model_copy(update=update), changed


def original_offsets(evidence: dict[str, Any], maps: TextMaps) -> dict[str, Any]:
    """``evidence`` with every span in the original texts (see the module docstring)."""
    if not maps.changed:
        return evidence
    remapped = _remap(evidence, maps)
    assert isinstance(remapped, dict)
    return remapped


def _remap(value: Any, maps: TextMaps) -> Any:
    if isinstance(value, Mapping):
        out = {k: _remap(v, maps) for k, v in value.items()}
        start, end = value.get("start"), value.get("end")
        if isinstance(start, int) and isinstance(end, int) and _is_int(start) and _is_int(end):
            index = value.get("index")
            source = _source(maps, index if _is_int(index) else None)
            if source is not None and source.changed:
                out.update(_span(source, start, end, value.get("text")))
        return out
    if isinstance(value, Sequence) and not isinstance(value, str | bytes):
        return [_remap(v, maps) for v in value]
    return value


def _source(maps: TextMaps, index: int | None) -> NormalisedText | None:
    if index is None:
        return maps.answer
    return maps.contexts[index] if 0 <= index < len(maps.contexts) else None


def _span(source: NormalisedText, start: int, end: int, text: Any) -> dict[str, Any]:
    first, last = source.original_span(start, end)
    out: dict[str, Any] = {"start": first, "end": last}
    if isinstance(text, str):
        whole = source.text[start:end]
        cut = source.original[first:last]
        # a capped excerpt stays capped at its length; a whole span is cut whole
        out["text"] = cut if text == whole else cut[: len(text)]
    return out


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
