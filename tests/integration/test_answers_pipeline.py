"""Answers through the real broker and a real worker process: every valid input gets exactly
its verdicts, equal byte for byte to the offline evaluation; every malformed one a dead letter."""

from __future__ import annotations

import pytest

from tests.support.verdict_collection import check_thousand_answers

pytestmark = pytest.mark.broker


@pytest.mark.timeout(600)
def test_thousand_answers_get_exactly_their_verdicts(settings_factory, worker_factory, tmp_path):
    check_thousand_answers(settings_factory, worker_factory, tmp_path)
