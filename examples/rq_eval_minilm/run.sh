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
# A/B on SciFact: configA, configB, output name.
ab() {
  "$BIN/verdictflow" rq-eval "${common[@]}" --configA "$HERE/$1.yaml" --configB "$HERE/$2.yaml" \
    --out "$OUT/$3.json" --csv "$OUT/$3.csv"
}
ab minilm_dense minilm_hybrid dense_vs_hybrid
ab bm25 minilm_hybrid_combsum bm25_vs_combsum
# 3. The API's int8 query encoder against fp32 queries, dense and hybrid (issue 32).
ab minilm_dense minilm_dense_int8 dense_fp32_vs_int8
ab minilm_hybrid minilm_hybrid_int8 hybrid_fp32_vs_int8
