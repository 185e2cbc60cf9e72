"""Relation perturbations: labelled examples that teach the faithfulness fit what a relation
conflict is worth (issue 31).

The human-labelled sets rarely contain a swapped role, a misbound number or a flipped
comparison (the relation signals fire on fewer than 1 % of their rows), so by themselves they
give those signals almost no weight: on the relation-swap probe, role swaps lowered the score
but did not FAIL. FactCC's recipe supplies what is missing: take sentences of real documents,
keep each one verbatim as a faithful answer, and perturb it as an unfaithful one:

- **roles**: the subject and object names of a verb exchanged ("Oracle acquired Sun" ->
  "Sun acquired Oracle"; symmetric verbs such as "met" are left alone);
- **values**: two numbers or dates of one kind from different parts of the sentence
  exchanged ("120 in the treatment arm and 80 in the placebo arm" -> "80 ... 120");
- **comparisons**: a comparative turned round ("larger" -> "smaller", "before" -> "after");
- **negation**: a "not" or "never" removed.

Each pair's context is the whole document, so the verbatim answer is perfectly supported and
the pair differs only in the perturbation: the fit learns the relation signals' weight from
it, while the human sets (four sources of five, by weight) keep that weight honest against
false alarms on real text.

Documents: the SciFact abstracts (``scifact_beir/corpus.jsonl``) and the responses HaluEval's
general set labels free of hallucination (``halueval/general_data.json``), in file order; no
set the validation bench scores. Deterministic: the same files and spaCy model give the same
pairs.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from verdictflow.digests import file_digest
from verdictflow.evaluators.relation_frames import (
    AMOUNT_LABELS,
    LIGHT_VERBS,
    SYMMETRIC_VERBS,
    doc_ents,
    segments_of,
    values_of,
)
from verdictflow.models.events import AnswerEvent
from verdictflow.scoring_jobs.training.labelled_sets import LabelledSet, require

logger = logging.getLogger(__name__)

#: Pairs per perturbation kind (the set has up to 4 x 2 x PAIRS_PER_KIND rows).
PAIRS_PER_KIND = 100
#: Sentences outside these lengths (characters) are skipped: headings, lists, run-ons.
SENTENCE_CHARS = (30, 300)
#: Documents read at most (a bound on the time the set takes to build: ~1 minute).
MAX_DOCUMENTS = 1200
FLIPS = {
    "more": "less", "less": "more", "larger": "smaller", "smaller": "larger",
    "higher": "lower", "lower": "higher", "greater": "smaller", "longer": "shorter",
    "shorter": "longer", "older": "younger", "younger": "older", "earlier": "later",
    "later": "earlier", "bigger": "smaller", "fewer": "more", "faster": "slower",
    "slower": "faster", "before": "after", "after": "before", "stronger": "weaker",
    "weaker": "stronger", "better": "worse", "worse": "better",
}  # fmt: skip
NEGATION_WORDS = frozenset({"not", "n't", "never"})


def _documents(data: Path) -> Iterator[str]:
    """HaluEval's responses first (names, roles), then SciFact's abstracts (numbers,
    comparisons), up to :data:`MAX_DOCUMENTS` in all."""
    taken = 0
    with require(data / "halueval" / "general_data.json").open(encoding="utf-8") as lines:
        for line in lines:  # one object per line
            if taken >= MAX_DOCUMENTS // 2:
                break
            row = json.loads(line)
            text = str(row["chatgpt_response"])
            if row["hallucination"] == "no" and len(text) >= 200:
                taken += 1
                yield text
    with require(data / "scifact_beir" / "corpus.jsonl").open(encoding="utf-8") as lines:
        for line in lines:
            if taken >= MAX_DOCUMENTS:
                break
            taken += 1
            yield str(json.loads(line)["text"])


def _name_span(token: Any) -> tuple[int, int] | None:
    """The characters of the name a token heads (its entity, or it and its compounds)."""
    if token.pos_ != "PROPN":
        return None
    for ent in doc_ents(token.doc):
        if ent.start <= token.i < ent.end:
            return ent.start_char, ent.end_char
    first = min([token.i] + [c.i for c in token.children if c.dep_ == "compound"])
    return token.doc[first].idx, token.idx + len(token.text)


def _replace(text: str, offset: int, edits: list[tuple[int, int, str]]) -> str:
    for start, end, new in sorted(edits, reverse=True):
        text = text[: start - offset] + new + text[end - offset :]
    return text


def _role_swap(sent: Any) -> str | None:
    for verb in sent:
        lemma = verb.lemma_.lower()
        if verb.pos_ != "VERB" or lemma in SYMMETRIC_VERBS or lemma in LIGHT_VERBS:
            continue
        subject = next((c for c in verb.children if c.dep_ == "nsubj"), None)
        obj = next((c for c in verb.children if c.dep_ == "dobj"), None)
        if subject is None or obj is None:
            continue
        a, b = _name_span(subject), _name_span(obj)
        if a is None or b is None or a[1] > b[0]:
            continue
        text = str(sent.text)
        at, bt = (
            text[a[0] - sent.start_char : a[1] - sent.start_char],
            text[b[0] - sent.start_char : b[1] - sent.start_char],
        )
        if at.lower() == bt.lower():
            continue
        return _replace(text, sent.start_char, [(a[0], a[1], bt), (b[0], b[1], at)])
    return None


def _value_swap(sent: Any) -> str | None:
    values = values_of(sent)
    segments = segments_of(sent, values)
    for i, first in enumerate(segments):
        for second in segments[i + 1 :]:
            for v in first.values:
                w = next((w for w in second.values if w.kind == v.kind and w.value != v.value),
                         None)  # fmt: skip
                if w is None:
                    continue
                doc_text = str(sent.doc.text)
                vt, wt = doc_text[v.start : v.end], doc_text[w.start : w.end]
                return _replace(str(sent.text), sent.start_char,
                                [(v.start, v.end, wt), (w.start, w.end, vt)])  # fmt: skip
    return None


def _comparison_flip(sent: Any) -> str | None:
    for token in sent:
        word = token.lower_
        comparative = token.tag_ in ("JJR", "RBR") and any(t.lower_ == "than" for t in sent)
        ordering = word in ("before", "after") and token.dep_ in ("mark", "prep")
        if word in FLIPS and (comparative or ordering):
            new = FLIPS[word]
            new = new.capitalize() if token.text[0].isupper() else new
            return _replace(str(sent.text), sent.start_char,
                            [(token.idx, token.idx + len(token.text), new)])  # fmt: skip
    return None


def _negation_drop(sent: Any) -> str | None:
    for token in sent:
        if token.dep_ == "neg" and token.lower_ in NEGATION_WORDS:
            end = token.idx + len(token.text)
            if token.whitespace_:
                end += 1
            start = token.idx
            if token.lower_ == "n't":  # "didn't" -> "did"
                return _replace(str(sent.text), sent.start_char, [(start, end, " ")]).replace(
                    "  ", " "
                )
            return _replace(str(sent.text), sent.start_char, [(start, end, "")])
    return None


PERTURBATIONS = {
    "roles": _role_swap,
    "values": _value_swap,
    "comparisons": _comparison_flip,
    "negation": _negation_drop,
}


def relation_perturbations(data: Path, nlp: Any) -> LabelledSet:
    """The perturbation set (see the module docstring), parsed with ``nlp``."""
    counts = dict.fromkeys(PERTURBATIONS, 0)
    events: list[AnswerEvent] = []
    targets: list[float] = []
    documents = list(_documents(data))
    for n, doc in enumerate(nlp.pipe(documents, batch_size=32)):
        if all(c >= PAIRS_PER_KIND for c in counts.values()):
            break
        for s, sent in enumerate(doc.sents):
            text = str(sent.text).strip()
            if not SENTENCE_CHARS[0] <= len(text) <= SENTENCE_CHARS[1]:
                continue
            if any(t.ent_type_ in AMOUNT_LABELS for t in sent) and text.count("(") > 2:
                continue  # tables of figures flattened into a sentence
            for kind, perturb in PERTURBATIONS.items():
                if counts[kind] >= PAIRS_PER_KIND:
                    continue
                changed = perturb(sent)
                if changed is None or changed.strip() == text:
                    continue
                counts[kind] += 1
                for label, answer in ((1.0, text), (0.0, changed.strip())):
                    events.append(AnswerEvent(
                        id=f"perturb-{n}-{s}-{kind}-{int(label)}", answer=answer,
                        contexts=[doc.text],
                    ))  # fmt: skip
                    targets.append(label)
                break  # one perturbation per sentence
    logger.info("relation perturbations: %s", counts)
    files = {
        "corpus.jsonl": file_digest(data / "scifact_beir" / "corpus.jsonl"),
        "general_data.json": file_digest(data / "halueval" / "general_data.json"),
    }
    return LabelledSet(
        "perturbations-relations",
        tuple(events),
        tuple(targets),
        ("all",) * len(events),
        tuple(e.id for e in events),
        files,
    )
