"""/search latency at 100k documents x 384-d, next to raw FAISS search in the same run.

1. Builds a corpus of N seeded random unit vectors (+ texts and a quality row per document),
   an HNSW index over them (the API's own parameters), and writes the artifacts.
2. Starts ``verdictflow api --npz ... --quality ... --index ...`` (uvicorn, loopback).
3. Reference, in this process: raw ``index.search`` of the same query vectors for the same
   number of candidates the API fetches (what a hand-written FAISS endpoint would do per query).
4. A load generator in a separate process sends POST /search open-loop at ``--rate`` req/s for
   ``--duration`` s (client-side latency from the scheduled send time, so queueing counts), then
   a closed loop with ``--concurrency`` connections to find the throughput ceiling.
5. Server-side percentiles come from the app's own timing (middleware + stage timers, exact
   samples at ``GET /stats/latency``): whole request, embed, index search, blend.

    python bench/search_latency.py [--n 100000] [--rate 200] [--duration 20] [--variants]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import faiss
import httpx
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from answers_throughput import machine

from verdictflow.evaluators.embedding import embed_texts
from verdictflow.rerank_api.blend import Weights, blend, candidate_count
from verdictflow.rerank_api.settings import ApiSettings

WORDS = tuple(
    [
        "ocean",
        "protein",
        "cell",
        "gene",
        "cancer",
        "kafka",
        "stream",
        "index",
        "vector",
        "quality",
        "search",
        "model",
        "answer",
        "graph",
        "river",
        "climate",
        "energy",
        "market",
        "patient",
        "trial",
        "dose",
        "virus",
        "neuron",
        "memory",
        "signal",
    ]
)


def queries(n: int, seed: int) -> list[str]:
    rng = np.random.default_rng(seed)
    return [" ".join(rng.choice(list(WORDS), size=rng.integers(3, 9))) for _ in range(n)]


def pct(values: list[float] | np.ndarray, q: float) -> float:
    return float(np.percentile(np.asarray(values), q))


# -- load generator (runs in its own process) -----------------------------------------------
async def _open_loop(url: str, qs: list[str], rate: float, duration: float) -> dict[str, float]:
    limits = httpx.Limits(max_connections=64, max_keepalive_connections=64)
    async with httpx.AsyncClient(base_url=url, limits=limits, timeout=10) as client:
        lat: list[float] = []
        errors = 0
        total = int(rate * duration)
        start = time.perf_counter() + 0.1

        async def one(i: int) -> None:
            nonlocal errors
            at = start + i / rate
            await asyncio.sleep(max(0.0, at - time.perf_counter()))
            r = await client.post("/search", json={"q": qs[i % len(qs)], "top_k": 10})
            if r.status_code != 200:
                errors += 1
            lat.append(time.perf_counter() - at)

        await asyncio.gather(*(one(i) for i in range(total)))
        elapsed = time.perf_counter() - start
    ms = np.asarray(lat) * 1000
    return {
        "sent": total,
        "errors": errors,
        "achieved_rps": total / elapsed,
        "p50_ms": pct(ms, 50),
        "p99_ms": pct(ms, 99),
    }


async def _closed_loop(url: str, qs: list[str], conc: int, duration: float) -> dict[str, float]:
    async with httpx.AsyncClient(base_url=url, timeout=10) as client:
        done = 0
        end = time.perf_counter() + duration

        async def worker(w: int) -> None:
            nonlocal done
            i = w
            while time.perf_counter() < end:
                await client.post("/search", json={"q": qs[i % len(qs)], "top_k": 10})
                done += 1
                i += conc

        t0 = time.perf_counter()
        await asyncio.gather(*(worker(w) for w in range(conc)))
        return {"requests": done, "rps": done / (time.perf_counter() - t0)}


def load_main(args: argparse.Namespace) -> None:
    qs = queries(2000, seed=2)
    phase = args.load_phase
    if phase == "open":
        out = asyncio.run(_open_loop(args.url, qs, args.rate, args.duration))
    else:
        out = asyncio.run(_closed_loop(args.url, qs, args.concurrency, args.duration))
    print(json.dumps(out))


def run_load(url: str, phase: str, args: argparse.Namespace) -> dict[str, float]:
    cmd = [sys.executable, __file__, "--load-phase", phase, "--url", url]
    cmd += ["--rate", str(args.rate), "--duration", str(args.duration)]
    cmd += ["--concurrency", str(args.concurrency)]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True, timeout=600)
    result: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


# -- driver -----------------------------------------------------------------------------------
def main(args: argparse.Namespace) -> None:
    api = ApiSettings()
    dim, n = api.dim, args.n
    print(machine())
    print(f"N = {n:,} documents x {dim}-d, HNSW M={api.hnsw_m} efC={api.ef_construction} "
          f"efSearch={api.ef_search}, top_k = 10, faiss threads = {api.faiss_threads}")  # fmt: skip
    rng = np.random.default_rng(1)
    vectors = rng.standard_normal((n, dim)).astype(np.float32)
    faiss.normalize_L2(vectors)
    ids = np.array([f"doc{i:07d}" for i in range(n)])
    texts = np.array([f"document {i} about {WORDS[i % len(WORDS)]}" for i in range(n)])
    quality = rng.random(n)
    with tempfile.TemporaryDirectory() as tmp:
        tmpdir = Path(tmp)
        np.savez(tmpdir / "v.npz", doc_ids=ids, concept_texts=texts, vectors=vectors)
        np.savez(tmpdir / "q.npz", doc_ids=ids, quality=quality)
        t0 = time.perf_counter()
        faiss.omp_set_num_threads(os.cpu_count() or 1)
        index = faiss.IndexHNSWFlat(dim, api.hnsw_m, faiss.METRIC_INNER_PRODUCT)
        index.hnsw.efConstruction = api.ef_construction
        index.hnsw.efSearch = api.ef_search
        index.add(vectors)
        faiss.write_index(index, str(tmpdir / "v.index"))
        print(f"HNSW build: {time.perf_counter() - t0:.1f} s")

        # Reference: raw FAISS, one query at a time, same candidates the API fetches.
        faiss.omp_set_num_threads(api.faiss_threads)
        qs = queries(2000, seed=2)
        qvecs = embed_texts(qs)
        k = candidate_count(10, api.overfetch, api.min_candidates, api.max_candidates)
        raw = []
        for q in qvecs[:1000]:
            t = time.perf_counter()
            index.search(q[None, :], k)
            raw.append(time.perf_counter() - t)
        embed = []
        for q in qs[:1000]:
            t = time.perf_counter()
            embed_texts([q])
            embed.append(time.perf_counter() - t)
        qmap = dict(zip(ids.tolist(), quality.tolist(), strict=True))
        cands = [(f"doc{i:07d}", float(s)) for i, s in enumerate(rng.random(k))]
        blend_t = []
        for _ in range(1000):
            t = time.perf_counter()
            blend(cands, qmap, Weights(), 10)
            blend_t.append(time.perf_counter() - t)
        del index

        variants = [("service defaults", {})]
        if args.variants:
            variants = [
                ("CPython defaults (GIL switch 5 ms, no gc.freeze)",
                 {"VERDICTFLOW_API_GIL_SWITCH_INTERVAL_MS": "5",
                  "VERDICTFLOW_API_GC_FREEZE": "false"}),
                ("service defaults (GIL switch 0.5 ms, gc.freeze)", {}),
            ]  # fmt: skip
        results = [(label, measure(tmpdir, qs, env, args)) for label, env in variants]

    def ms(v: list[float], q: float) -> str:
        return f"{pct(v, q) * 1000:.3f}"

    for label, (open_loop, server_stats, closed) in results:
        print(f"\n## {label}")
        print(f"open loop: {open_loop['sent']} requests at {args.rate} req/s target "
              f"(achieved {open_loop['achieved_rps']:.1f}), "
              f"errors {open_loop['errors']}")  # fmt: skip
        print("\n| what | p50 ms | p99 ms |")
        print("|---|---|---|")
        for stage, stage_label in (
            ("request", "server: whole /search request (middleware)"),
            ("search", "server: retriever.search (embed+index+blend)"),
            ("embed", "server: query embedding"),
            ("retrieve", "server: index search"),
            ("blend", "server: blend + re-rank"),
        ):
            st = server_stats[stage]
            print(f"| {stage_label} | {st['p50_ms']:.3f} | {st['p99_ms']:.3f} |")
        print(f"| client: loopback round trip incl. queueing | {open_loop['p50_ms']:.3f} | "
              f"{open_loop['p99_ms']:.3f} |")  # fmt: skip
        print(f"| reference: raw FAISS search, k={k}, this process | {ms(raw, 50)} | "
              f"{ms(raw, 99)} |")  # fmt: skip
        print(f"| reference: hashing embed of one query | {ms(embed, 50)} | {ms(embed, 99)} |")
        print(f"| reference: blend() of {k} candidates | {ms(blend_t, 50)} | {ms(blend_t, 99)} |")
        server_p50 = server_stats["request"]["p50_ms"] / 1000
        print(f"\nratio server request p50 / raw FAISS p50: {server_p50 / pct(raw, 50):.2f}")
        print(f"closed loop, {args.concurrency} connections, {args.duration} s: "
              f"{closed['rps']:.0f} req/s ({closed['requests']} requests)")  # fmt: skip


def measure(
    tmpdir: Path, qs: list[str], env: dict[str, str], args: argparse.Namespace
) -> tuple[dict[str, float], dict[str, Any], dict[str, float]]:
    """Start the API with ``env`` added, warm it up, run the open then the closed loop."""
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    cmd = [sys.executable, "-m", "verdictflow", "api", "--port", str(port), "--log-level",
           "warning", "--npz", str(tmpdir / "v.npz"), "--quality", str(tmpdir / "q.npz"),
           "--index", str(tmpdir / "v.index")]  # fmt: skip
    server = subprocess.Popen(cmd, env={**os.environ, **env})
    try:
        _wait_ready(url, server)
        with httpx.Client(base_url=url) as c:  # warm-up, then clear the server's samples
            for q in qs[:200]:
                c.post("/search", json={"q": q, "top_k": 10})
            c.get("/stats/latency", params={"reset": "true"})
        open_loop = run_load(url, "open", args)
        server_stats = httpx.get(f"{url}/stats/latency", params={"reset": "true"}).json()
        closed = run_load(url, "closed", args)
    finally:
        server.terminate()
        server.wait(30)
    return open_loop, server_stats, closed


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_ready(url: str, server: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise SystemExit("api exited during start-up")
        try:
            if httpx.get(f"{url}/healthz").status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.5)
    raise SystemExit("api not ready in 600 s")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--rate", type=float, default=200.0)
    parser.add_argument("--duration", type=float, default=20.0)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--load-phase", choices=("open", "closed"))
    parser.add_argument("--url")
    parser.add_argument(
        "--variants",
        action="store_true",
        help="also measure the service under CPython's defaults (GIL switch 5 ms, no gc.freeze)",
    )
    ns = parser.parse_args()
    if ns.load_phase:
        load_main(ns)
    else:
        main(ns)
