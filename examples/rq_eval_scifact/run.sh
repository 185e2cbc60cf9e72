#!/usr/bin/env bash
# SciFact A/B with rq-eval: A = cosine only, B = cosine blended with document quality.
# Builds its inputs under out/ (not in git), then runs the harness. From the repo root:
#   bash examples/rq_eval_scifact/run.sh [DATA_DIR]     (default ../shared/data/scifact_beir)
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
DATA="${1:-$ROOT/../shared/data/scifact_beir}"
BIN="${VERDICTFLOW_BIN:-$ROOT/.venv/bin}"
OUT="$HERE/out"
mkdir -p "$OUT"

# 1. The corpus embedded with the default (hashing, 384-d) embedder, as an NPZ.
"$BIN/python" "$HERE/build_npz.py" "$DATA/corpus.jsonl" "$OUT/scifact_384.npz"

# 2. Document quality (spec 004) over that NPZ: no index file (an exact one is built in
#    memory) and no knowledge-graph edges (graph degree 0 for every document).
"$BIN/verdictflow" score-quality --npz "$OUT/scifact_384.npz" \
  --index "$OUT/no.index" --edges "$OUT/no_edges.jsonl" \
  --out-jsonl "$OUT/id_quality.jsonl" --out-npz "$OUT/id_quality.npz"

# 3. The A/B: same retriever, same corpus; B blends in the quality file from step 2.
"$BIN/verdictflow" rq-eval \
  --corpus "$DATA/corpus.jsonl" --queries "$DATA/queries.jsonl" --truth "$DATA/qrels/test.tsv" \
  --configA "$HERE/cosine_only.yaml" --configB "$HERE/blended.yaml" \
  --k 10 --out "$OUT/rq_eval.json" --csv "$OUT/rq_eval.csv" --emit-traces
