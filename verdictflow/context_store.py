"""Context evidence indexes kept across restarts: a SQLite file under the data dir.

RAG traffic brings the same retrieved passages again and again, and indexing one costs more
than parsing a short answer (``docs/benchmarks.md``). The NLP tier's in-memory cache pays that
once per context per process; this store pays it once per context per *deployment*: a restarted
or rebalanced worker, or ``eval answers`` run again on the same contexts, reads the index back
instead of building it again (4.8x faster on SciFact abstracts, ``bench/context_store.py``).

- **Exact**: bodies are :func:`~verdictflow.evaluators.evidence_codec.encode_index`'s bytes,
  which decode to an equal index, so a verdict is the same with or without the store. A body
  that does not decode for its text is built again and written over.
- **Versioned**: rows are keyed by a namespace (:func:`namespace`) that digests the codec's
  format, the context-index mode, the spaCy model, the package version and the source of the
  scoring code; another version of any of them reads none of the rows and adds its own.
- **Bounded**: at most ``max_bytes`` of stored bodies (zlib-compressed, ~2.3 bytes a context
  character), the oldest written first out, whatever their namespace, so rows an upgrade left
  behind age out.
- **Best effort**: it is a cache. A store that cannot be opened, is locked past its timeout or
  fails in any way logs a warning and answers "not stored"; scoring goes on, never fails on it.

One connection per store, shared by the threads of a process under a lock; several processes
may share a file (SQLite's locking, WAL journal).
"""

from __future__ import annotations

import hashlib
import logging
import os
import sqlite3
import threading
import zlib
from collections.abc import Sequence
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path

from verdictflow import __version__
from verdictflow.evaluators import evidence_codec

logger = logging.getLogger(__name__)

#: The store's file name under the data dir.
FILE_NAME = "context-indexes.sqlite3"
#: Seconds a statement waits for another process's lock before the store gives up on it.
LOCK_TIMEOUT_SECONDS = 2.0
#: zlib level: 1 wrote the 2,864 indexes of the codec check in 0.48 s against the default's
#: 0.84 s, 8 % larger.
COMPRESSION = 1
_SCHEMA = """
CREATE TABLE IF NOT EXISTS evidence_indexes (
    namespace TEXT NOT NULL,
    digest BLOB NOT NULL,
    body BLOB NOT NULL,
    size INTEGER NOT NULL,
    UNIQUE (namespace, digest)
)
"""
_TOTAL = "SELECT COALESCE(SUM(size), 0) FROM evidence_indexes"


def code_digest() -> str:
    """SHA-256 over the source of ``verdictflow.evaluators`` (file names and bytes, in name
    order) and of ``verdictflow/nlp.py``, which sets up the tokenizer the indexes are built
    with (its infixes, the bounded punctuation runs): any change to the scoring code, released
    or not, is another namespace, so an edited indexer never reads an index its predecessor
    built."""
    digest = hashlib.sha256()
    package = resources.files("verdictflow.evaluators")
    sources = _sources(package)
    sources.append(("../nlp.py", (resources.files("verdictflow") / "nlp.py").read_bytes()))
    for name, data in sorted(sources):
        digest.update(name.encode() + b"\0" + hashlib.sha256(data).digest())
    return digest.hexdigest()


def _sources(folder: Traversable, prefix: str = "") -> list[tuple[str, bytes]]:
    out = []
    for entry in folder.iterdir():
        if entry.is_dir():
            if entry.name != "__pycache__":
                out += _sources(entry, f"{prefix}{entry.name}/")
        elif entry.name.endswith(".py"):
            out.append((prefix + entry.name, entry.read_bytes()))
    return out


def namespace(context_index: str, nlp_version: str) -> str:
    """The version key of stored indexes: codec format, index mode (``lexical`` / ``parse``),
    the spaCy pipeline's version string, the package version and :func:`code_digest`."""
    parts = (evidence_codec.FORMAT, context_index, nlp_version, __version__, code_digest())
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:32]


class ContextStore:
    """Encoded evidence indexes in one SQLite file, under one namespace (see the module)."""

    def __init__(self, path: Path, namespace: str, max_bytes: int) -> None:
        self.path = path
        self.namespace = namespace
        self.max_bytes = max_bytes
        self.hits = 0
        self.misses = 0
        self.errors = 0
        #: Times this process dropped the oldest rows to stay within ``max_bytes``.
        self.evictions = 0
        self._lock = threading.Lock()
        self._connection: sqlite3.Connection | None = None
        self._bytes = 0
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            # Owner-only, like the documents its words come from may need to be.
            os.close(os.open(path, os.O_CREAT | os.O_RDWR, 0o600))
            connection = sqlite3.connect(
                path, timeout=LOCK_TIMEOUT_SECONDS, check_same_thread=False,
                isolation_level=None,
            )  # fmt: skip
            connection.execute("PRAGMA journal_mode=WAL")
            connection.execute("PRAGMA synchronous=NORMAL")
            connection.execute(_SCHEMA)
            (total,) = connection.execute(_TOTAL).fetchone()
            self._bytes = int(total)
            self._connection = connection
        except (OSError, sqlite3.Error) as exc:
            logger.warning(
                "context index store %s not available (%s): indexes are built in memory only",
                path, exc,
            )  # fmt: skip

    @property
    def available(self) -> bool:
        return self._connection is not None

    @property
    def stored_bytes(self) -> int:
        """Bytes of bodies in the file when opened, plus what this process wrote since."""
        return self._bytes

    def _failed(self, doing: str, exc: sqlite3.Error) -> None:
        self.errors += 1
        log = logger.warning if self.errors == 1 else logger.debug
        log("context index store %s: %s failed (%s); going on without it", self.path, doing, exc)

    def read(self, keys: Sequence[bytes]) -> dict[bytes, bytes]:
        """Stored bodies of ``keys`` (decompressed); damaged ones are left out."""
        if self._connection is None or not keys:
            return {}
        found: dict[bytes, bytes] = {}
        with self._lock:
            try:
                for start in range(0, len(keys), 500):  # SQLite's bound on parameters
                    chunk = keys[start : start + 500]
                    marks = ",".join("?" * len(chunk))
                    rows = self._connection.execute(
                        "SELECT digest, body FROM evidence_indexes "
                        f"WHERE namespace = ? AND digest IN ({marks})",
                        (self.namespace, *chunk),
                    ).fetchall()
                    found.update(rows)
            except sqlite3.Error as exc:
                self._failed("read", exc)
                return {}
        out = {}
        for key, body in found.items():
            try:
                out[key] = zlib.decompress(body)
            except zlib.error:
                logger.warning("context index store %s: entry %s damaged", self.path,
                               key.hex()[:16])  # fmt: skip
        self.hits += len(out)
        self.misses += len(keys) - len(out)
        return out

    def write(self, entries: Sequence[tuple[bytes, bytes]]) -> None:
        """Keep ``entries`` (over any stored body of the same key), in one transaction, then
        drop the oldest rows while the file holds more than ``max_bytes`` of bodies."""
        if self._connection is None or not entries:
            return
        compressed = [(key, zlib.compress(body, COMPRESSION)) for key, body in entries]
        rows = [(self.namespace, key, body, len(body)) for key, body in compressed]
        with self._lock:
            try:
                with self._transaction():
                    self._connection.executemany(
                        "INSERT OR REPLACE INTO evidence_indexes (namespace, digest, body, size) "
                        "VALUES (?, ?, ?, ?)",
                        rows,
                    )
                self._bytes += sum(size for *_, size in rows)
                if self._bytes > self.max_bytes:
                    self._evict()
            except sqlite3.Error as exc:
                self._failed("write", exc)

    def _total(self) -> int:
        """Bytes of stored bodies, counted from the file (every process's rows)."""
        assert self._connection is not None
        (total,) = self._connection.execute(_TOTAL).fetchone()
        return int(total)

    def _transaction(self) -> _Transaction:
        assert self._connection is not None
        return _Transaction(self._connection)

    def _evict(self) -> None:
        """Oldest rows out until the bodies fill at most 90 % of ``max_bytes`` (counted
        again from the file: other processes may have written or evicted too)."""
        assert self._connection is not None
        with self._transaction():
            excess = self._total() - self.max_bytes * 9 // 10
            last = None
            for rowid, size in self._connection.execute(
                "SELECT rowid, size FROM evidence_indexes ORDER BY rowid"
            ):
                if excess <= 0:
                    break
                excess -= size
                last = rowid
            if last is not None:
                self._connection.execute("DELETE FROM evidence_indexes WHERE rowid <= ?", (last,))
            self._bytes = self._total()
        self.evictions += 1
        logger.info("context index store %s: oldest entries dropped, %d bytes kept",
                    self.path, self._bytes)  # fmt: skip

    def close(self) -> None:
        with self._lock:
            if self._connection is not None:
                self._connection.close()
                self._connection = None


class _Transaction:
    """``BEGIN IMMEDIATE`` ... ``COMMIT`` (``ROLLBACK`` on error) on an autocommit
    connection: the write lock is taken up front, so two writers wait instead of deadlocking."""

    def __init__(self, connection: sqlite3.Connection) -> None:
        self._connection = connection

    def __enter__(self) -> None:
        self._connection.execute("BEGIN IMMEDIATE")

    def __exit__(self, kind: object, *_: object) -> None:
        self._connection.execute("ROLLBACK" if kind is not None else "COMMIT")


def open_store(data_dir: Path, context_index: str, nlp_version: str,
               max_bytes: int) -> ContextStore | None:  # fmt: skip
    """The store of ``data_dir`` for this version, or None when ``max_bytes`` is 0 (off)."""
    if max_bytes <= 0:
        return None
    return ContextStore(data_dir / FILE_NAME, namespace(context_index, nlp_version), max_bytes)
