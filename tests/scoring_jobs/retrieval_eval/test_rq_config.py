"""rq-eval retriever configs: strict validation, quality resolution, behavioural digest."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.neural import needs_neural
from verdictflow import embedders
from verdictflow.scoring_jobs.retrieval_eval.config import load_config
from verdictflow.scoring_jobs.retrieval_eval.inputs import RQInputError


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


BLENDED = """\
# a comment
mode: dense
weights: {w_cos: 0.85, w_quality: 0.15}
quality: q/id_quality.jsonl
name: blended
trace: false
"""


@pytest.fixture
def quality(tmp_path: Path) -> Path:
    return write(tmp_path / "q" / "id_quality.jsonl", '{"doc_id": "d1", "quality": 0.9}\n')


def test_defaults_are_the_apis(tmp_path: Path) -> None:
    loaded = load_config(write(tmp_path / "c.yaml", "{}\n"))
    config = loaded.config
    assert (config.mode, config.embedder, config.dim, config.index) == (
        "dense",
        "hashing",
        384,
        "auto",
    )
    assert (config.weights.w_cos, config.weights.w_quality) == (0.85, 0.15)
    assert (loaded.quality_path, config.trace, config.url) == (None, False, None)


def test_digest_ignores_labels_comments_and_key_order(tmp_path: Path, quality: Path) -> None:
    a = load_config(write(tmp_path / "a.yaml", BLENDED))
    reordered = "trace: true\nname: other\nquality: q/id_quality.jsonl\n" + (
        "weights: {w_quality: 0.15, w_cos: 0.85}\nmode: dense\n"
    )
    b = load_config(write(tmp_path / "b.yaml", reordered))
    assert a.quality_path == quality  # resolved against the config's directory
    assert a.digest == b.digest


def test_digest_follows_what_changes_rankings(tmp_path: Path, quality: Path) -> None:
    base = load_config(write(tmp_path / "a.yaml", BLENDED)).digest
    heavier = BLENDED.replace("w_quality: 0.15", "w_quality: 0.3")
    assert load_config(write(tmp_path / "b.yaml", heavier)).digest != base
    lexical = BLENDED.replace("mode: dense", "mode: lexical")
    assert load_config(write(tmp_path / "c.yaml", lexical)).digest != base
    quality.write_text('{"doc_id": "d1", "quality": 0.1}\n')  # same path, other values
    assert load_config(write(tmp_path / "d.yaml", BLENDED)).digest != base


def test_fusion_counts_in_hybrid_mode_only(tmp_path: Path) -> None:
    def digest(text: str) -> str:
        return load_config(write(tmp_path / "c.yaml", text)).digest

    assert digest("mode: hybrid\n") == digest("mode: hybrid\nfusion: rrf\n")
    assert digest("mode: hybrid\nfusion: combsum\n") != digest("mode: hybrid\n")
    assert digest("mode: dense\nfusion: combsum\n") == digest("mode: dense\n")


def test_neural_embedder_without_weights_is_one_clear_line(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.delenv(embedders.MODEL_DIR_ENV, raising=False)
    monkeypatch.setattr(embedders, "packaged_model_dir", lambda: None)
    path = write(tmp_path / "c.yaml", "embedder: sentence-transformers\n")
    with pytest.raises(RQInputError, match=r"c\.yaml: no local sentence-transformers weights"):
        load_config(path)


@needs_neural
def test_neural_digest_is_the_weights_not_the_directory_name(tmp_path: Path) -> None:
    packaged = embedders.packaged_model_dir()
    assert packaged is not None
    named = f"embedder: sentence-transformers\nembed_model_dir: {packaged}\n"
    default = load_config(write(tmp_path / "a.yaml", "embedder: sentence-transformers\n"))
    assert load_config(write(tmp_path / "b.yaml", named)).digest == default.digest
    assert default.digest != load_config(write(tmp_path / "c.yaml", "{}\n")).digest


def test_quality_source_is_irrelevant_without_quality_weight(tmp_path: Path, quality: Path) -> None:
    with_file = "weights: {w_cos: 1.0, w_quality: 0.0}\nquality: q/id_quality.jsonl\n"
    without = "weights: {w_cos: 1.0, w_quality: 0.0}\nquality: none\n"
    assert (
        load_config(write(tmp_path / "a.yaml", with_file)).digest
        == load_config(write(tmp_path / "b.yaml", without)).digest
    )


def test_artifacts_means_score_quality_default_output(tmp_path: Path) -> None:
    write(tmp_path / "artifacts" / "id_quality.jsonl", '{"doc_id": "d1", "quality": 0.5}\n')
    loaded = load_config(write(tmp_path / "c.yaml", "quality: artifacts\n"))
    assert loaded.quality_path == tmp_path / "artifacts" / "id_quality.jsonl"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("mode: dense\n  weights: [\n", "bad YAML"),
        ("- a list\n", "a YAML mapping"),
        ("wieghts: {w_cos: 1}\n", "wieghts: Extra inputs are not permitted"),
        ("weights: {w_cos: 1.5}\n", "weights.w_cos: Input should be less than or equal to 1"),
        ("mode: sparse\n", "mode: Input should be 'dense', 'lexical' or 'hybrid'"),
        ("quality: missing.jsonl\n", "missing.jsonl does not exist"),
        ("url: http://h:1\nembedder: hashing\n", "the server owns embedder"),
        ("url: http://h:1\nfusion: combsum\n", "the server owns fusion"),
        ("fusion: max\n", "fusion: Input should be 'rrf' or 'combsum'"),
        ("url: ftp://h\n", "url: String should match pattern"),
    ],
)
def test_bad_configs_are_one_clear_line(tmp_path: Path, text: str, message: str) -> None:
    path = write(tmp_path / "c.yaml", text)
    with pytest.raises(RQInputError) as info:
        load_config(path)
    assert message in str(info.value)
    assert str(path) in str(info.value)
    assert "\n" not in str(info.value)
