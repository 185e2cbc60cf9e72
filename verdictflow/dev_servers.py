"""Start the servers of ``verdictflow dev`` (the API, the console) as child processes, each on
a free loopback port, its output in a log file, dying with the dev process."""

from __future__ import annotations

import socket
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from verdictflow.streams.broker import die_with_parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_server(
    command: Sequence[str], env: dict[str, str], log_path: Path
) -> tuple[subprocess.Popen[bytes], str]:
    """``verdictflow COMMAND --port P --log-level warning`` on a free port; returns the process
    and its base URL."""
    port = free_port()
    cmd = [sys.executable, "-m", "verdictflow", *command, "--port", str(port)]
    cmd += ["--log-level", "warning"]
    with open(log_path, "ab") as log:
        proc = subprocess.Popen(
            cmd, env=env, stdout=log, stderr=subprocess.STDOUT, preexec_fn=die_with_parent
        )
    return proc, f"http://127.0.0.1:{port}"


def stop_server(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(15)
    except subprocess.TimeoutExpired:
        proc.kill()
