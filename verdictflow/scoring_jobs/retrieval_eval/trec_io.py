"""Readers for TREC-format qrels and runs (``qid 0 doc rel``; ``qid Q0 doc rank score tag``)."""

from __future__ import annotations

import math
from collections import defaultdict
from pathlib import Path

from verdictflow.exceptions import VerdictflowError
from verdictflow.input_files import text_lines


class TrecFormatError(VerdictflowError):
    """A qrels or run file that does not follow the TREC format."""


def read_trec_qrels(path: Path) -> dict[str, dict[str, int]]:
    """``{qid: {doc: rel}}``; blank lines and ``#`` comments skipped, duplicates refused."""
    qrels: dict[str, dict[str, int]] = defaultdict(dict)
    for line_no, line in enumerate(text_lines(path), start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        parts = line.split()
        if len(parts) != 4:
            raise TrecFormatError(f"{path}:{line_no}: expected 'qid 0 doc rel', got {line!r}")
        qid, _, doc, rel = parts
        if doc in qrels[qid]:
            raise TrecFormatError(f"{path}:{line_no}: duplicate judgment for {qid} {doc}")
        try:
            qrels[qid][doc] = int(rel)
        except ValueError:
            raise TrecFormatError(
                f"{path}:{line_no}: relevance {rel!r} is not an integer"
            ) from None
    return dict(qrels)


def read_trec_run(path: Path) -> dict[str, list[tuple[str, float]]]:
    """``{qid: [(doc, score), ...]}`` in file order (rank by score with ``rank_by_score``)."""
    run: dict[str, list[tuple[str, float]]] = defaultdict(list)
    for line_no, line in enumerate(text_lines(path), start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        parts = line.split()
        if len(parts) != 6:
            raise TrecFormatError(
                f"{path}:{line_no}: expected 'qid Q0 doc rank score tag', got {line!r}"
            )
        try:
            score = float(parts[4])
        except ValueError:
            raise TrecFormatError(f"{path}:{line_no}: score {parts[4]!r} is not a number") from None
        if not math.isfinite(score):
            # nan sorts nowhere: two runs with the same lines in another order ranked apart
            raise TrecFormatError(f"{path}:{line_no}: score {parts[4]!r} is not a finite number")
        run[parts[0]].append((parts[2], score))
    return dict(run)
