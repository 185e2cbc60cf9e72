"""Reading and writing background term statistics files (relevance IDF), and the default.

The shipped default (``verdictflow/data/background_df.json.gz``) was built by
``verdictflow build-idf`` from the 5,183 SciFact abstracts and the 100 SummEval CNN/DailyMail
articles: scientific and news prose, the two registers verdictflow's users mostly answer in.
Build one from your own document corpus for better weights; its digest goes into every verdict.
"""

from __future__ import annotations

import gzip
import logging
from pathlib import Path

from verdictflow.evaluators.relevance import BackgroundStats
from verdictflow.exceptions import VerdictflowError

logger = logging.getLogger(__name__)

DEFAULT_STATS_PATH = Path(__file__).parent / "data" / "background_df.json.gz"


class StatsFileError(VerdictflowError):
    """A background statistics file that cannot be read or is not one."""


def read_stats(path: Path) -> BackgroundStats:
    """Read a statistics file (gzip or plain JSON), or raise :class:`StatsFileError`."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise StatsFileError(f"cannot read statistics file {path}: {exc.strerror}") from None
    if raw[:2] == b"\x1f\x8b":
        try:
            raw = gzip.decompress(raw)
        except OSError as exc:
            raise StatsFileError(f"statistics file {path} is a broken gzip: {exc}") from None
    try:
        return BackgroundStats.from_json(raw)
    except ValueError as exc:
        raise StatsFileError(f"statistics file {path}: {exc}") from None


def write_stats(stats: BackgroundStats, path: Path) -> None:
    """Write canonical JSON, gzipped when the name ends in ``.gz`` (mtime 0: same bytes)."""
    data = stats.to_json()
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix == ".gz":
        data = gzip.compress(data, mtime=0)
    path.write_bytes(data)


def resolve_stats(setting: str | Path | None) -> BackgroundStats | None:
    """``default`` -> the shipped file, ``none``/None -> no statistics, else a path."""
    if setting is None or str(setting).lower() == "none":
        logger.info("relevance without background statistics: every term weighs 1")
        return None
    path = DEFAULT_STATS_PATH if str(setting) == "default" else Path(setting)
    stats = read_stats(path)
    logger.info("relevance IDF from %s (%d docs, digest %s)", path, stats.n_docs, stats.digest[:12])
    return stats
