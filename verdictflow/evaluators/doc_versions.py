"""The one rule for document versions, applied alike by the worker's quality agent, its
duplicate index reader and the API's retriever (issue 33: the worker applied every update
while the API ignored older ones, so ``/search`` kept version 5's text ranked with the
quality of a stale version 3).

An update (upsert or delete) carries an optional ``version``. It applies unless both it and
the document's current version are set and it is older: an equal version replaces (the later
record wins: a producer correcting a document without bumping its version), and an update
without a version always applies (a producer that does not version). A delete keeps the
document's version (a tombstone), so an older upsert arriving after it is ignored too rather
than bringing the document back. Ignored updates are counted (the worker's
``vf_docs_stale_total``, the API's ``vf_api_stale_records_total``).
"""

from __future__ import annotations


def supersedes(incoming: int | None, current: int | None) -> bool:
    """Whether an update of version ``incoming`` applies over ``current`` (the version of the
    last update applied to the document, deletes included; None when unversioned or new)."""
    return incoming is None or current is None or incoming >= current
