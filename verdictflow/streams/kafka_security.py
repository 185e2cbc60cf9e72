"""SASL / TLS settings for every Kafka client, built in one place from :class:`Settings`.

Workers talk to Kafka through Faust (``broker_credentials``) and through raw aiokafka clients
(the output producer, ``tail``, ``replay``, the topic readers, the admin client). A cluster that
needs SASL or TLS must get the same settings on all of them, or one client silently fails to
connect; so both forms are derived here from the same fields, and tests compare them.
"""

from __future__ import annotations

import ssl
from typing import Any

from aiokafka.helpers import create_ssl_context

from verdictflow.exceptions import VerdictflowError
from verdictflow.settings import Settings


class KafkaSecurityError(VerdictflowError):
    """Inconsistent security settings (e.g. SASL without a username)."""


def ssl_context(settings: Settings) -> ssl.SSLContext | None:
    """The TLS context for ``SSL`` / ``SASL_SSL`` (CA file or the system trust store)."""
    if "SSL" not in settings.security_protocol.split("_"):
        return None
    if (settings.ssl_certfile is None) != (settings.ssl_keyfile is None):
        raise KafkaSecurityError("VERDICTFLOW_SSL_CERTFILE and _KEYFILE go together")
    context: ssl.SSLContext = create_ssl_context(
        cafile=str(settings.ssl_cafile) if settings.ssl_cafile else None,
        certfile=str(settings.ssl_certfile) if settings.ssl_certfile else None,
        keyfile=str(settings.ssl_keyfile) if settings.ssl_keyfile else None,
    )
    return context


def aiokafka_security_kwargs(settings: Settings) -> dict[str, Any]:
    """Keyword arguments for ``AIOKafkaProducer`` / ``AIOKafkaConsumer`` / the admin client.

    ``{}`` for PLAINTEXT, so clients keep aiokafka's defaults on the embedded broker.
    """
    protocol = settings.security_protocol
    if protocol == "PLAINTEXT":
        return {}
    kwargs: dict[str, Any] = {"security_protocol": protocol}
    context = ssl_context(settings)
    if context is not None:
        kwargs["ssl_context"] = context
    if protocol.startswith("SASL_"):
        if not settings.sasl_username or settings.sasl_password is None:
            raise KafkaSecurityError(
                f"{protocol} needs VERDICTFLOW_SASL_USERNAME and VERDICTFLOW_SASL_PASSWORD"
            )
        kwargs.update(
            sasl_mechanism=settings.sasl_mechanism,
            sasl_plain_username=settings.sasl_username,
            sasl_plain_password=settings.sasl_password.get_secret_value(),
        )
    return kwargs


def faust_credentials(settings: Settings) -> Any:
    """``broker_credentials`` for the Faust app (None for PLAINTEXT).

    Faust turns these back into the same aiokafka keyword arguments (its
    ``credentials_to_aiokafka_auth``), which a unit test checks against
    :func:`aiokafka_security_kwargs`.
    """
    import faust

    protocol = settings.security_protocol
    if protocol == "PLAINTEXT":
        return None
    kwargs = aiokafka_security_kwargs(settings)
    if protocol == "SSL":
        return faust.SSLCredentials(kwargs["ssl_context"])
    return faust.SASLCredentials(
        username=kwargs["sasl_plain_username"],
        password=kwargs["sasl_plain_password"],
        ssl_context=kwargs.get("ssl_context"),
        mechanism=kwargs["sasl_mechanism"],
    )
