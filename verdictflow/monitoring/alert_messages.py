"""What ``verdictflow notify`` sends for one alert, and where (issue 44, "alerts out").

Pure: the webhook list read from its setting, and the request body of an alert in each shape.

- **Webhooks** come from ``VERDICTFLOW_ALERT_WEBHOOKS``: comma-separated ``shape=url`` items
  (``slack=https://hooks.slack.com/services/...``, ``json=https://ops.example/hooks/vf``), an
  optional name after the shape (``json:pager=https://...``). A webhook URL is a credential
  (Slack's path is its secret), so it lives in the environment and is never logged: logs and
  dead letters name a webhook by its name and host (:attr:`Webhook.where`).
- **Shapes**: ``json`` posts ``{"source": "verdictflow", "summary": ..., "alert": <the alert
  record as on the topic>}``; ``slack`` posts Slack's incoming-webhook shape, ``{"text": ...,
  "blocks": [...]}``, the text being the same one-line summary.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import urlsplit

import orjson

Shape = Literal["json", "slack"]
SHAPES: tuple[Shape, ...] = ("json", "slack")


class WebhookConfigError(ValueError):
    """``VERDICTFLOW_ALERT_WEBHOOKS`` names no usable webhook (the message never holds a URL)."""


@dataclass(frozen=True)
class Webhook:
    """One destination; ``url`` is secret (see the module doc)."""

    name: str
    shape: Shape
    url: str = field(repr=False)

    @property
    def where(self) -> str:
        """What logs may say: the name and the host, never the path or query."""
        parts = urlsplit(self.url)
        return f"{self.name} ({parts.scheme}://{parts.hostname})"


def parse_webhooks(value: str) -> list[Webhook]:
    """The webhooks of a ``VERDICTFLOW_ALERT_WEBHOOKS`` value (see the module doc)."""
    hooks: list[Webhook] = []
    for position, item in enumerate(part.strip() for part in value.split(",")):
        if not item:
            continue
        head, sep, url = item.partition("=")
        shape, _, name = head.strip().partition(":")
        if not sep or shape not in SHAPES:
            raise WebhookConfigError(
                f"webhook {position + 1}: write it as shape=url (shape: json or slack), "
                f"optionally shape:name=url"
            )
        parts = urlsplit(url.strip())
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise WebhookConfigError(f"webhook {position + 1}: its URL is not http(s)://host/...")
        name = name.strip() or f"{shape}-{position + 1}"
        if any(h.name == name for h in hooks):
            raise WebhookConfigError(f"webhook {position + 1}: the name {name!r} is taken")
        hooks.append(Webhook(name, shape, url.strip()))  # type: ignore[arg-type]
    if not hooks:
        raise WebhookConfigError("VERDICTFLOW_ALERT_WEBHOOKS names no webhook")
    return hooks


def summary(alert: dict[str, Any]) -> str:
    """One line a person reads in a chat channel."""
    kind = alert.get("alert", "alert")
    subject = alert.get("kind", "?")
    scope = ", ".join(
        f"{key} {alert[key]}" for key in ("model", "tenant") if alert.get(key) is not None
    )
    line = f"verdictflow {kind}: {subject}" + (f" ({scope})" if scope else "")
    if kind == "score_drift":
        line += (
            f": PSI {alert.get('value', 0):.3f} over {alert.get('window_size', '?')} verdicts "
            f"(window {alert.get('window_index', '?')}, alert at "
            f"{alert.get('enter_threshold', '?')})"
        )
    elif kind == "agreement_drop":
        line += (
            f": reviewers found {float(alert.get('value', 0)):.1%} of {alert.get('labels', '?')} "
            f"labelled verdicts right (bound {float(alert.get('bound', 0)):.0%}, window "
            f"{alert.get('window_index', '?')})"
        )
    elif kind == "fail_rate":
        line += (
            f": {float(alert.get('value', 0)):.1%} FAIL over {alert.get('window_size', '?')} "
            f"verdicts (bound {float(alert.get('bound', 0)):.0%}, window "
            f"{alert.get('window_index', '?')})"
        )
    elif kind == "judge_budget_spent":
        line += f": the day's {alert.get('value', '?')} tokens are spent ({alert.get('day')})"
    elif "value" in alert:
        line += f": {alert.get('statistic', 'value')} {alert['value']}"
    if alert.get("action"):
        line += f"; action: {alert['action']}"
    return line


def body(alert: dict[str, Any], shape: Shape) -> bytes:
    """The request body of ``alert`` (the record as read from ``alerts``) in ``shape``."""
    text = summary(alert)
    if shape == "slack":
        fields = [
            {"type": "mrkdwn", "text": f"*{key}*\n{alert[key]}"}
            for key in ("kind", "model", "tenant", "value", "window_index")
            if alert.get(key) is not None
        ]
        blocks: list[dict[str, Any]] = [
            {"type": "section", "text": {"type": "mrkdwn", "text": text}}
        ]
        if fields:
            blocks.append({"type": "section", "fields": fields[:10]})
        blocks.append(
            {"type": "context", "elements": [
                {"type": "mrkdwn", "text": f"alert id `{alert.get('alert_id', '?')}`"}
            ]}
        )  # fmt: skip
        return orjson.dumps({"text": text, "blocks": blocks})
    return orjson.dumps({"source": "verdictflow", "summary": text, "alert": alert})
