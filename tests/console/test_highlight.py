"""Spans from real evidence: the sample's "Lyon" answer, cut along its marks."""

from __future__ import annotations

from typing import Any

import pytest

from tests.console.conftest import find
from verdictflow.console.highlight import Mark, drawable, segments, verdict_marks

LYON = "It is Lyon, the capital of France."


def test_hallucination_marks_lyon_unsupported_and_france_supported_with_its_context(
    sample_verdicts: list[bytes],
) -> None:
    marks = verdict_marks(find(sample_verdicts, "hallucination", "capital-3"))
    by_text = {(m.text, m.clause): m for m in marks}
    lyon = by_text[("Lyon", False)]
    assert (lyon.status, lyon.source, lyon.label) == (
        "unsupported",
        "hallucination",
        "entity PERSON",
    )
    assert (lyon.start, lyon.end) == (6, 10)
    assert lyon.context is None
    france = by_text[("France", False)]
    assert france.status == "supported"
    assert france.context is not None
    assert france.context["text"] == "France"
    claim = by_text[("It is Lyon, the capital of France", True)]
    assert claim.status == "unsupported"


def test_faithfulness_findings_become_marks(sample_verdicts: list[bytes]) -> None:
    marks = verdict_marks(find(sample_verdicts, "faithfulness", "capital-3"))
    assert {(m.text, m.label) for m in marks} == {
        ("Lyon", "fabricated_facts"),
        ("Lyon", "novel_propn"),
    }
    assert all(m.status == "unsupported" and m.source == "faithfulness" for m in marks)


def test_segments_cover_the_text_once_and_colour_lyon(sample_verdicts: list[bytes]) -> None:
    marks = verdict_marks(find(sample_verdicts, "hallucination", "capital-3"))
    segs = segments(LYON, marks)
    assert "".join(s["text"] for s in segs) == LYON
    lyon = next(s for s in segs if s["text"] == "Lyon")
    assert lyon["status"] == "unsupported"
    assert lyon["clause"] == "unsupported"  # inside the unsupported claim
    assert next(s for s in segs if s["text"] == "France")["status"] == "supported"
    assert segs[-1] == {"text": ".", "marks": [], "status": None, "clause": None}


def _mark(start: int, end: int, text: str, status: Any = "unsupported") -> Mark:
    return Mark(start, end, text, status, "hallucination", "entity X", "", False)


def test_a_mark_that_does_not_match_the_text_is_not_drawn() -> None:
    wrong = _mark(6, 10, "Nice")
    out_of_range = _mark(30, 99, "x")
    assert not drawable(LYON, wrong)
    assert not drawable(LYON, out_of_range)
    assert segments(LYON, [wrong, out_of_range]) == [
        {"text": LYON, "marks": [], "status": None, "clause": None}
    ]


def test_offsets_are_code_points_so_text_after_an_emoji_is_cut_right() -> None:
    text = "🙂 Lyon is big"
    segs = segments(text, [_mark(2, 6, "Lyon")])
    assert [s["text"] for s in segs] == ["🙂 ", "Lyon", " is big"]


def test_the_worst_status_colours_overlapping_marks() -> None:
    text = "Paris 2024"
    marks = [_mark(0, 10, text, "supported"), _mark(6, 10, "2024", "partial")]
    segs = segments(text, marks)
    assert [(s["text"], s["status"]) for s in segs] == [
        ("Paris ", "supported"),
        ("2024", "partial"),
    ]


@pytest.mark.parametrize(
    "evidence",
    [None, "x", {"anchors": "no"}, {"anchors": [1, {"start": "a"}]}, {"findings": [{"end": 3}]}],
)
def test_malformed_evidence_gives_no_marks(evidence: Any) -> None:
    assert verdict_marks({"evidence": evidence}) == []
