"""An invalid setting, from a flag or the environment, is one line and exit code 2."""

from __future__ import annotations

import pytest

from tests.support.processes import run_verdictflow


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["worker", "--tier", "bogus"],
            "error: tier: Input should be 'lexical', 'nlp', 'judge' or 'all'",
        ),
        (["worker", "--otlp-endpoint", "foo"], "error: otlp_endpoint: Value error, must be"),
        (["console", "--otlp-endpoint", "foo", "--port", "0"], "error: "),
    ],
)
def test_a_bad_setting_is_one_line_and_exit_2(args: list[str], message: str) -> None:
    result = run_verdictflow(*args, timeout=60)
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    assert message in " ".join(result.stderr.split())
