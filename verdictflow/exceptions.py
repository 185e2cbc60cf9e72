"""Small, named exceptions under one project base, so callers can catch precisely."""

from __future__ import annotations


class VerdictflowError(Exception):
    """Base of every error raised on purpose by verdictflow."""


class InvalidEvent(VerdictflowError):  # noqa: N818 - reads better at call sites than InvalidEventError
    """An input record that cannot be scored; it goes to the dead-letter topic.

    ``code`` is a short machine-readable reason (``not_json``, ``invalid_utf8``, ``too_deep``,
    ``schema``, ``oversized``, ``empty``, ``not_object``, ``internal_error``);
    ``detail`` is for humans.
    """

    def __init__(self, code: str, detail: str) -> None:
        super().__init__(f"{code}: {detail}")
        self.code = code
        self.detail = detail

    @classmethod
    def internal(cls, exc: BaseException, where: str = "") -> InvalidEvent:
        """``internal_error`` for an input that made the scoring code raise ``exc``: what was
        raised, after ``where``, cut to 500 characters (a dead letter stays small)."""
        return cls("internal_error", f"{where}{type(exc).__name__}: {exc}"[:500])


class PolicyError(VerdictflowError):
    """A policy file that is missing, unreadable or malformed. Workers refuse to start on it."""


class BrokerError(VerdictflowError):
    """The embedded broker could not be found, started or reached."""


class TopicNameError(VerdictflowError):
    """A topic name that is not in the registry."""
