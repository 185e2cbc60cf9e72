"""Cloze question generation and answering (QAG), the extractive way.

QAGS (Wang et al. 2020) and QuestEval ask questions whose answers are spans of one text and
check whether the other text gives the same answer. Without a generative model, the standard
deterministic form is the *cloze* question (as in the Cloze/SummaQA line of work, Scialom et
al. 2019): blank out an answer span (an entity, a number or a noun chunk) in a sentence.

Generation: answer candidates come from the given source sentences in order (the caller puts
key points first), one per sentence per round, preferring entities, then numbers, then noun
chunks; answers are distinct by their content keys, so no two questions share a span.

Answering from the other text: the sentence of the other text that shares the most *context*
keys with the question (keys of the sentence minus the answer) is where the answer must be.
- Correct (1.0): every content key of the answer is in that sentence;
- Partial (0.5): some are, or all occur elsewhere in the text (the fact is there, detached);
- Wrong (0.0): otherwise, or when no sentence shares any context.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from verdictflow.evaluators.summary_judges.text import Parsed, Span

N_QUESTIONS = 6
_ENTITY_PRIORITY = ("PERSON", "ORG", "GPE", "LOC", "NORP", "FAC", "EVENT", "PRODUCT")
_NUMERIC = ("CARDINAL", "MONEY", "PERCENT", "QUANTITY", "DATE", "ORDINAL", "TIME")
BLANK = "____"
MAX_QUESTION_CHARS = 300


@dataclass(frozen=True, slots=True)
class Question:
    question: str
    answer: str
    answer_keys: frozenset[str]
    context_keys: frozenset[str]
    source_sentence: int


@dataclass(frozen=True, slots=True)
class Answered:
    question: Question
    label: str  # Correct | Partial | Wrong
    score: float
    found_in: str  # the answering sentence ("" when none)
    found_at: int  # its index (-1 when none)


def _priority(span: Span) -> int:
    if span.label in _ENTITY_PRIORITY:
        return 0
    if span.label in _NUMERIC:
        return 1
    return 2


def _candidates(doc: Parsed, sentence: int) -> list[Span]:
    s = doc.sentences[sentence]
    spans = [e for e in doc.entities if s.start <= e.start and e.end <= s.end]
    spans += [c for c in doc.chunks if s.start <= c.start and c.end <= s.end]
    return sorted(spans, key=lambda sp: (_priority(sp), sp.start))


def _question(doc: Parsed, sentence: int, span: Span) -> str:
    s = doc.sentences[sentence]
    left = doc.span_text(s.start, span.start)
    right = doc.span_text(span.end, s.end)
    text = " ".join(part for part in (left, BLANK, right) if part)
    return text[:MAX_QUESTION_CHARS]


def generate(doc: Parsed, sentences: Sequence[int], n: int = N_QUESTIONS) -> list[Question]:
    """Up to ``n`` cloze questions from ``sentences`` of ``doc`` (in that order of preference)."""
    pools = {i: _candidates(doc, i) for i in sentences}
    seen: set[frozenset[str]] = set()
    out: list[Question] = []
    while len(out) < n and any(pools.values()):
        for i in sentences:
            pool = pools[i]
            while pool:
                span = pool.pop(0)
                keys = doc.content_keys(span.start, span.end)
                if not keys or keys in seen:
                    continue
                seen.add(keys)
                sent = doc.sentences[i]
                context = doc.content_keys(sent.start, sent.end) - keys
                out.append(Question(_question(doc, i, span), span.text, keys, context, i))
                break
            if len(out) == n:
                break
    return out


def answer(question: Question, other: Parsed) -> Answered:
    """Answer one question from ``other`` (see the module docstring for the labels)."""
    best, where = 0, -1
    sent_keys = []
    for i, s in enumerate(other.sentences):
        keys = frozenset(
            k for t in other.tokens[s.start : s.end] if t.is_content for k in (t.key, t.lower)
        )
        sent_keys.append(keys)
        shared = len(question.context_keys & keys)
        if shared > best:
            best, where = shared, i
    if where < 0:
        return Answered(question, "Wrong", 0.0, "", -1)
    here = sent_keys[where]
    found_text = other.sentences[where].text
    if question.answer_keys <= here:
        return Answered(question, "Correct", 1.0, found_text, where)
    if question.answer_keys & here or question.answer_keys <= other.keys:
        return Answered(question, "Partial", 0.5, found_text, where)
    return Answered(question, "Wrong", 0.0, found_text, where)


def answer_all(questions: Sequence[Question], other: Parsed) -> list[Answered]:
    return [answer(q, other) for q in questions]


def duplicate_spans(answers: Sequence[Answered]) -> bool:
    """Whether two questions were credited from the same answering sentence for the same
    answer text, or share an answer span: evidence counted twice."""
    seen: set[tuple[int, str]] = set()
    spans: set[frozenset[str]] = set()
    for a in answers:
        if a.question.answer_keys in spans:
            return True
        spans.add(a.question.answer_keys)
        if a.score > 0:
            key = (a.found_at, a.question.answer.lower())
            if key in seen:
                return True
            seen.add(key)
    return False
