"""Which spans of an answer a verdict's evidence marks, and the answer cut along them.

Pure functions over a verdict as JSON. Three kinds carry character offsets into the answer:

- **hallucination**: ``evidence.anchors`` (entities, numbers, dates, times, terms, claims),
  each ``supported``, ``partial`` or ``unsupported``, a supported one with the context excerpt
  that supports it;
- **faithfulness**: ``evidence.findings``, each a span and the signal it counted against the
  answer (``fabricated_facts``, ``novel_propn``, ``misplaced_names``, ...);
- **faithfulness_llm** (the judge tier): ``evidence.claims``, each claim found verbatim in the
  answer, supported or not, with the judge's quote.

Offsets are Python string indices (code points). The page cannot slice by them (JavaScript
indexes UTF-16 units), so the answer is cut here, into segments that each know which marks
cover them. A mark whose offsets do not match the answer text (the answer the console holds is
not the one scored, or evidence was capped) is kept in the list but not drawn.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

Status = Literal["unsupported", "partial", "supported"]
#: How bad a status is, for the colour of a segment several marks cover.
SEVERITY: dict[str, int] = {"supported": 0, "partial": 1, "unsupported": 2}
#: Anchor kinds that span a whole clause: drawn as an underline, not a fill, so the finer
#: anchors inside them stay visible.
CLAUSE_KINDS = frozenset({"claim"})


@dataclass(frozen=True, slots=True)
class Mark:
    """One span of the answer that a verdict's evidence speaks about."""

    start: int
    end: int
    text: str
    status: Status
    source: str  # "hallucination", "faithfulness" or "judge"
    label: str  # "entity PERSON", "claim SVO", "novel_propn", ...
    note: str  # why, in words
    clause: bool  # spans a clause (drawn as an underline)
    context: Mapping[str, Any] | None = None  # the supporting context excerpt, when known

    def as_json(self) -> dict[str, Any]:
        return {
            "start": self.start,
            "end": self.end,
            "text": self.text,
            "status": self.status,
            "source": self.source,
            "label": self.label,
            "note": self.note,
            "clause": self.clause,
            "context": dict(self.context) if self.context is not None else None,
        }


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _anchor_marks(anchors: Sequence[Any]) -> list[Mark]:
    marks = []
    for a in anchors:
        if not isinstance(a, Mapping):
            continue
        start, end, support = _int(a.get("start")), _int(a.get("end")), a.get("support")
        if start is None or end is None or support not in SEVERITY:
            continue
        context = a.get("context") if isinstance(a.get("context"), Mapping) else None
        kind, label = str(a.get("kind", "")), str(a.get("label", ""))
        if support == "supported":
            note = "supported by the context" if context else "supported"
        elif support == "partial":
            note = "partly supported: its sentence in the context lacks part of it"
        else:
            note = f"{kind} not found in any context"
        marks.append(
            Mark(
                start=start,
                end=end,
                text=str(a.get("text", "")),
                status=support,
                source="hallucination",
                label=f"{kind} {label}".strip(),
                note=note,
                clause=kind in CLAUSE_KINDS,
                context=context,
            )
        )
    return marks


def _finding_marks(findings: Sequence[Any]) -> list[Mark]:
    marks = []
    for f in findings:
        if not isinstance(f, Mapping):
            continue
        start, end = _int(f.get("start")), _int(f.get("end"))
        if start is None or end is None:
            continue
        context = f.get("context") if isinstance(f.get("context"), Mapping) else None
        marks.append(
            Mark(
                start=start,
                end=end,
                text=str(f.get("text", "")),
                status="unsupported",
                source="faithfulness",
                label=str(f.get("signal", "finding")),
                note=str(f.get("detail", "")),
                clause=False,
                context=context,
            )
        )
    return marks


def _claim_marks(claims: Sequence[Any]) -> list[Mark]:
    """The judge's claims that are verbatim in the answer (``faithfulness_llm``), underlined:
    a claim spans a clause."""
    marks = []
    for c in claims:
        if not isinstance(c, Mapping):
            continue
        start, end = _int(c.get("start")), _int(c.get("end"))
        if start is None or end is None:
            continue
        supported = c.get("supported") is True
        quote = str(c.get("evidence") or "")
        marks.append(
            Mark(
                start=start,
                end=end,
                text=str(c.get("text", "")),
                status="supported" if supported else "unsupported",
                source="judge",
                label="claim",
                note=(f"the judge quotes: {quote!r}" if quote else "")
                if supported
                else "the judge found it unsupported"
                + (f"; the contexts say: {quote!r}" if quote else ""),
                clause=True,
                context=None,
            )
        )
    return marks


def verdict_marks(verdict: Mapping[str, Any]) -> list[Mark]:
    """The marks a verdict's evidence carries, in answer order (longer spans first on ties)."""
    evidence = verdict.get("evidence")
    if not isinstance(evidence, Mapping):
        return []
    marks: list[Mark] = []
    anchors = evidence.get("anchors")
    if isinstance(anchors, list):
        marks += _anchor_marks(anchors)
    findings = evidence.get("findings")
    if isinstance(findings, list):
        marks += _finding_marks(findings)
    claims = evidence.get("claims")
    if isinstance(claims, list):
        marks += _claim_marks(claims)
    return sorted(marks, key=lambda m: (m.start, -m.end, m.source, m.label))


def drawable(text: str, mark: Mark) -> bool:
    """Whether ``mark`` can be drawn on ``text``: offsets in range and the span's text equal."""
    return 0 <= mark.start < mark.end <= len(text) and text[mark.start : mark.end] == mark.text


def segments(text: str, marks: Sequence[Mark]) -> list[dict[str, Any]]:
    """``text`` cut at every drawable mark's boundaries: ``[{"text", "marks": [i, ...],
    "status", "clause"}]`` where ``marks`` indexes ``marks``, ``status`` is the worst status of
    the non-clause marks covering the segment (None when only clauses or nothing covers it)
    and ``clause`` the worst status of the clause marks covering it."""
    usable = [i for i, m in enumerate(marks) if drawable(text, m)]
    cuts = sorted(
        {0, len(text), *(marks[i].start for i in usable), *(marks[i].end for i in usable)}
    )
    out: list[dict[str, Any]] = []
    for lo, hi in itertools.pairwise(cuts):
        covering = [i for i in usable if marks[i].start <= lo and hi <= marks[i].end]
        fine = [marks[i].status for i in covering if not marks[i].clause]
        clause = [marks[i].status for i in covering if marks[i].clause]
        out.append(
            {
                "text": text[lo:hi],
                "marks": covering,
                "status": max(fine, key=SEVERITY.__getitem__) if fine else None,
                "clause": max(clause, key=SEVERITY.__getitem__) if clause else None,
            }
        )
    return out
