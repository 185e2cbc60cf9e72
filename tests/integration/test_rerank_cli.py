"""``verdictflow api --npz`` as a user runs it: a real uvicorn server on loopback."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import numpy as np


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_api_command_serves_search_from_artifacts(tmp_path: Path) -> None:
    npz = tmp_path / "vectors.npz"
    np.savez(
        npz,
        doc_ids=np.array(["a", "b"]),
        concept_texts=np.array(["kafka partitions and logs", "banana bread recipe"]),
    )
    quality = tmp_path / "id_quality.jsonl"
    quality.write_text('{"doc_id": "b", "quality": 0.9}\n')
    port = free_port()
    cmd = [sys.executable, "-m", "verdictflow", "api", "--port", str(port), "--npz", str(npz)]
    proc = subprocess.Popen(
        [*cmd, "--quality", str(quality)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"{url}/healthz").status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert proc.poll() is None, proc.stdout.read().decode() if proc.stdout else ""
            assert time.monotonic() < deadline, "api did not become ready"
            time.sleep(0.2)
        body = httpx.post(f"{url}/search", json={"q": "banana bread", "top_k": 1}).json()
        assert body["items"][0]["doc_id"] == "b"
        assert body["items"][0]["quality"] == 0.9
    finally:
        proc.terminate()
        proc.wait(20)


def test_api_command_refuses_mixed_modes(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "verdictflow", "api", "--quality", str(tmp_path / "q.jsonl")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert "--quality and --index need --npz" in result.stderr
