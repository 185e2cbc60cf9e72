"""The shutdown timer ends a process that is still busy when it fires (exit 143)."""

from __future__ import annotations

import subprocess
import sys
import time


def test_a_busy_process_exits_when_the_timer_fires() -> None:
    code = (
        "import time\n"
        "from verdictflow.streams.worker import arm_exit_timer\n"
        "arm_exit_timer(0.5, 'SIGTERM received')\n"
        "time.sleep(30)  # a batch that would not finish in time\n"
    )
    started = time.monotonic()
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 143
    assert time.monotonic() - started < 15
    assert "redone after restart" in result.stderr
