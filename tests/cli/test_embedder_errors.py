"""A neural embedder that cannot run stops ``api`` and ``worker`` at once, in one line, exit 2,
before anything connects or listens."""

from __future__ import annotations

import os

import pytest

from tests.support.processes import run_verdictflow


@pytest.fixture
def no_model_env(tmp_path) -> dict[str, str]:
    """A model directory that holds no model."""
    return {**os.environ, "LNSP_EMBED_MODEL_DIR": str(tmp_path)}


def test_api_refuses_a_directory_without_a_model(no_model_env, tmp_path) -> None:
    proc = run_verdictflow(
        "api", "--npz", tmp_path / "v.npz", "--embedder", "sentence-transformers", env=no_model_env
    )
    assert proc.returncode == 2
    assert "not a sentence-transformers model directory (no config.json)" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_api_refuses_an_unknown_embedder(tmp_path) -> None:
    proc = run_verdictflow("api", "--npz", tmp_path / "v.npz", "--embedder", "word2vec")
    assert proc.returncode == 2
    text = " ".join(proc.stderr.replace("│", " ").split())  # typer's box wraps lines
    assert "embedder: Input should be 'hashing' or 'sentence-transformers'" in text


def test_worker_refuses_it_before_waiting_for_the_broker(no_model_env) -> None:
    env = {**no_model_env, "VERDICTFLOW_QUALITY_EMBEDDER": "sentence-transformers"}
    proc = run_verdictflow("worker", "--broker", "kafka://127.0.0.1:9", env=env, timeout=60)
    assert proc.returncode == 2
    assert proc.stderr.strip().endswith(
        "is not a sentence-transformers model directory (no config.json)"
    )
