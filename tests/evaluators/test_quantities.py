"""Number, date and time normalisation used to match hallucination anchors."""

from __future__ import annotations

from decimal import Decimal

import pytest

from verdictflow.evaluators.quantities import (
    DatePoint,
    parse_date,
    parse_quantity,
    parse_time,
    quantity_spans,
)


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("3.2 billion", "3200000000"),
        ("$3.2bn", "3200000000"),
        ("US$3.2B", "3200000000"),
        ("3,200,000,000", "3200000000"),
        ("1,200", "1200"),
        ("twenty-five", "25"),
        ("two hundred thousand", "200000"),
        ("a dozen", "12"),
        ("half a million", "500000"),
        ("12%", "12"),
        ("0.75", "0.75"),
    ],
)
def test_values(text: str, value: str) -> None:
    parsed = parse_quantity(text)
    assert parsed is not None
    assert parsed.value == Decimal(value)


def test_no_number_is_none() -> None:
    assert parse_quantity("several") is None


def test_issue_example_billion_equals_digits() -> None:
    a, b = parse_quantity("3.2 billion"), parse_quantity("3,200,000,000")
    assert a is not None
    assert b is not None
    assert a.matches(b)
    assert b.matches(a)


def test_rounding_at_the_precision_the_answer_states() -> None:
    answer = parse_quantity("3.2 billion")
    assert answer is not None
    assert answer.matches(parse_quantity("3,215,000,000"))  # rounds to 3.2e9
    assert not answer.matches(parse_quantity("3,260,000,000"))  # rounds to 3.3e9
    exact = parse_quantity("3,215,000,000")
    assert exact is not None
    assert not exact.matches(parse_quantity("3.2 billion"))


def test_percent_only_matches_percent() -> None:
    percent = parse_quantity("12%")
    assert percent is not None
    assert percent.percent
    assert percent.matches(parse_quantity("12 percent"))
    assert not percent.matches(parse_quantity("12 people"))


def test_quantity_spans_give_scaled_and_bare_values_with_offsets() -> None:
    text = "Revenue was $3.2 billion in 2020."
    spans = quantity_spans(text)
    values = {(q.value, text[s:e]) for q, s, e in spans}
    assert (Decimal("3.2E+9"), "3.2 billion") in values
    assert (Decimal("3.2"), "3.2") in values
    assert (Decimal("2020"), "2020") in values


@pytest.mark.parametrize(
    ("text", "point"),
    [
        ("March 3rd, 2021", DatePoint(2021, 3, 3)),
        ("3 March 2021", DatePoint(2021, 3, 3)),
        ("2021-03-03", DatePoint(2021, 3, 3)),
        ("03/04/2012", DatePoint(2012, 3, 4)),
        ("May 2010", DatePoint(2010, 5, None)),
        ("the 1990s", DatePoint(1990, None, None, decade=True)),
        ("last week", DatePoint()),
    ],
)
def test_dates(text: str, point: DatePoint) -> None:
    assert parse_date(text) == point


def test_date_within_compares_only_stated_components() -> None:
    assert parse_date("March 2021").within(parse_date("3 March 2021"))
    assert not parse_date("3 March 2021").within(parse_date("March 2021"))
    assert parse_date("1994").within(parse_date("the 1990s")) is False
    assert parse_date("the 1990s").within(parse_date("1994"))
    assert not parse_date("April 2021").within(parse_date("3 March 2021"))


@pytest.mark.parametrize(
    ("text", "clock"),
    [("3 pm", (15, 0)), ("15:30", (15, 30)), ("noon", (12, 0)), ("12 a.m.", (0, 0)), ("3", None)],
)
def test_times(text: str, clock: tuple[int, int] | None) -> None:
    assert parse_time(text) == clock
