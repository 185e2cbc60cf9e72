"""Child ``verdictflow`` processes as a user starts them: one command, or a worker that runs
until stopped, with the settings of a test passed through the environment."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from verdictflow.settings import Settings


def run_verdictflow(
    *args: object,
    module: str = "verdictflow",
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
    timeout: float = 360,  # a slower 2-core CI VM took over 120 s for score-quality
    check: bool = False,
) -> subprocess.CompletedProcess[str]:
    """Run ``python -m verdictflow ARGS`` (or another module) as a user would, output as text."""
    return subprocess.run(
        [sys.executable, "-m", module, *map(str, args)],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=check,
    )


def settings_env(settings: Settings) -> dict[str, str]:
    """The environment that makes a child ``verdictflow`` process use ``settings``."""
    env = {**os.environ}
    for name, value in settings.model_dump(exclude_none=True).items():
        env[f"VERDICTFLOW_{name.upper()}"] = str(value)
    return env


class WorkerProcess:
    """A ``verdictflow worker`` child process with its log file."""

    def __init__(
        self,
        settings: Settings,
        log_path: Path,
        policy: Path | None = None,
        args: Sequence[str] = (),
        env: dict[str, str] | None = None,
    ) -> None:
        """``args``: further ``verdictflow worker`` options, as a user would type them;
        ``env``: further environment variables (a judge backend's)."""
        self.settings = settings
        self.log_path = log_path
        cmd = [sys.executable, "-m", "verdictflow", "worker"]
        if policy is not None:
            cmd += ["--policy", str(policy)]
        cmd += list(args)
        with open(log_path, "ab") as log:
            self.proc = subprocess.Popen(
                cmd,
                env={**settings_env(settings), **(env or {})},
                stdout=log,
                stderr=subprocess.STDOUT,
            )

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
