"""Start the API next to the worker in ``verdictflow dev`` (a child process, topic mode)."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

from verdictflow.streams.broker import die_with_parent


def start_api(env: dict[str, str], log_path: Path) -> tuple[subprocess.Popen[bytes], str]:
    """``verdictflow api`` on a free loopback port, following the dev broker's topics."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    cmd = [sys.executable, "-m", "verdictflow", "api", "--port", str(port)]
    cmd += ["--log-level", "warning"]
    with open(log_path, "ab") as log:
        proc = subprocess.Popen(
            cmd, env=env, stdout=log, stderr=subprocess.STDOUT, preexec_fn=die_with_parent
        )
    return proc, f"http://127.0.0.1:{port}"


def stop_api(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(15)
    except subprocess.TimeoutExpired:
        proc.kill()
