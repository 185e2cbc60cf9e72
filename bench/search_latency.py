"""/search latency at 100k documents x 384-d, next to raw FAISS search in the same run.

1. Builds a corpus of N seeded random unit vectors (+ texts and a quality row per document),
   an HNSW index over them (the API's own parameters), and writes the artifacts.
2. Starts ``verdictflow api --npz ... --quality ... --index ...`` (uvicorn, loopback).
3. Reference, in this process: raw ``index.search`` of the same query vectors for the same
   number of candidates the API fetches (what a hand-written FAISS endpoint would do per query).
4. A load generator in a separate process sends POST /search open-loop at ``--rate`` req/s for
   ``--duration`` s (client-side latency from the scheduled send time, so queueing counts), then
   closed loops with ``--concurrency`` connections to find the throughput ceiling: every
   service started stays up, and their closed loops take turns (``--closed-rounds`` rounds of
   ``--duration / 2`` s each, the median reported), so a drift in the VM's speed hits all alike.
5. Server-side percentiles come from the app's own timing (middleware + stage timers, exact
   samples at ``GET /stats/latency``): whole request, embed, index search, blend.
6. ``--embedder sentence-transformers``: the server embeds each query with MiniLM (ONNX
   Runtime), the queries are SciFact's claims and titles (real, 6,292 distinct texts; the
   query-vector cache is off for this mix, since the closed loops come back to texts the open
   loop sent) when ``../shared/data`` is there; the raw-embedding reference is timed here.
   The service runs twice on the same artifacts: with its defaults (int8 query encoder,
   micro-batching off) and as the **baseline** (fp32, one query per forward pass: the service
   before issue 32), so ``closed_loop_rps / baseline_closed_loop_rps`` is a same-run ratio.
   ``--json`` ends the output with one JSON line of the headline figures. The service sheds
   load past ``max_waiting_searches`` (503 ``overloaded``, counted per kind in ``refused``;
   ``answered_rps`` counts the 200s); the server's percentiles time answered searches only.
   The baseline runs without the bound, as before issue 32.
7. The load generator is raw HTTP/1.1 over asyncio streams (pre-encoded requests, keep-alive);
   its CPU is reported, since it shares the 2 cores with the server (10-17 % of one core at
   200 req/s; an httpx client took 87 %). Debian's compiled ``hey`` was tried and dropped: its
   ``-q`` limit is per worker and the workers tick together, so 20 workers send bursts of 20
   (measured: server-side p50 31 ms on a 2,000-document flat index whose search takes 2 ms).

    python bench/search_latency.py [--n 100000] [--rate 200] [--duration 20] [--variants]
        [--embedder hashing|sentence-transformers] [--queries words|distinct|zipf] [--json]
        [--encoders] [--closed-rounds 4]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import socket
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import faiss
import httpx
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import machine

from verdictflow.embedders import EMBEDDER_NAMES, make_embedder
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


SCIFACT_QUERIES = Path(__file__).resolve().parents[2] / "shared/data/scifact_beir/queries.jsonl"


def queries(n: int, seed: int, mix: str = "words") -> list[str]:
    """The measured queries, in sending order.

    ``words``: 3-8 random words from a small vocabulary (the hashing runs).
    ``distinct``: SciFact claims, then SciFact titles: real text, no query sent twice (up to
    6,292), so a query-vector cache never hits. ``zipf``: 2,000 of those texts drawn with
    Zipf-distributed popularity (s = 1, seeded), as search traffic repeats its head queries.
    """
    if mix != "words" and SCIFACT_QUERIES.is_file():
        claims = [json.loads(line)["text"] for line in SCIFACT_QUERIES.read_text().splitlines()]
        titles = [json.loads(line).get("title", "") for line in
                  (SCIFACT_QUERIES.parent / "corpus.jsonl").read_text().splitlines()]  # fmt: skip
        texts = list(dict.fromkeys(t for t in claims + titles if t.strip()))
        if mix == "distinct":
            return [texts[i % len(texts)] for i in range(n)]
        rng = np.random.default_rng(seed)
        ranks = np.arange(1, 2001)
        p = (1.0 / ranks) / (1.0 / ranks).sum()
        return [texts[int(i)] for i in rng.choice(2000, size=n, p=p)]
    rng = np.random.default_rng(seed)
    return [" ".join(rng.choice(list(WORDS), size=rng.integers(3, 9))) for _ in range(n)]


def pct(values: list[float] | np.ndarray, q: float) -> float:
    return float(np.percentile(np.asarray(values), q))


# -- load generator (runs in its own process) -----------------------------------------------
# Raw HTTP/1.1 over asyncio streams with keep-alive connections and pre-encoded requests:
# an httpx client cost 87 % of a core at 200 req/s, starving the server it measured.
def _request(host: str, q: str) -> bytes:
    body = json.dumps({"q": q, "top_k": 10}).encode()
    head = (f"POST /search HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n\r\n")  # fmt: skip
    return head.encode() + body


Conn = tuple[asyncio.StreamReader, asyncio.StreamWriter]


async def _exchange(conn: Conn, request: bytes) -> int:
    """Send one request, read its whole response; the status code."""
    reader, writer = conn
    writer.write(request)
    status = int((await reader.readline()).split()[1])
    length = 0
    while (line := await reader.readline()) not in (b"\r\n", b""):
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":")[1])
    await reader.readexactly(length)
    return status


async def _open_loop(url: str, qs: list[str], rate: float, duration: float) -> dict[str, float]:
    host, port = url.removeprefix("http://").split(":")
    total = int(rate * duration)
    requests = [_request(host, qs[i % len(qs)]) for i in range(total)]
    idle: list[Conn] = []
    lat: list[float] = []
    errors = 0
    start = time.perf_counter() + 0.2

    kinds: dict[str, int] = {}

    async def one(i: int) -> None:
        nonlocal errors
        at = start + i / rate
        await asyncio.sleep(max(0.0, at - time.perf_counter()))
        reused = bool(idle)
        conn = idle.pop() if idle else await asyncio.open_connection(host, int(port))
        try:
            try:
                status = await _exchange(conn, requests[i])
            except (OSError, asyncio.IncompleteReadError, IndexError):
                if not reused:
                    raise
                # The server closed an idle keep-alive connection (uvicorn: after 5 s): resend
                # once on a new one, as an HTTP client does for an idempotent request.
                conn[1].close()
                conn = await asyncio.open_connection(host, int(port))
                status = await _exchange(conn, requests[i])
            if status != 200:
                errors += 1
                kinds[f"http {status}"] = kinds.get(f"http {status}", 0) + 1
            idle.append(conn)
        except (OSError, asyncio.IncompleteReadError, ValueError, IndexError) as exc:
            errors += 1
            kinds[type(exc).__name__] = kinds.get(type(exc).__name__, 0) + 1
        lat.append(time.perf_counter() - at)

    await asyncio.gather(*(one(i) for i in range(total)))
    elapsed = time.perf_counter() - start
    for _, writer in idle:
        writer.close()
    ms = np.asarray(lat) * 1000
    return {
        "sent": total,
        "errors": errors,
        "achieved_rps": total / elapsed,
        "answered_rps": (total - errors) / elapsed,
        "p50_ms": pct(ms, 50),
        "p99_ms": pct(ms, 99),
        "error_kinds": kinds,  # type: ignore[dict-item]
    }


async def _closed_loop(url: str, qs: list[str], conc: int, duration: float) -> dict[str, float]:
    host, port = url.removeprefix("http://").split(":")
    done = 0
    end = time.perf_counter() + duration

    async def worker(w: int) -> None:
        nonlocal done
        conn = await asyncio.open_connection(host, int(port))
        i = w
        while time.perf_counter() < end:
            await _exchange(conn, _request(host, qs[i % len(qs)]))
            done += 1
            i += conc
        conn[1].close()

    t0 = time.perf_counter()
    await asyncio.gather(*(worker(w) for w in range(conc)))
    return {"requests": done, "rps": done / (time.perf_counter() - t0)}


def load_main(args: argparse.Namespace) -> None:
    qs = queries(int(args.rate * args.duration) + 1, seed=2, mix=args.queries)
    phase = args.load_phase
    if phase == "open":
        out = asyncio.run(_open_loop(args.url, qs, args.rate, args.duration))
    else:  # the queries after the open loop's: a cache holds what the open loop sent
        sent = int(args.rate * args.duration)
        later = queries(sent + int(300 * args.duration), seed=3, mix=args.queries)[sent:]
        out = asyncio.run(_closed_loop(args.url, later, args.concurrency, args.duration))
    print(json.dumps(out))


def run_load(url: str, phase: str, args: argparse.Namespace) -> dict[str, float]:
    cmd = [sys.executable, __file__, "--load-phase", phase, "--url", url]
    cmd += ["--rate", str(args.rate), "--duration", str(args.duration)]
    cmd += ["--concurrency", str(args.concurrency), "--embedder", args.embedder]
    cmd += ["--queries", args.queries]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    out = subprocess.run(cmd, capture_output=True, text=True, check=True, timeout=600)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    result: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    result["loadgen_cpu_share"] = cpu / wall  # of one core, start-up included
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
        qs = queries(int(args.rate * args.duration) + 1, seed=2, mix=args.queries)
        embedder = make_embedder(args.embedder, dim, threads=1)
        cache = "off" if args.queries == "distinct" else f"{api.query_cache:,} entries"
        print(f"embedder: {embedder.version}; queries ({args.queries}): {len(qs)} sent, "
              f"{len(set(qs))} distinct, {np.mean([len(q.split()) for q in qs]):.1f} words "
              f"on average; server query cache {cache}")  # fmt: skip
        n_ref = 1000 if args.embedder == "hashing" else 300
        qvecs = embedder.embed(qs[:n_ref])
        k = candidate_count(10, api.overfetch, api.min_candidates, api.max_candidates)
        raw = []
        for q in qvecs[:1000]:
            t = time.perf_counter()
            index.search(q[None, :], k)
            raw.append(time.perf_counter() - t)
        embed = []
        for q in qs[:n_ref]:
            t = time.perf_counter()
            embedder.embed([q])
            embed.append(time.perf_counter() - t)
        library = []  # the library's own call on the same model: the raw-embedding reference
        st_model = getattr(embedder, "_model", None)
        for q in qs[:n_ref] if st_model is not None else []:
            t = time.perf_counter()
            st_model.encode([q], normalize_embeddings=True, show_progress_bar=False)
            library.append(time.perf_counter() - t)
        qmap = dict(zip(ids.tolist(), quality.tolist(), strict=True))
        cands = [(f"doc{i:07d}", float(s)) for i, s in enumerate(rng.random(k))]
        blend_t = []
        for _ in range(1000):
            t = time.perf_counter()
            blend(cands, qmap, Weights(), 10)
            blend_t.append(time.perf_counter() - t)
        del index

        base_env = {"VERDICTFLOW_API_EMBEDDER": args.embedder}
        if args.queries == "distinct":
            # 6,292 distinct texts: the closed loops come back to texts the open loop sent, and
            # a cache hit would skip the embedding the runs are there to measure
            base_env["VERDICTFLOW_API_QUERY_CACHE"] = "0"
        variants = [
            ("service defaults", base_env),
            # the service before issue 32: no load shedding either (it never sheds in the
            # closed loops, 8 connections; in the open loop past capacity it queues)
            ("baseline: fp32 query encoder, one query per pass",
             {**base_env, "VERDICTFLOW_API_QUERY_ENCODER": "fp32",
              "VERDICTFLOW_API_QUERY_BATCH_MAX": "1",
              "VERDICTFLOW_API_MAX_WAITING_SEARCHES": "0"}),
        ]  # fmt: skip
        if args.encoders:  # when each query-encoder option pays off (docs/scaling.md)
            variants += [
                ("int8 query encoder, micro-batching (16), 2 passes at once",
                 {**base_env, "VERDICTFLOW_API_QUERY_BATCH_MAX": "16"}),
                ("fp32 query encoder, micro-batching (16), 2 passes at once",
                 {**base_env, "VERDICTFLOW_API_QUERY_ENCODER": "fp32",
                  "VERDICTFLOW_API_QUERY_BATCH_MAX": "16"}),
                ("int8 query encoder, micro-batching (16), one pass at a time",
                 {**base_env, "VERDICTFLOW_API_QUERY_BATCH_MAX": "16",
                  "VERDICTFLOW_API_QUERY_BATCH_WORKERS": "1"}),
            ]  # fmt: skip
        if args.variants:
            variants = [
                ("CPython defaults (GIL switch 5 ms, no gc.freeze)",
                 {"VERDICTFLOW_API_GIL_SWITCH_INTERVAL_MS": "5",
                  "VERDICTFLOW_API_GC_FREEZE": "false", "VERDICTFLOW_API_EMBEDDER": args.embedder}),
                ("service defaults (GIL switch 0.5 ms, gc.freeze)",
                 {"VERDICTFLOW_API_EMBEDDER": args.embedder}),
            ]  # fmt: skip
        with ExitStack() as servers:
            measured = [(label, measure(servers, tmpdir, qs, env, args)) for label, env in variants]
            closed_rounds = interleaved_closed_loops(
                [(url, pid) for _, (url, pid, _, _) in measured], args
            )
        results = [
            (label, (open_loop, stats, rounds))
            for (label, (_, _, open_loop, stats)), rounds in zip(
                measured, closed_rounds, strict=True
            )
        ]

    def ms(v: list[float], q: float) -> str:
        return f"{pct(v, q) * 1000:.3f}"

    for label, (open_loop, server_stats, closed) in results:
        print(f"\n## {label}")
        print(f"open loop: {open_loop['sent']} requests at {args.rate} req/s target "
              f"(achieved {open_loop['achieved_rps']:.1f}), "
              f"errors {open_loop['errors']} {open_loop.get('error_kinds') or ''}; "
              f"load generator (raw asyncio HTTP, own process) CPU "
              f"{open_loop['loadgen_cpu_share']:.0%} of one core")  # fmt: skip
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
        print(f"| reference: verdictflow's embed of one query ({args.embedder}), this process | "
              f"{ms(embed, 50)} | {ms(embed, 99)} |")  # fmt: skip
        if library:
            print(f"| reference: raw SentenceTransformer.encode of one query, this process | "
                  f"{ms(library, 50)} | {ms(library, 99)} |")  # fmt: skip
        print(f"| reference: blend() of {k} candidates | {ms(blend_t, 50)} | {ms(blend_t, 99)} |")
        server_p50 = server_stats["request"]["p50_ms"] / 1000
        print(f"\nratio server request p50 / raw FAISS p50: {server_p50 / pct(raw, 50):.2f}")
        print(f"server query cache after the open loop: {server_stats['query_cache']}")
        print(f"server query encoder: {server_stats['query_encoder']}; micro-batches in the open "
              f"loop: {server_stats['query_batches']}")  # fmt: skip
        print(f"closed loop, {args.concurrency} connections, median of {len(closed['rounds'])} "
              f"interleaved rounds of {args.duration / 2:g} s: {closed['rps']:.0f} req/s "
              f"(rounds: {', '.join(f'{r:.0f}' for r in closed['rounds'])}); server CPU per "
              f"request: event loop {closed['cpu_ms_per_request']['event_loop']} ms, other "
              f"threads {closed['cpu_ms_per_request']['other_threads']} ms")  # fmt: skip
    by_label = dict(results)
    service = by_label.get("service defaults")
    baseline = by_label.get("baseline: fp32 query encoder, one query per pass")
    if service is not None and baseline is not None:
        ratio = service[2]["rps"] / baseline[2]["rps"]
        print(f"\nclosed loop, service defaults / baseline (same run): {ratio:.2f}x")
        if args.json:
            open_loop, stats, closed = service
            print(json.dumps({
                "achieved_rps": round(open_loop["achieved_rps"], 1),
                # answered with 200; the others were refused (503 overloaded: load shedding)
                "answered_rps": round(open_loop["answered_rps"], 1),
                "refused": open_loop.get("error_kinds") or {},
                "server_p50_ms": round(stats["request"]["p50_ms"], 3),
                "server_p99_ms": round(stats["request"]["p99_ms"], 3),
                "closed_loop_rps": round(closed["rps"], 1),
                "baseline_closed_loop_rps": round(baseline[2]["rps"], 1),
                "baseline_server_p99_ms": round(baseline[1]["request"]["p99_ms"], 3),
                "server_cpu_ms_per_request": service[2]["cpu_ms_per_request"],
                "baseline_server_cpu_ms_per_request": baseline[2]["cpu_ms_per_request"],
                "n": args.n, "rate": args.rate, "embedder": args.embedder,
                "queries": args.queries,
            }))  # fmt: skip


def measure(
    servers: ExitStack, tmpdir: Path, qs: list[str], env: dict[str, str], args: argparse.Namespace
) -> tuple[str, int, dict[str, float], dict[str, Any]]:
    """Start the API with ``env`` added (stopped when ``servers`` closes), warm it up, run the
    open loop; its URL and pid, the open loop's figures and the server's own percentiles."""
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    cmd = [sys.executable, "-m", "verdictflow", "api", "--port", str(port), "--log-level",
           "warning", "--npz", str(tmpdir / "v.npz"), "--quality", str(tmpdir / "q.npz"),
           "--index", str(tmpdir / "v.index")]  # fmt: skip
    server = subprocess.Popen(cmd, env={**os.environ, **env})
    servers.callback(_stop, server)
    _wait_ready(url, server)
    with httpx.Client(base_url=url) as c:  # warm-up, then clear the server's samples
        for i in range(200):  # texts the measured mix never sends
            c.post("/search", json={"q": f"warm-up query {i} about cells", "top_k": 10})
        c.get("/stats/latency", params={"reset": "true"})
    open_loop = run_load(url, "open", args)
    health = httpx.get(f"{url}/healthz").json()  # before the reset clears the batch counts
    server_stats = httpx.get(f"{url}/stats/latency", params={"reset": "true"}).json()
    server_stats["query_cache"] = health["query_cache"]
    server_stats["query_encoder"] = health.get("query_encoder")
    server_stats["query_batches"] = health.get("query_batches")
    return url, server.pid, open_loop, server_stats


def interleaved_closed_loops(
    servers: list[tuple[str, int]], args: argparse.Namespace
) -> list[dict[str, Any]]:
    """Each service's closed-loop throughput: the median of ``args.closed_rounds`` rounds of
    ``duration / 2`` s, the services taking turns (A B C A B C ...), and its CPU per request
    by thread (``/proc``: the event loop is the main thread, the rest are search threads).
    This VM's speed drifts by 10-15 % between minutes (one configuration measured 158-195
    req/s in one run), so services measured one after the other would compare the minutes."""
    half = argparse.Namespace(**{**vars(args), "duration": args.duration / 2})
    rounds: list[list[float]] = [[] for _ in servers]
    cpu = [{"loop": 0.0, "other": 0.0, "requests": 0} for _ in servers]
    for _ in range(args.closed_rounds):
        for i, (url, pid) in enumerate(servers):
            before = _thread_cpu(pid)
            result = run_load(url, "closed", half)
            after = _thread_cpu(pid)
            rounds[i].append(result["rps"])
            for tid, seconds in after.items():
                spent = seconds - before.get(tid, 0.0)
                cpu[i]["loop" if tid == pid else "other"] += spent
            cpu[i]["requests"] += int(result["requests"])
    out = []
    for r, c in zip(rounds, cpu, strict=True):
        per = 1000 / max(int(c["requests"]), 1)
        ms = {"event_loop": round(c["loop"] * per, 2), "other_threads": round(c["other"] * per, 2)}
        out.append({"rps": float(np.median(r)), "rounds": r, "cpu_ms_per_request": ms})
    return out


def _thread_cpu(pid: int) -> dict[int, float]:
    """CPU seconds (user + system) of each thread of ``pid`` (Linux ``/proc``; empty elsewhere)."""
    ticks = os.sysconf("SC_CLK_TCK")
    out: dict[int, float] = {}
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tids:
        try:
            fields = Path(f"/proc/{pid}/task/{tid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        out[int(tid)] = (int(fields[11]) + int(fields[12])) / ticks
    return out


def _stop(server: subprocess.Popen[bytes]) -> None:
    server.terminate()
    server.wait(30)


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
    parser.add_argument(
        "--closed-rounds", type=int, default=4, help="interleaved closed-loop rounds per service"
    )
    parser.add_argument("--load-phase", choices=("open", "closed"))
    parser.add_argument("--url")
    parser.add_argument("--embedder", choices=EMBEDDER_NAMES, default="hashing")
    parser.add_argument(
        "--queries", choices=("words", "distinct", "zipf"), default="words",
        help="query mix (see queries()); distinct and zipf need ../shared/data",
    )  # fmt: skip
    parser.add_argument("--json", action="store_true", help="end with one JSON line of figures")
    parser.add_argument(
        "--encoders", action="store_true", help="also measure the other query-encoder options"
    )
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
