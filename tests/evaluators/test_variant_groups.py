from __future__ import annotations

from verdictflow.evaluators import variant_groups as vg
from verdictflow.models.events import AnswerEvent


def ev(**kw):
    return AnswerEvent.model_validate({"id": "a", "answer": "x", **kw})


def test_self_contained_rules():
    assert vg.is_self_contained(ev())  # no request_id: alone
    assert vg.is_self_contained(ev(request_id="r", variants=["y"]))  # inline variants
    assert not vg.is_self_contained(ev(request_id="r"))  # waits for the window
    assert not vg.is_self_contained(ev(request_id="r", expected_variants=3, variants=["y"]))
    assert vg.is_self_contained(ev(request_id="r", expected_variants=2, variants=["y"]))


def test_contributions_name_variants():
    assert vg.contributions(ev(variants=["y", "z"])) == [("a", "x"), ("a#v1", "y"), ("a#v2", "z")]


def test_duplicates_do_not_inflate_a_group():
    state = vg.new_group(ev(request_id="r", expected_variants=3), deadline=0.0)
    first = ev(id="a", request_id="r", expected_variants=3)
    state = vg.add_event(state, first, max_variants=32)
    state = vg.add_event(state, first, max_variants=32)
    assert len(state["answers"]) == 1
    assert not vg.is_complete(state)
    state = vg.add_event(state, ev(id="b", request_id="r", variants=["c"]), max_variants=32)
    assert vg.is_complete(state)
    assert [a for a, _ in vg.answers_of(state)] == ["a", "b", "b#v1"]


def test_overflow_is_counted_and_completes():
    state = vg.new_group(ev(request_id="r", expected_variants=10), deadline=0.0)
    state = vg.add_event(
        state, ev(request_id="r", expected_variants=10, variants=["1", "2", "3"]), max_variants=2
    )
    assert state["truncated"] == 2
    assert vg.is_complete(state)


def test_open_group_without_expected_never_completes_by_count():
    state = vg.new_group(ev(request_id="r"), deadline=0.0)
    for i in range(5):
        state = vg.add_event(state, ev(id=f"a{i}", request_id="r"), max_variants=32)
    assert not vg.is_complete(state)


def test_closed_marker_drops_texts():
    state = vg.add_event(vg.new_group(ev(request_id="r"), 0.0), ev(request_id="r"), 32)
    marker = vg.closed_marker(state, forget_at=99.0)
    assert marker["done"]
    assert marker["answers"] == []
    assert marker["deadline"] == 99.0


def test_verdict_meta_does_not_depend_on_arrival_order():
    a = ev(id="a", request_id="r", model="m-a", tenant="t-a", expected_variants=2)
    b = ev(id="b", request_id="r", model="m-b", tenant="t-b", expected_variants=2)
    forward = vg.add_event(vg.add_event(vg.new_group(a, 0.0), a, 32), b, 32)
    backward = vg.add_event(vg.add_event(vg.new_group(b, 0.0), b, 32), a, 32)
    assert vg.meta_of(forward) == vg.meta_of(backward)
    assert vg.meta_of(forward).model == "m-a"


def test_windows_are_in_log_time_and_close_on_the_partitions_watermark():
    """A group's window ends window_seconds after its earliest answer's log time, whatever
    order the answers arrive in; a close decided at an earlier watermark does nothing, and
    the timer asks for a close only where the key's partition watermark passed the end."""
    from verdictflow.evaluators.answer_verdicts import ScoringContext
    from verdictflow.evaluators.policy import Policy

    ctx = ScoringContext(Policy(consistency={"window_seconds": 30}))
    store = vg.GroupStore({}, ctx, forget_seconds=600)
    assert store.on_answer(ev(id="b", request_id="r"), log_time=110.0) is None
    assert store.on_answer(ev(id="a", request_id="r"), log_time=100.0) is None  # earlier
    assert store.table["r"]["deadline"] == 130.0
    assert store.due_for_close(lambda key: 129.9, now=0.0, resend_after=10) == []
    assert store.due_for_close(lambda key: None, now=0.0, resend_after=10) == []  # unknown
    assert store.due_for_close(lambda key: 131.0, now=0.0, resend_after=10) == [("r", 131.0)]
    assert store.due_for_close(lambda key: 131.0, now=5.0, resend_after=10) == []  # in flight
    assert store.on_close("r", watermark=129.0) is None  # decided before the window ended
    verdict = store.on_close("r", watermark=131.0)
    assert verdict is not None
    assert verdict.evidence["closed_by"] == "window"
    assert store.table["r"]["done"]
    assert store.table["r"]["deadline"] == 731.0
    assert store.on_answer(ev(id="c", request_id="r"), log_time=120.0) is None  # late: ignored
    assert store.on_close("r", watermark=731.0) is None
    assert "r" not in store.table
