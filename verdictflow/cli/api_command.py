"""The ``api`` command: the ``/search`` retriever on topics or on offline artifacts."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from pydantic import ValidationError

from verdictflow.cli.options import (
    BrokerOpt,
    InsecureOpt,
    PrefixOpt,
    build_settings,
    exit_on_sigterm,
    setup_logging,
)


def api(
    host: Annotated[str | None, typer.Option(help="Bind address (default 127.0.0.1)")] = None,
    port: Annotated[int | None, typer.Option(help="Port (default 8080)")] = None,
    broker: BrokerOpt = None,
    prefix: PrefixOpt = None,
    npz: Annotated[
        Path | None, typer.Option(help="Artifact mode: vectors NPZ (doc_ids, concept_texts, ...)")
    ] = None,
    quality: Annotated[
        Path | None, typer.Option(help="Artifact mode: id_quality.jsonl or .npz")
    ] = None,
    index: Annotated[Path | None, typer.Option(help="Artifact mode: FAISS index file")] = None,
    mode: Annotated[
        str | None, typer.Option(help="Default retrieval mode: dense, lexical or hybrid")
    ] = None,
    embedder: Annotated[
        str | None,
        typer.Option(
            help="Query (and vector-less document) embedder: hashing or sentence-transformers "
            "(extra [st]; VERDICTFLOW_API_EMBEDDER)"
        ),
    ] = None,
    fusion: Annotated[
        str | None, typer.Option(help="Hybrid mode's fusion: rrf or combsum (default rrf)")
    ] = None,
    insecure: InsecureOpt = False,
    log_level: Annotated[str, typer.Option(help="debug, info, warning")] = "info",
) -> None:
    """Serve POST /search, GET /healthz and /metrics: topics (--broker) or artifacts (--npz)."""
    from verdictflow.embedders import make_embedder
    from verdictflow.rerank_api.guards import configured_token
    from verdictflow.rerank_api.server import serve
    from verdictflow.rerank_api.settings import ApiSettings
    from verdictflow.web.listeners import check_bind

    setup_logging(log_level)
    exit_on_sigterm()
    if npz is None and (quality is not None or index is not None):
        raise typer.BadParameter("--quality and --index need --npz (artifact mode)")
    if npz is not None and broker is not None:
        raise typer.BadParameter("give either --broker (topic mode) or --npz (artifact mode)")
    given: dict[str, Any] = {"host": host, "port": port, "npz": npz, "quality": quality}
    given.update(index=index, mode=mode, embedder=embedder, fusion=fusion)
    overrides = {k: v for k, v in given.items() if v is not None}
    if npz is not None:
        overrides["source"] = "artifacts"
    try:
        api_settings = ApiSettings(**overrides)  # type: ignore[arg-type,unused-ignore]
    except ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(str(p) for p in error["loc"])
        raise typer.BadParameter(f"{where}: {error['msg']}") from None
    check_bind(
        "api",
        api_settings.host,
        token=configured_token(api_settings),
        insecure=insecure,
        token_env="VERDICTFLOW_API_TOKEN",
    )
    # Before uvicorn starts, so that a missing model is one line and exit 2 (EmbedderUnavailable
    # is a VerdictflowError); loaded once per process, the app's start-up reuses it.
    make_embedder(
        api_settings.embedder,
        api_settings.dim,
        api_settings.embed_model_dir,
        api_settings.embed_threads,
    )
    streams = build_settings(broker=broker, prefix=prefix) if npz is None else None
    serve(api_settings, streams, log_level)
