"""``verdictflow score-quality``: spec 004's batch quality tool over an NPZ of vectors.

Also ``python -m verdictflow.scoring_jobs.batch.score_quality``. Inputs: an NPZ with ``vectors``
(float32, n x d; when absent, the texts are embedded here with ``--embedder``, as the docs
agent embeds a document that arrives without a vector), ``doc_ids`` and ``concept_texts`` (n
strings; ``tmd_codes`` and ``lane_indices`` optional and passed through to nothing that
scores), a FAISS index built over those vectors in row order (built in memory, exactly, when
the file is missing), and edges as JSONL ``{"src", "dst"}``. Outputs: ``id_quality.jsonl``
(spec format, NPZ row order) and ``id_quality.npz``. Scores come from the same pure functions
the stream agents use.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import numpy as np
import numpy.typing as npt
import orjson
import typer
from rich.console import Console
from rich.progress import Progress

from verdictflow.evaluators import doc_quality as dq
from verdictflow.evaluators.dup_index import VectorError, batch_dup_counts, unit_rows
from verdictflow.evaluators.embedding import Embedder
from verdictflow.exceptions import VerdictflowError
from verdictflow.input_files import stream_lines
from verdictflow.models.quality import DocQuality

logger = logging.getLogger(__name__)
err = Console(stderr=True, soft_wrap=True)  # one line per message, paths unbroken


class QualityInputError(VerdictflowError):
    """An input file of the quality job that cannot be used (one line says why)."""


@dataclass(frozen=True)
class Corpus:
    doc_ids: list[str]
    texts: list[str]
    vectors: npt.NDArray[np.float32]


def load_npz(
    path: Path, embed: Callable[[list[str]], npt.NDArray[np.float32]] | None = None
) -> Corpus:
    """The corpus, checked: required arrays present, lengths equal, ids unique, no NaN.

    Without a ``vectors`` array, ``embed`` gives the texts theirs (None: it is required)."""
    if not path.is_file():
        raise QualityInputError(f"{path}: no such NPZ file")
    try:
        data = np.load(path, allow_pickle=False)
    except (OSError, ValueError) as exc:
        raise QualityInputError(f"{path}: not a readable NPZ ({exc})") from None
    required = (
        ("doc_ids", "concept_texts")
        if embed is not None
        else ("vectors", "doc_ids", "concept_texts")
    )
    missing = [k for k in required if k not in data.files]
    if missing:
        raise QualityInputError(f"{path}: missing array(s) {', '.join(missing)}")
    if "vectors" in data.files:
        vectors = np.asarray(data["vectors"])
    else:
        assert embed is not None
        vectors = embed([str(x) for x in data["concept_texts"]])
    if vectors.ndim != 2 or vectors.shape[0] == 0:
        raise QualityInputError(f"{path}: vectors must be a non-empty n x d array")
    ids = [str(x) for x in data["doc_ids"]]
    texts = [str(x) for x in data["concept_texts"]]
    if not len(ids) == len(texts) == vectors.shape[0]:
        raise QualityInputError(
            f"{path}: {vectors.shape[0]} vectors, {len(ids)} doc_ids, {len(texts)} concept_texts"
        )
    bad = np.flatnonzero(~np.isfinite(vectors).all(axis=1))
    if bad.size:
        raise QualityInputError(
            f"{path}: {bad.size} vector(s) with NaN/inf values, first at row {bad[0]}"
        )
    seen: dict[str, int] = {}
    for i, d in enumerate(ids):
        if d in seen:
            raise QualityInputError(f"{path}: doc_id {d!r} at rows {seen[d]} and {i}")
        seen[d] = i
    return Corpus(ids, texts, vectors.astype(np.float32))


def load_index(path: Path | None, dim: int, n: int) -> object | None:
    """The FAISS index from ``path``, checked against the vectors; None when the file is
    missing (the caller builds an exact one in memory)."""
    import faiss

    if path is None or not path.exists():
        return None
    try:
        index = faiss.read_index(str(path))
    except RuntimeError as exc:
        raise QualityInputError(f"{path}: not a FAISS index ({str(exc)[:120]})") from None
    if index.d != dim:
        raise QualityInputError(f"{path}: index dimension {index.d}, NPZ vectors have {dim}")
    if index.ntotal != n:
        raise QualityInputError(f"{path}: index holds {index.ntotal} vectors, NPZ has {n}")
    return index


def load_degrees(path: Path | None) -> dict[str, int]:
    """Degree of every node named by an edge: distinct directed edges, self-loops ignored.
    A missing file gives an empty map (degree 0 everywhere, as the spec says)."""
    if path is None or not path.exists():
        return {}
    edges: set[tuple[str, str]] = set()
    with path.open("rb") as fh:
        for no, line in enumerate(stream_lines(fh), start=1):
            if not line.strip():
                continue
            try:
                obj = orjson.loads(line)
                src, dst = obj["src"], obj["dst"]
            except (orjson.JSONDecodeError, KeyError, TypeError):
                raise QualityInputError(f'{path}:{no}: expected {{"src": id, "dst": id}}') from None
            if not isinstance(src, str) or not isinstance(dst, str) or not src or not dst:
                raise QualityInputError(f"{path}:{no}: src and dst must be non-empty strings")
            key = dq.edge_key(src, dst)
            if key is not None:
                edges.add(key)
    return degrees_of(edges)


def degrees_of(edges: set[tuple[str, str]]) -> dict[str, int]:
    deg: dict[str, int] = {}
    for src, dst in edges:
        deg[src] = deg.get(src, 0) + 1
        deg[dst] = deg.get(dst, 0) + 1
    return deg


def score_corpus(
    corpus: Corpus,
    cfg: dq.QualityConfig,
    index: object | None,
    degrees: dict[str, int],
    margins: Sequence[tuple[float | None, str | None]] | None = None,
    progress: Callable[[int], None] | None = None,
) -> list[DocQuality]:
    """One DocQuality row per document, in corpus order."""
    try:
        unit = unit_rows(corpus.vectors)
    except VectorError as exc:
        raise QualityInputError(str(exc)) from None
    dups = batch_dup_counts(unit, cfg.kdup, cfg.dup_threshold, index, progress)  # type: ignore[arg-type]
    digest = cfg.digest()
    rows = []
    for i, doc_id in enumerate(corpus.doc_ids):
        margin, reason = margins[i] if margins is not None else (0.0, None)
        quality, features = dq.score_features(
            dq.text_health(corpus.texts[i]), degrees.get(doc_id, 0), int(dups[i]), margin, cfg
        )
        rows.append(
            DocQuality(
                doc_id=doc_id,
                quality=quality,
                features=features,
                version=0,
                reasons=(reason,) if reason else (),
                config_digest=digest,
            )
        )
    return rows


def spec_line(row: DocQuality) -> bytes:
    """Spec 004's JSONL format; ``reasons`` only when a signal was deferred."""
    obj: dict[str, object] = {
        "doc_id": row.doc_id,
        "quality": row.quality,
        "features": row.features.model_dump(),
    }
    if row.reasons:
        obj["reasons"] = list(row.reasons)
    return orjson.dumps(obj)


def write_outputs(rows: Sequence[DocQuality], out_jsonl: Path, out_npz: Path) -> None:
    """``id_quality.jsonl`` and ``id_quality.npz`` (doc_ids, quality and each feature as
    float64; a missing CPESH margin is 0 there, as it counts in the score)."""
    out_jsonl.parent.mkdir(parents=True, exist_ok=True)
    out_npz.parent.mkdir(parents=True, exist_ok=True)
    out_jsonl.write_bytes(b"".join(spec_line(r) + b"\n" for r in rows))
    with out_npz.open("wb") as fh:
        np.savez(
            fh,
            doc_ids=np.array([r.doc_id for r in rows], dtype=str),
            quality=np.array([r.quality for r in rows], dtype=np.float64),
            text=np.array([r.features.text for r in rows], dtype=np.float64),
            graph=np.array([r.features.graph for r in rows], dtype=np.float64),
            dup_penalty=np.array([r.features.dup_penalty for r in rows], dtype=np.float64),
            cpesh_margin=np.array([r.features.cpesh_margin or 0.0 for r in rows], np.float64),
        )


class EmbedderChoice(StrEnum):
    hashing = "hashing"
    sentence_transformers = "sentence-transformers"


def _embedder(name: str) -> Embedder:
    """The docs agent's embedder by that name, at its dimension and model directory."""
    from verdictflow.embedders import make_embedder
    from verdictflow.settings import QualitySettings

    settings = QualitySettings()
    return make_embedder(name, settings.dim, settings.embed_model_dir)


def _embed_all(embedder: Embedder, texts: list[str]) -> npt.NDArray[np.float32]:
    """Embed an NPZ's texts (no vectors given), with a progress bar: a neural model takes
    tens of milliseconds per document."""
    out = np.zeros((len(texts), embedder.dim), dtype=np.float32)
    with Progress(console=err, transient=True) as bar:
        task = bar.add_task(f"embedding ({embedder.version})", total=len(texts))
        for start in range(0, len(texts), 64):
            chunk = texts[start : start + 64]
            out[start : start + len(chunk)] = embedder.embed(chunk)
            bar.advance(task, len(chunk))
    return out


def score_quality(
    npz: Annotated[Path, typer.Option("--npz", help="NPZ: vectors, doc_ids, concept_texts")] = Path(
        "artifacts/fw10k_vectors_768.npz"
    ),
    index: Annotated[
        Path, typer.Option("--index", help="FAISS index over the NPZ vectors, in row order")
    ] = Path("artifacts/fw10k_ivf_768.index"),
    edges: Annotated[Path, typer.Option("--edges", help='JSONL {"src","dst"} edges')] = Path(
        "artifacts/kg/edges.jsonl"
    ),
    out_jsonl: Annotated[Path, typer.Option("--out-jsonl")] = Path("artifacts/id_quality.jsonl"),
    out_npz: Annotated[Path, typer.Option("--out-npz")] = Path("artifacts/id_quality.npz"),
    policy: Annotated[
        Path | None,
        typer.Option("--policy", help="Policy YAML; its doc_quality section gives the defaults"),
    ] = None,
    kdup: Annotated[
        int | None, typer.Option("--kdup", help="Neighbours checked for duplicates [policy: 5]")
    ] = None,
    w_text: Annotated[float | None, typer.Option("--w_text", help="[policy: 0.4]")] = None,
    w_graph: Annotated[float | None, typer.Option("--w_graph", help="[policy: 0.3]")] = None,
    w_dup: Annotated[float | None, typer.Option("--w_dup", help="[policy: 0.2]")] = None,
    w_cpesh: Annotated[float | None, typer.Option("--w_cpesh", help="[policy: 0.1]")] = None,
    use_cpesh: Annotated[
        bool | None,
        typer.Option(
            "--use-cpesh/--no-cpesh", help="Ask the local LLM (LNSP_LLM_*) for margins [policy: no]"
        ),
    ] = None,
    embedder: Annotated[
        EmbedderChoice,
        typer.Option(
            "--embedder",
            envvar="VERDICTFLOW_QUALITY_EMBEDDER",
            help="Embeds texts of an NPZ without vectors and CPESH's answers, as the docs agent "
            "does; recorded in the config digest unless hashing",
        ),
    ] = EmbedderChoice.hashing,
) -> None:
    """Score every document of an NPZ (spec 004 IQS) into id_quality.jsonl and .npz.

    The weights, kdup and CPESH come from the policy's ``doc_quality`` section (the spec's
    defaults without --policy), so the batch scores what a worker with the same policy
    streams; a flag given here overrides the policy for this run."""
    from verdictflow.evaluators.policy import load_policy

    given = {"kdup": kdup, "w_text": w_text, "w_graph": w_graph, "w_dup": w_dup,
             "w_cpesh": w_cpesh, "use_cpesh": use_cpesh}  # fmt: skip
    section = load_policy(policy).doc_quality.model_dump()
    try:
        cfg = dq.QualityConfig(**{**section, **{k: v for k, v in given.items() if v is not None}})
    except ValueError as exc:
        raise QualityInputError(str(exc)) from None
    use_cpesh = cfg.use_cpesh
    embed_with = _embedder(embedder.value)
    if embedder is not EmbedderChoice.hashing:
        cfg = replace(cfg, embedder=embed_with.version)
    corpus = load_npz(npz, lambda texts: _embed_all(embed_with, texts))
    n, dim = corpus.vectors.shape
    faiss_index = load_index(index, dim, n)
    if faiss_index is None:
        err.print(f"no index at {index}: building an exact inner-product index in memory")
    degrees = load_degrees(edges)
    if not edges.exists():
        err.print(f"no edges file at {edges}: graph degree is 0 for every document")
    margins = None
    if use_cpesh:
        from verdictflow.cpesh_client import cpesh_margins
        from verdictflow.settings import CpeshSettings

        margins = asyncio.run(cpesh_margins(corpus.texts, CpeshSettings(), embed_with))
        deferred = sum(1 for m, _ in margins if m is None)
        if deferred:
            err.print(f"CPESH margin deferred for {deferred} of {n} documents (see reasons)")
    with Progress(console=err, transient=True) as bar:
        task = bar.add_task("duplicates + scores", total=n)
        rows = score_corpus(
            corpus, cfg, faiss_index, degrees, margins, lambda k: bar.advance(task, k)
        )
    write_outputs(rows, out_jsonl, out_npz)
    mean = sum(r.quality for r in rows) / n
    err.print(f"scored {n} documents (mean quality {mean:.4f}) -> {out_jsonl}, {out_npz}")


def main() -> None:
    """``python -m verdictflow.scoring_jobs.batch.score_quality``: one clear line on bad input."""
    logging.basicConfig(level="WARNING")
    try:
        typer.run(score_quality)
    except VerdictflowError as exc:
        err.print(f"[red]error:[/] {exc}")
        raise SystemExit(2) from None


if __name__ == "__main__":
    main()
