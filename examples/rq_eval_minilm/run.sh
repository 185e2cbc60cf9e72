#!/usr/bin/env bash
# SciFact with the neural embedder (issue 17): needs the [st] extra
#   (.venv/bin/pip install torch==2.13.0 && .venv/bin/pip install -e '.[st]').
# 1. A = MiniLM dense, B = hybrid (BM25 + MiniLM, reciprocal-rank fusion);
# 2. A = BM25 alone, B = hybrid with CombSUM fusion.
# Each rq-eval run embeds the 5,183 abstracts once (about 3.5 minutes on 2 cores here).
# From the repo root:  bash examples/rq_eval_minilm/run.sh [DATA_DIR]
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
DATA="${1:-$ROOT/../shared/data/scifact_beir}"
BIN="${VERDICTFLOW_BIN:-$ROOT/.venv/bin}"
OUT="$HERE/out"
mkdir -p "$OUT"
common=(--corpus "$DATA/corpus.jsonl" --queries "$DATA/queries.jsonl"
        --truth "$DATA/qrels/test.tsv" --k 10)
"$BIN/verdictflow" rq-eval "${common[@]}" \
  --configA "$HERE/minilm_dense.yaml" --configB "$HERE/minilm_hybrid.yaml" \
  --out "$OUT/dense_vs_hybrid.json" --csv "$OUT/dense_vs_hybrid.csv"
"$BIN/verdictflow" rq-eval "${common[@]}" \
  --configA "$HERE/bm25.yaml" --configB "$HERE/minilm_hybrid_combsum.yaml" \
  --out "$OUT/bm25_vs_combsum.json" --csv "$OUT/bm25_vs_combsum.csv"
# 3. The API's int8 query encoder against fp32 queries, dense and hybrid (issue 32).
"$BIN/verdictflow" rq-eval "${common[@]}" \
  --configA "$HERE/minilm_dense.yaml" --configB "$HERE/minilm_dense_int8.yaml" \
  --out "$OUT/dense_fp32_vs_int8.json" --csv "$OUT/dense_fp32_vs_int8.csv"
"$BIN/verdictflow" rq-eval "${common[@]}" \
  --configA "$HERE/minilm_hybrid.yaml" --configB "$HERE/minilm_hybrid_int8.yaml" \
  --out "$OUT/hybrid_fp32_vs_int8.json" --csv "$OUT/hybrid_fp32_vs_int8.csv"
