"""The judge backend and client a worker's settings ask for (one place reads both)."""

from __future__ import annotations

from pathlib import Path

from verdictflow.evaluators.faithfulness_llm import JudgeContext
from verdictflow.evaluators.judge_tier_policy import JudgeTierPolicy
from verdictflow.exceptions import VerdictflowError
from verdictflow.judge_tier.backends import Backend, OpenAIBackend
from verdictflow.judge_tier.checker_backend import CheckerBackend, shipped_dir
from verdictflow.judge_tier.client import JudgeClient
from verdictflow.judge_tier.cross_encoder_backend import CrossEncoderBackend
from verdictflow.judge_tier.metrics import JudgeMetrics
from verdictflow.settings import JudgeSettings


class JudgeNotConfiguredError(VerdictflowError):
    """The judge tier was asked for without a backend."""


def make_backend(settings: JudgeSettings) -> Backend:
    """An OpenAI-compatible endpoint (``VERDICTFLOW_JUDGE_URL``); else the directory of
    ``VERDICTFLOW_JUDGE_MODEL_DIR`` (a ``train-checker`` export, or a sentence-transformers
    cross-encoder such as HHEM or MiniCheck); else the claim checker shipped with the package."""
    if settings.url:
        assert settings.model is not None  # JudgeSettings checks it
        key = settings.api_key.get_secret_value() if settings.api_key is not None else ""
        return OpenAIBackend(settings.url, settings.model, key, settings.timeout_seconds)
    if settings.model_dir and (Path(settings.model_dir) / "model.onnx").is_file():
        return CheckerBackend(settings.model_dir, settings.threads)
    if settings.model_dir:
        return CrossEncoderBackend(settings.model_dir, settings.threads)
    if not (shipped_dir() / "model.onnx").is_file():
        raise JudgeNotConfiguredError(
            "the judge tier needs a backend and this installation ships no checker: set "
            "VERDICTFLOW_JUDGE_URL and VERDICTFLOW_JUDGE_MODEL (an OpenAI-compatible endpoint) "
            "or VERDICTFLOW_JUDGE_MODEL_DIR (a local model)"
        )
    return CheckerBackend(None, settings.threads)


def make_client(
    settings: JudgeSettings, policy: JudgeTierPolicy, metrics: JudgeMetrics | None = None
) -> JudgeClient:
    return JudgeClient(
        make_backend(settings),
        policy,
        max_attempts=settings.max_attempts,
        breaker_failures=settings.breaker_failures,
        breaker_reset_seconds=settings.breaker_reset_seconds,
        metrics=metrics,
    )


def judge_context(backend: Backend, threshold: float) -> JudgeContext:
    """What a ``faithfulness_llm`` verdict by ``backend`` depends on: the judge worker and
    ``eval answers --judge local`` build it here, so their verdicts stay byte-identical (the
    verdict names the prompt, or the local model's reading, it asked by)."""
    return JudgeContext(backend.name, backend.model, threshold, backend.prompt_version)
