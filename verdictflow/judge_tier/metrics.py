"""The judge tier's metrics (on the worker's ``/metrics`` when it serves one): requests and
tokens per model and tenant, retries, malformed replies, skips by reason and priority, time
waiting for the endpoint, and the spend against the budget."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from prometheus_client import CollectorRegistry, Counter, Gauge

from verdictflow.metric_labels import LabelCap

if TYPE_CHECKING:
    from verdictflow.judge_tier.backends import Reply
    from verdictflow.judge_tier.budget import Spend


class JudgeMetrics:
    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        r = registry or CollectorRegistry()
        self.registry = r
        self.requests = Counter(
            "vf_judge_requests",
            "Judge requests answered, by judge model, the answer's model, tenant and status",
            ["model", "model_of_answer", "tenant", "status"],
            registry=r,
        )
        #: The first 50 answer models and tenants get their own label, later ones ``other``.
        self.answer_models = LabelCap(50)
        self.tenants = LabelCap(50)
        self.tokens = Counter(
            "vf_judge_tokens",
            "Tokens by model, the answer's model and tenant: prompt and completion as the "
            "server reported them, estimated as the budget counted them",
            ["model", "model_of_answer", "tenant", "kind"],
            registry=r,
        )
        self.retries = Counter(
            "vf_judge_retries", "Judge attempts retried, by the error", ["error"], registry=r
        )
        self.invalid = Counter(
            "vf_judge_invalid_replies", "Replies that broke the claims contract", ["model"],
            registry=r,
        )  # fmt: skip
        self.skipped = Counter(
            "vf_judge_skipped",
            "Escalated verdicts not judged, by reason (daily_tokens, wait_limit) and priority",
            ["reason", "priority"],
            registry=r,
        )
        self.unavailable = Counter(
            "vf_judge_unavailable",
            "Times a request found the endpoint failing through every attempt (retried later)",
            registry=r,
        )
        self.spent_requests = Gauge(
            "vf_judge_budget_requests", "Requests the budget let through since start", registry=r
        )
        self.spent_tokens_today = Gauge(
            "vf_judge_budget_day_tokens", "Estimated tokens spent today (UTC)", registry=r
        )
        self.cache_hits = Counter(
            "vf_judge_cache_hits", "Requests answered from the cache table", registry=r
        )

    def labels(self, answer_model: str | None, tenant: str | None) -> tuple[str, str]:
        return self.answer_models(answer_model), self.tenants(tenant)

    def answered(self, model: str, labels: tuple[str, str], reply: Reply, estimated: int) -> None:
        self.requests.labels(model, *labels, "200").inc()
        self.tokens.labels(model, *labels, "estimated").inc(estimated)
        if reply.prompt_tokens is not None:
            self.tokens.labels(model, *labels, "prompt").inc(reply.prompt_tokens)
        if reply.completion_tokens is not None:
            self.tokens.labels(model, *labels, "completion").inc(reply.completion_tokens)

    def budget_spent(self, spend: Spend | Any) -> None:
        self.spent_requests.set(spend.requests)
        self.spent_tokens_today.set(spend.day_tokens)
