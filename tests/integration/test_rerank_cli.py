"""``verdictflow api --npz`` as a user runs it: a real uvicorn server on loopback."""

from __future__ import annotations

import json
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


def test_api_command_serves_search_and_rq_eval_queries_it(tmp_path: Path) -> None:
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
        # rq-eval with a url config against the live server, next to a run file.
        (tmp_path / "url.yaml").write_text(f"url: {url}\ntrace: true\n")
        (tmp_path / "q.tsv").write_text("q1\tbanana bread\nq2\tkafka logs\n")
        (tmp_path / "qrels.tsv").write_text("q1\tb\t1\nq2\ta\t1\n")
        (tmp_path / "b.run").write_text("q1 Q0 a 1 2.0 x\nq1 Q0 b 2 1.0 x\n")
        files = {n: str(tmp_path / n) for n in ("q.tsv", "qrels.tsv", "url.yaml", "b.run")}
        args = ["--queries", files["q.tsv"], "--truth", files["qrels.tsv"]]
        args += ["--configA", files["url.yaml"], "--runB", files["b.run"], "--k", "1"]
        args += ["--out", str(tmp_path / "r.json"), "--emit-traces"]
        result = subprocess.run(
            [sys.executable, "-m", "verdictflow", "rq-eval", *args],
            capture_output=True,
            text=True,
            timeout=90,
        )
        assert result.returncode == 0, result.stderr
        report = json.loads((tmp_path / "r.json").read_text())
        assert report["systems"]["A"]["source"] == "url"
        assert report["systems"]["A"]["metrics"]["macro"] == {
            "recall": 1.0,
            "mrr": 1.0,
            "ndcg": 1.0,
        }
        assert report["systems"]["B"]["metrics"]["macro"]["mrr"] == 0.0  # B ranks a first
        traced = (tmp_path / "r.traces.A.jsonl").read_text().splitlines()
        assert json.loads(traced[0])["candidates"][0]["quality"] == 0.9
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
