"""Exploration for issue 31 (not scoring code): can predicate-argument checks between an answer
sentence and its best-matching context sentence see relation swaps, without false alarms?

For each answer sentence, the context sentence sharing the most content lemmas is taken as its
support; both are parsed with the project's spaCy pipeline, and two checks run:

- **roles**: each verb with a subject and an object (passives normalised through ``agent``,
  ``lose to`` and ``study with`` through their prepositions) gives (verb, agent, patient); the
  answer's agent and patient found in the reverse roles of the same verb in the context, or in
  the same roles of a converse verb (beat/lose, buy/sell, teach/study), is a swap;
- **negation**: the answer sentence negated (``neg`` or the determiner "no") and its support
  not, or the reverse.

Comparatives, temporal order, number and date binding and causal direction are not checked yet.
Reports flags on the relation-swap probe (swapped and faithful answers) and on the first 1,000
HaluEval QA rows (right and hallucinated answers), and the time. This version parses whole
contexts; a shipped signal would parse only the supporting sentence.

    python bench/relation_explore.py [--halueval 1000]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

from verdictflow.nlp import load_pipeline
from verdictflow.scoring_jobs.training.faithfulness_data import halueval

ROOT = Path(__file__).resolve().parents[1]
PROBE = ROOT / "tests/data/relation_swaps.jsonl"
DATA = ROOT.parent / "shared/data"
CONVERSE = {("beat", "lose"), ("defeat", "lose"), ("buy", "sell"), ("teach", "study")}
Triple = tuple[str, str, str]


def head_text(token: Any) -> str:
    """An argument's name: its entity's text when it is in one, else its lemma."""
    for ent in token.doc.ents:
        if ent.start <= token.i < ent.end:
            return str(ent.text).lower().removeprefix("the ")
    return str(token.lemma_).lower()


def triples(sentence: Any) -> list[Triple]:
    out = []
    for verb in sentence:
        if verb.pos_ not in ("VERB", "AUX") or verb.dep_ == "aux":
            continue
        agent = patient = None
        for child in verb.children:
            if child.dep_ == "nsubj":
                agent = child
            elif child.dep_ in ("nsubjpass", "dobj", "obj"):
                patient = child
            elif child.dep_ == "agent" or (
                child.dep_ == "prep" and (verb.lemma_, child.lemma_) in {("lose", "to"),
                                                                         ("study", "with")}
            ):  # fmt: skip
                obj = next((g for g in child.children if g.dep_ == "pobj"), None)
                if obj is not None and child.dep_ == "agent":
                    agent = obj
                elif obj is not None:
                    patient = obj
        if agent is not None and patient is not None:
            out.append((str(verb.lemma_).lower(), head_text(agent), head_text(patient)))
    return out


def same(a: str, b: str) -> bool:
    return a == b or a in b or b in a


def role_swap(answer: list[Triple], support: list[Triple]) -> str | None:
    for verb, agent, patient in answer:
        for cverb, cagent, cpatient in support:
            reversed_roles = same(agent, cpatient) and same(patient, cagent)
            if verb == cverb and reversed_roles and not same(agent, cagent):
                return f"{verb}: {agent} -> {patient}; context: {cagent} -> {cpatient}"
            converse = (verb, cverb) in CONVERSE or (cverb, verb) in CONVERSE
            if converse and same(agent, cagent) and same(patient, cpatient):
                return f"{verb} / {cverb}: {agent} -> {patient} in both"
    return None


def negated(sentence: Any) -> bool:
    return any(t.dep_ == "neg" or (t.lower_ == "no" and t.dep_ == "det") for t in sentence)


def content(sentence: Any) -> set[str]:
    return {t.lemma_.lower() for t in sentence if t.is_alpha and not t.is_stop}


def check(nlp: Any, answer: str, context: str) -> list[tuple[str, str]]:
    found = []
    context_doc = nlp(context)
    for sentence in nlp(answer).sents:
        words = content(sentence)
        support = max(context_doc.sents, key=lambda s: len(words & content(s)))
        swap = role_swap(triples(sentence), triples(support))
        if swap:
            found.append(("roles", swap))
        if negated(sentence) != negated(support):
            found.append(("negation", sentence.text))
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--halueval", type=int, default=1000)
    args = parser.parse_args()
    nlp = load_pipeline()
    pairs = [json.loads(line) for line in PROBE.read_text().splitlines() if line.strip()]
    start = time.perf_counter()
    swaps = sum(bool(check(nlp, p["swapped"], p["context"])) for p in pairs)
    faithful = sum(bool(check(nlp, p["faithful"], p["context"])) for p in pairs)
    print(f"probe ({len(pairs)} pairs): swapped answers flagged {swaps}, faithful flagged "
          f"{faithful} ({time.perf_counter() - start:.1f} s)")  # fmt: skip
    if not (DATA / "halueval").exists():
        return
    labelled = halueval(DATA)
    flagged = {0: 0, 1: 0}
    seen = {0: 0, 1: 0}
    start = time.perf_counter()
    rows = list(zip(labelled.events, labelled.targets, strict=True))[: args.halueval]
    for event, target in rows:
        context = " ".join(c if isinstance(c, str) else c.text for c in event.contexts)
        seen[int(target)] += 1
        flagged[int(target)] += bool(check(nlp, event.answer, context))
    seconds = time.perf_counter() - start
    print(f"HaluEval QA (first {len(rows)} rows): right answers flagged {flagged[1]} of "
          f"{seen[1]}, hallucinated {flagged[0]} of {seen[0]} ({seconds:.0f} s)")  # fmt: skip


if __name__ == "__main__":
    main()
