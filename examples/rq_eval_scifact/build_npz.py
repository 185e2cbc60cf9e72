"""Embed the SciFact corpus with verdictflow's default embedder into the NPZ score-quality reads.

    python build_npz.py CORPUS.jsonl OUT.npz

Arrays: ``doc_ids``, ``concept_texts`` (title + abstract, as rq-eval indexes them) and
``vectors`` (float32, n x 384, the hashing embedder the retriever uses by default).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from verdictflow.evaluators.embedding import default_embedder
from verdictflow.scoring_jobs.retrieval_eval.inputs import read_corpus


def main() -> None:
    corpus_path, out = Path(sys.argv[1]), Path(sys.argv[2])
    docs = read_corpus(corpus_path)
    texts = [d.text for d in docs]
    vectors = np.asarray(default_embedder(384).embed(texts), dtype=np.float32)
    np.savez(
        out,
        doc_ids=np.array([d.doc_id for d in docs]),
        concept_texts=np.array(texts),
        vectors=vectors,
    )
    print(f"{out}: {len(docs)} documents x {vectors.shape[1]}")


if __name__ == "__main__":
    main()
