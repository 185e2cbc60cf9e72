"""The per-document feature row kept in the ``doc-quality-features`` table, and its changes.

An entry is a JSON-able dict (the table's changelog stores it as is):

- ``doc``: ``{"th": text health, "dv": DocUpdate.version, "cm": CPESH margin or None,
  "cr": CPESH reason or None}``, or None while the document is unknown or deleted;
- ``edges``: sorted edge tokens ``o:<dst>`` / ``i:<src>`` (distinct directed edges), kept even
  while the document is unknown or deleted: the graph is not the corpus;
- ``dups``, ``dup_ids``: duplicate count and the full duplicate set at the last scoring;
- ``q``: ``[quality, text, graph, dup_penalty, cpesh_margin]`` of the last emitted row;
- ``rev``: the revision of the last emitted row, DocQuality.version;
- ``v``: the ``version`` of the last update applied, a delete's included (a tombstone), for
  the version rule (:mod:`verdictflow.evaluators.doc_versions`): an older update is ignored.

Every transition is idempotent: adding an edge token already present, removing one that is
absent, re-applying the same document, or re-scoring with the same duplicates leaves the
entry equal, so at-least-once redelivery cannot double count. A row is emitted only when the
quality or a feature moved.
"""

from __future__ import annotations

from typing import Any

import orjson

from verdictflow.evaluators import doc_quality as dq
from verdictflow.evaluators.doc_versions import supersedes
from verdictflow.evaluators.vectors import vector_problem as check_vector
from verdictflow.models.events import DocUpdate
from verdictflow.models.quality import DocQuality

Entry = dict[str, Any]


def new_entry() -> Entry:
    return {"doc": None, "edges": [], "dups": 0, "dup_ids": [], "q": None, "rev": 0, "v": None}


def is_stale(entry: Entry | None, update: DocUpdate) -> bool:
    """Whether ``update`` is older than the last update applied to the document."""
    return entry is not None and not supersedes(update.version, entry.get("v"))


def copy_entry(entry: Entry | None) -> Entry:
    if entry is None:
        return new_entry()
    out = dict(entry)
    out["edges"] = list(entry.get("edges", []))
    out["dup_ids"] = list(entry.get("dup_ids", []))
    return out


def vector_problem(update: DocUpdate, dim: int) -> str | None:
    """Why a document's vector cannot be indexed, or None. The agent dead-letters such a
    document, and the index reader and the API skip it: all three apply the same check
    (:func:`verdictflow.evaluators.vectors.vector_problem`, in float32 as stored)."""
    if update.op == "delete":
        return None
    problem = check_vector(update.vector, dim)
    return None if problem is None else problem[1]


def apply_doc(
    entry: Entry, update: DocUpdate, margin: float | None, reason: str | None
) -> tuple[Entry, list[str]]:
    """The entry after an upsert or delete (duplicates are filled in by :func:`set_dups`);
    also the old duplicate set, whose members must be re-scored."""
    out = copy_entry(entry)
    old_dups = list(out["dup_ids"])
    out["v"] = update.version
    if update.op == "delete":
        out["doc"] = None
        out["dups"], out["dup_ids"] = 0, []
    else:
        out["doc"] = {
            "th": dq.text_health(update.text),
            "dv": update.version,
            "cm": margin,
            "cr": reason,
        }
    return out, old_dups


def set_dups(entry: Entry, dups: int, dup_ids: list[str]) -> Entry:
    out = copy_entry(entry)
    if out["doc"] is not None:
        out["dups"], out["dup_ids"] = dups, dup_ids
    return out


def edge_messages(src: str, dst: str, op: str) -> list[tuple[str, bytes]]:
    """(key, internal message) for both endpoints of an edge; none for a self-loop."""
    if dq.edge_key(src, dst) is None:
        return []
    return [
        (src, orjson.dumps({"t": "edge", "node": src, "e": f"o:{dst}", "op": op})),
        (dst, orjson.dumps({"t": "edge", "node": dst, "e": f"i:{src}", "op": op})),
    ]


def rescore_message(doc_id: str) -> bytes:
    return orjson.dumps({"t": "rescore", "node": doc_id})


def apply_edge(entry: Entry, token: str, op: str) -> Entry:
    out = copy_entry(entry)
    edges = set(out["edges"])
    if op == "add":
        edges.add(token)
    else:
        edges.discard(token)
    out["edges"] = sorted(edges)
    return out


def take_row(
    entry: Entry, doc_id: str, cfg: dq.QualityConfig, ts: float | None
) -> DocQuality | None:
    """Set ``entry``'s emitted state and return the row to emit, when the quality moved.

    A document that was deleted gets one retiring row (``deleted``, quality 0); a node that
    never was a document (only edges) gets none.
    """
    doc = entry["doc"]
    if doc is None:
        if entry["q"] is None:
            return None
        entry["q"] = None
        entry["rev"] += 1
        zero = dq.score_features(0.0, 0, 0, 0.0, cfg)[1]
        return DocQuality(
            doc_id=doc_id,
            quality=0.0,
            features=zero,
            version=entry["rev"],
            ts=ts,
            deleted=True,
            config_digest=cfg.digest(),
        )
    quality, features = dq.score_features(
        doc["th"], len(entry["edges"]), entry["dups"], doc["cm"], cfg
    )
    state = [quality, features.text, features.graph, features.dup_penalty, features.cpesh_margin]
    if entry["q"] == state:
        return None
    entry["q"] = state
    entry["rev"] += 1
    return DocQuality(
        doc_id=doc_id,
        quality=quality,
        features=features,
        version=entry["rev"],
        ts=ts,
        doc_version=doc["dv"],
        reasons=(doc["cr"],) if doc["cr"] else (),
        config_digest=cfg.digest(),
    )
