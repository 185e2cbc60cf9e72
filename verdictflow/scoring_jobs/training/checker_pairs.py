"""A (chunk, claim) pair the claim checker trains on, and the pairs file (issue 43).

The pairs file (JSON lines, xz-compressed when the name ends in ``.xz``) holds the pairs
``train-checker`` built, in their training order: ``train-checker --pairs-out`` writes it and
``--pairs`` trains from it, so the spaCy-made synthetic pairs can be built once on a CPU and
the fit run elsewhere (a GPU machine with only PyTorch) on exactly the same pairs."""

from __future__ import annotations

import json
import lzma
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import IO, cast


@dataclass(frozen=True, slots=True)
class Pair:
    source: str
    set_name: str
    chunk: str
    claim: str
    target: float


def _open(path: Path, mode: str) -> IO[str]:
    if path.name.endswith(".xz"):
        return cast(IO[str], lzma.open(path, mode + "t", encoding="utf-8"))
    return path.open(mode, encoding="utf-8")


def dump_pairs(pairs: Iterable[Pair], path: Path) -> int:
    """Write ``pairs``; a chunk already written is written as ``chunk_ref``, its number among
    the distinct chunks so far (a document's chunk serves a dozen pairs: 5x smaller)."""
    count = 0
    seen: dict[str, int] = {}
    with _open(path, "w") as f:
        for pair in pairs:
            row: dict[str, object] = asdict(pair)
            if pair.chunk in seen:
                row["chunk_ref"] = seen[pair.chunk]
                del row["chunk"]
            else:
                seen[pair.chunk] = len(seen)
            f.write(json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n")
            count += 1
    return count


def read_pairs(path: Path) -> list[Pair]:
    chunks: list[str] = []
    out = []
    with _open(path, "r") as f:
        for line in f:
            if not line.strip():
                continue
            row = json.loads(line)
            if "chunk_ref" in row:
                row["chunk"] = chunks[row.pop("chunk_ref")]
            else:
                chunks.append(row["chunk"])
            out.append(Pair(**row))
    return out
