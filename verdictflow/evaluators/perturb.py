"""Deterministic, meaning-preserving perturbations of an answer event, for the calibration
variance margin.

Each changes the surface of the input and not what it says: letter case, spacing and
punctuation, the order of contexts and variants, Unicode compatibility forms (full-width
letters), and a context delivered twice. The spread of a score across these is how far the
scorer itself wobbles on inputs that mean the same, and becomes a safety margin on the
threshold. The lexical Q1 and Q2 are invariant to all of them by construction (their margin
is 0, which a test checks); model-based scores will not be.

Scorers built on spaCy's cased statistical model (hallucination, the judges) get only the
spacing, order and duplicate-context perturbations: an all-capitals or full-width answer is
out of the model's training distribution (on 120 HaluEval answers, capitals moved the
hallucination score by up to 0.5 at P95 and full-width forms by 1.0, since the hallucination
anchors are not NFKC-folded), which would turn the margin into "never pass" rather than
measure the scorer's noise on realistic inputs.

Deliberately absent: dropping context sentences. It was tried, and on HaluEval it removed the
very sentence supporting the answer (Q1 1.0 -> 0.0), which is a change of evidence, not noise.
"""

from __future__ import annotations

from pydantic import BaseModel

from verdictflow.models.events import AnswerEvent, SummaryEvent

ALL_PERTURBATIONS = frozenset({"case", "spacing", "order", "fullwidth", "duplicate_context"})
_FULLWIDTH = {c: c + 0xFEE0 for c in range(0x21, 0x7F)}  # ASCII '!'..'~' -> U+FF01..U+FF5E


def _fullwidth(text: str) -> str:
    return text.translate(_FULLWIDTH)


def perturbations(event: AnswerEvent) -> list[tuple[str, AnswerEvent]]:
    """(name, perturbed event) pairs, always the same for the same event."""
    contexts = event.context_passages
    return [
        (
            "case",
            event.model_copy(
                update={
                    "answer": event.answer.upper(),
                    "variants": [v.lower() for v in event.variants],
                }
            ),
        ),
        (
            "spacing",
            event.model_copy(
                update={
                    "answer": "  ".join(event.answer.split()) + " .",
                    "variants": [" ".join(v.split()) + "!" for v in event.variants],
                }
            ),
        ),
        (
            "order",
            event.model_copy(
                update={
                    "contexts": list(reversed(contexts)),
                    "variants": list(reversed(event.variants)),
                }
            ),
        ),
        (
            "fullwidth",
            event.model_copy(
                update={
                    "answer": _fullwidth(event.answer),
                    "variants": [_fullwidth(v) for v in event.variants],
                }
            ),
        ),
        ("duplicate_context", event.model_copy(update={"contexts": contexts + contexts[:1]})),
    ]


def summary_perturbations(event: SummaryEvent) -> list[tuple[str, SummaryEvent]]:
    """The same surface changes for a summary judged against its article (case and
    full-width forms of the summary, spacing of both); spaCy-based judges are not invariant."""
    return [
        ("case", event.model_copy(update={"summary": event.summary.upper()})),
        (
            "spacing",
            event.model_copy(
                update={
                    "summary": "  ".join(event.summary.split()),
                    "article": " ".join(event.article.split()) + " ",
                }
            ),
        ),
        ("fullwidth", event.model_copy(update={"summary": _fullwidth(event.summary)})),
    ]


def perturbations_of(
    event: BaseModel, names: frozenset[str] | None = None
) -> list[tuple[str, BaseModel]]:
    """The perturbations of an answer or a summary event (only ``names`` when given)."""
    if isinstance(event, SummaryEvent):
        found: list[tuple[str, BaseModel]] = list(summary_perturbations(event))
    elif isinstance(event, AnswerEvent):
        found = list(perturbations(event))
    else:
        raise TypeError(f"no perturbations for {type(event).__name__}")
    return [(n, e) for n, e in found if names is None or n in names]
