"""The inline gate's latency: ``POST /v1/check`` of ``verdictflow ingest`` at a steady request
rate, end to end (client send to reply read), next to a bare FastAPI endpoint that parses the
same body and answers at once (``bench/_bare_check.py``, same guard and uvicorn settings), in
the same run, rounds alternating between the two.

Traffic: answers of ~1 KB with ~4 KB of contexts, built from ``../shared/data/scifact_beir``
abstracts (the answer: sentences of one abstract, a third with one number or name swapped for
another abstract's; the contexts: that abstract and others up to ~4 KB; the query: the title),
seeded. The gate produces each event to ``answers`` on an embedded broker (acks=all) before it
replies, as it does by default. Open loop: request ``i`` is sent at ``start + i / rate`` whatever
the replies do, and its latency counts from that moment (no coordinated omission).

1. lexical kinds (the default) at ``--rate`` (200/s), p50 and p99, and the bare endpoint's;
2. every per-answer kind (lexical and NLP, ``kinds=all``) at ``--nlp-rate`` (20/s), p50, p99,
   and how many NLP verdicts DEFERred ``gate_timeout`` (``timeout_ms`` = ``--nlp-timeout-ms``).

    python bench/gate_latency.py [--rate 200] [--seconds 10] [--rounds 2] [--json]

With ``--json`` the last line is one JSON object: ``rate``, ``p50_ms``, ``p99_ms``,
``bare_p50_ms``, ``bare_p99_ms``, ``errors``, the NLP figures and the machine.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp
import orjson
from harness import fresh_settings, machine
from rag_nlp_tier import _SENTENCE_END, swap_detail

from verdictflow.dev_servers import free_port, start_server, stop_server
from verdictflow.streams.admin import ensure_topics
from verdictflow.streams.broker import EmbeddedBroker

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT.parent / "shared" / "data"


def gate_events(n: int, seed: int = 11) -> list[bytes]:
    """``n`` answer events (JSON bytes): ~1 KB answers, ~4 KB of contexts."""
    rng = random.Random(seed)
    docs = []
    with (DATA / "scifact_beir" / "corpus.jsonl").open("rb") as rows:
        for line in rows:
            row = orjson.loads(line)
            if 1200 <= len(row["text"]) <= 2500:
                docs.append((row["title"], row["text"]))
    pool = rng.sample(docs, 400)
    out = []
    for i in range(n):
        (title, source), *others = rng.sample(pool, 4)
        sentences = _SENTENCE_END.split(source)
        answer = ""
        for sentence in sentences[rng.randrange(max(1, len(sentences) - 4)) :]:
            if answer and len(answer) + len(sentence) > 1000:
                break
            answer = f"{answer} {sentence}".strip()
        if i % 3 == 2:
            answer = swap_detail(answer, others[0][1], rng)
        contexts = [source]
        for _, text in others:
            if sum(map(len, contexts)) >= 4000:
                break
            contexts.append(text)
        rng.shuffle(contexts)
        event = {"id": f"gate-{seed}-{i}", "query": f"What is known about {title.rstrip('.')}?",
                 "answer": answer, "contexts": contexts}  # fmt: skip
        out.append(orjson.dumps(event))
    return out


def quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


async def open_loop(url: str, bodies: list[bytes], rate: float) -> dict[str, Any]:
    """POST every body at ``rate``/s, open loop; latencies (ms) from each scheduled send."""
    latencies: list[float] = []
    errors: list[str] = []
    deferred = 0
    connector = aiohttp.TCPConnector(limit=256)
    headers = {"content-type": "application/json"}
    async with aiohttp.ClientSession(connector=connector) as session:

        async def one(at: float, body: bytes) -> None:
            nonlocal deferred
            try:
                async with session.post(url, data=body, headers=headers) as reply:
                    text = await reply.read()
                    if reply.status != 200:
                        errors.append(f"{reply.status} {text[:100]!r}")
                        return
            except aiohttp.ClientError as exc:
                errors.append(repr(exc))
                return
            latencies.append((time.perf_counter() - at) * 1000)
            deferred += text.count(b'"gate_timeout"')

        start = time.perf_counter() + 0.05
        tasks = []
        for i, body in enumerate(bodies):
            at = start + i / rate
            delay = at - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            tasks.append(asyncio.create_task(one(at, body)))
        await asyncio.gather(*tasks)
    return {"latencies": latencies, "errors": errors, "deferred": deferred}


def wait_ready(url: str, timeout: float = 120) -> None:
    import httpx

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{url}/healthz", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise SystemExit(f"{url} did not become ready in {timeout:.0f} s")


def summary(runs: dict[str, Any]) -> dict[str, Any]:
    lat = runs["latencies"]
    return {"p50_ms": round(quantile(lat, 0.5), 2), "p99_ms": round(quantile(lat, 0.99), 2),
            "errors": len(runs["errors"]), "requests": len(lat) + len(runs["errors"])}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rate", type=float, default=200)
    parser.add_argument("--seconds", type=float, default=10, help="per round and system")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--nlp-rates", default="5,20", help="comma-separated requests/s")
    parser.add_argument("--nlp-seconds", type=float, default=15)
    parser.add_argument("--nlp-timeout-ms", type=int, default=5000)
    parser.add_argument("--json", action="store_true", help="last line: one JSON object")
    args = parser.parse_args()
    per_round = int(args.rate * args.seconds)
    nlp_rates = [float(r) for r in args.nlp_rates.split(",")]
    nlp_total = sum(int(r * args.nlp_seconds) for r in nlp_rates)
    bodies = gate_events(per_round * args.rounds * 3 + nlp_total + 60)
    load_before = os.getloadavg()[0]
    systems = {"bare": "", "ack": "", "async": "?queue=async"}
    runs: dict[str, dict[str, Any]] = {name: {"latencies": [], "errors": []} for name in systems}
    nlp_runs = []
    with tempfile.TemporaryDirectory() as tmp, EmbeddedBroker(log_path=Path(tmp) / "b.log") as b:
        settings = fresh_settings(b.url, Path(tmp), "embedded", 4)
        asyncio.run(ensure_topics(settings))
        env = {**os.environ, "VERDICTFLOW_TOPIC_PREFIX": settings.topic_prefix}
        gate, gate_url = start_server(["ingest", "--broker", b.url], env, Path(tmp) / "ingest.log")
        port = free_port()
        bare = subprocess.Popen(
            [sys.executable, str(ROOT / "bench" / "_bare_check.py"), "--port", str(port)],
            stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT,
        )  # fmt: skip
        bare_url = f"http://127.0.0.1:{port}"
        urls = {"bare": bare_url, "ack": gate_url, "async": gate_url}
        try:
            wait_ready(gate_url)
            wait_ready(bare_url)
            used = 0

            def take(n: int) -> list[bytes]:
                nonlocal used
                used += n
                return bodies[used - n : used]

            warm = take(50)
            asyncio.run(open_loop(f"{bare_url}/v1/check", warm, 100))
            asyncio.run(open_loop(f"{gate_url}/v1/check", warm, 100))  # same ids: idempotent
            asyncio.run(open_loop(f"{gate_url}/v1/check?kinds=all&timeout_ms=60000", take(5), 1))
            for _ in range(args.rounds):  # alternating, so drift of the VM hits all alike
                for name, query in systems.items():
                    url = f"{urls[name]}/v1/check{query}"
                    got = asyncio.run(open_loop(url, take(per_round), args.rate))
                    runs[name]["latencies"] += got["latencies"]
                    runs[name]["errors"] += got["errors"]
            for rate in nlp_rates:
                url = f"{gate_url}/v1/check?kinds=all&timeout_ms={args.nlp_timeout_ms}"
                got = asyncio.run(open_loop(url, take(int(rate * args.nlp_seconds)), rate))
                nlp_runs.append({"rate": rate, **summary(got), "gate_timeouts": got["deferred"]})
        finally:
            stop_server(gate)
            bare.terminate()
            bare.wait(15)
    ack, bare_s, async_s = summary(runs["ack"]), summary(runs["bare"]), summary(runs["async"])
    result = {
        "rate": args.rate,
        "requests": ack["requests"],
        "p50_ms": ack["p50_ms"],
        "p99_ms": ack["p99_ms"],
        "bare_p50_ms": bare_s["p50_ms"],
        "bare_p99_ms": bare_s["p99_ms"],
        "errors": ack["errors"],
        "bare_errors": bare_s["errors"],
        "async_p50_ms": async_s["p50_ms"],
        "async_p99_ms": async_s["p99_ms"],
        "async_errors": async_s["errors"],
        "nlp": nlp_runs,
        "nlp_timeout_ms": args.nlp_timeout_ms,
        "load_before": round(load_before, 2),
        "load_after": round(os.getloadavg()[0], 2),
        "machine": machine(),
    }
    print(f"machine: {result['machine']}; load {result['load_before']} -> {result['load_after']}")
    print(f"{'':44} {'p50 ms':>8} {'p99 ms':>8} {'errors':>7}  p99 / bare p99")
    rows = [
        (f"bare endpoint, {args.rate:.0f}/s", bare_s),
        (f"gate, lexical kinds, {args.rate:.0f}/s (ack)", ack),
        (f"gate, lexical kinds, {args.rate:.0f}/s (queue=async)", async_s),
    ]
    for label, row in rows:
        ratio = row["p99_ms"] / bare_s["p99_ms"] if bare_s["p99_ms"] else float("nan")
        print(f"{label:44} {row['p50_ms']:>8} {row['p99_ms']:>8} {row['errors']:>7}  {ratio:.2f}x")
    for row in nlp_runs:
        label = f"gate, all kinds, {row['rate']:.0f}/s"
        timeouts = f"{row['gate_timeouts']} NLP verdicts gate_timeout ({args.nlp_timeout_ms} ms)"
        print(f"{label:44} {row['p50_ms']:>8} {row['p99_ms']:>8} {row['errors']:>7}  {timeouts}")
    for name in runs:
        for sample in runs[name]["errors"][:2]:
            print(f"  {name} error: {sample}")
    if args.json:
        print(orjson.dumps(result).decode())


if __name__ == "__main__":
    main()
