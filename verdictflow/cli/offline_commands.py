"""Offline commands: the agents' scoring code over files, without a broker (``eval``), the
background statistics it uses (``build-idf``), threshold calibration and the topic schemas."""

from __future__ import annotations

import contextlib
import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import orjson
import typer
from rich.console import Console

from verdictflow.cli.options import EventsFile, IdfStatsOpt, PolicyOpt, err
from verdictflow.evaluators.kinds import BY_NAME
from verdictflow.input_files import event_records, source_name

if TYPE_CHECKING:
    from verdictflow.scoring_jobs.batch.answer_chunks import ChunkScorers
    from verdictflow.scoring_jobs.batch.eval_answers import Output
    from verdictflow.scoring_setup import Scoring
    from verdictflow.settings import Settings

#: Training sets, by name (``scoring_jobs/training/faithfulness_data.LOADERS`` keys, kept here
#: so the help text does not import the loaders).
FAITHFULNESS_SETS = (
    "summedits-news",
    "summedits-podcast",
    "summedits-samsum",
    "summedits-scitldr",
    "halueval-qa",
    "qags-cnndm",
    "qags-xsum",
    "summeval",
    "perturbations-relations",
)


def eval_answers(
    file: Annotated[Path, EventsFile("AnswerEvents")],
    policy: PolicyOpt = None,
    fmt: Annotated[str, typer.Option("--format", help="jsonl (verdicts) or table")] = "jsonl",
    idf_stats: IdfStatsOpt = "default",
    judge: Annotated[
        str | None,
        typer.Option(
            help="local: also the judge tier's verdicts (faithfulness_llm) for what the policy "
            "escalates, by the backend a judge worker would use (the shipped checker unless "
            "VERDICTFLOW_JUDGE_* names another)"
        ),
    ] = None,
    context_store: Annotated[
        bool,
        typer.Option(
            "--context-store/--no-context-store",
            help="read and keep context indexes in the data dir's store "
            "(VERDICTFLOW_DATA_DIR, default .verdictflow; VERDICTFLOW_CONTEXT_STORE_BYTES), as "
            "workers do: contexts indexed by an earlier run or a worker are not indexed again",
        ),
    ] = True,
    jobs: Annotated[
        int,
        typer.Option(
            "--jobs",
            "-j",
            min=0,
            help="processes that score (0: one per core); each loads spaCy (~700 MiB), and the "
            "verdicts are the same for any number",
        ),
    ] = 1,
) -> None:
    """Score answers offline with the agents' code: one verdict per line on stdout,
    dead letters on stderr."""
    from verdictflow.cli.options import build_settings
    from verdictflow.evaluators.policy import load_policy
    from verdictflow.gc_tuning import tune_for_throughput
    from verdictflow.models.codec import DEFAULT_MAX_EVENT_BYTES
    from verdictflow.scoring_jobs.batch.answer_chunks import ChunkScorers
    from verdictflow.scoring_jobs.batch.eval_answers import CHUNK_LINES
    from verdictflow.scoring_setup import ScoringRecipe

    if judge not in (None, "local"):
        raise typer.BadParameter("--judge takes one value: local")
    loaded = load_policy(policy)
    settings = build_settings()
    recipe = ScoringRecipe(
        loaded, idf_stats, data_dir=settings.data_dir if context_store else None,
        store_bytes=settings.context_store_bytes,
    )  # fmt: skip
    lines = event_records(file)
    total = sum(1 for line in lines if line.strip())  # the answers: blank lines are skipped
    chunks = -(-total // CHUNK_LINES)
    jobs = min(jobs or len(os.sched_getaffinity(0)), max(1, chunks))  # no idle process
    processes = (
        ChunkScorers(
            recipe, jobs, max_bytes=DEFAULT_MAX_EVENT_BYTES, vocab_limit=settings.spacy_vocab_limit
        )
        if jobs > 1
        else contextlib.nullcontext()
    )  # started first: their start-up overlaps this process's
    with processes as scorers:
        # a bad --idf-stats fails here, in this process; with scoring processes this one only
        # closes consistency groups, so it imports nothing for the lexical kinds
        scoring = recipe.load(warm_up=scorers is None)
        tune_for_throughput()  # a long batch job: its collector as a worker's (gc_tuning.py)
        outputs = _scored_with_progress(lines, total, scoring, scorers, source_name(file), settings)
    verdicts = [o.verdict for o in outputs if o.verdict is not None]
    dead_letters = [o.dead_letter for o in outputs if o.dead_letter is not None]
    if judge == "local":
        from verdictflow.judge_tier.factory import make_client
        from verdictflow.scoring_jobs.batch.eval_judge import judge_verdicts
        from verdictflow.settings import JudgeSettings

        client = make_client(JudgeSettings(), loaded.judge_tier)
        judged = judge_verdicts(lines, verdicts, loaded, client, source_name(file))
        verdicts += judged.verdicts
        dead_letters += judged.dead_letters
    for letter in dead_letters:
        sys.stderr.write(letter.model_dump_json() + "\n")
    if fmt == "table":
        from verdictflow.scoring_jobs.batch.render import verdict_table

        Console().print(verdict_table(verdicts))
    else:
        for v in verdicts:
            sys.stdout.buffer.write(orjson.dumps(v.model_dump(mode="json")) + b"\n")


def _scored_with_progress(
    lines: list[bytes],
    total: int,
    scoring: Scoring,
    scorers: ChunkScorers | None,
    source: str,
    settings: Settings,
) -> list[Output]:
    """``evaluate_answers``' outputs, with a progress bar over the ``total`` answers on a
    terminal's stderr."""
    from rich.progress import Progress

    from verdictflow.scoring_jobs.batch.eval_answers import evaluate_answers

    jobs = scorers.jobs if scorers is not None else 1
    # off a terminal rich still ends a live display with a newline: a blank line among the
    # dead letters (JSON lines) on stderr
    with Progress(console=err, transient=True, disable=not err.is_terminal) as bar:
        task = bar.add_task(f"scoring answers ({jobs} process{'es' * (jobs > 1)})", total=total)
        scored = evaluate_answers(
            lines, scoring, source=source, vocab_limit=settings.spacy_vocab_limit,
            processes=scorers, scored=lambda n: bar.advance(task, n),
        )  # fmt: skip
        return list(scored)


def index_contexts(
    file: Annotated[Path, EventsFile("passages (strings, objects with text, or answer events)")],
    policy: PolicyOpt = None,
) -> None:
    """Index passages into the data dir's context store (VERDICTFLOW_DATA_DIR, default
    .verdictflow) before answers cite them, as workers and ``eval answers`` keep them: those
    with the same data dir and policy read them back instead of indexing them. Exit code 1 when
    an item had no passage (reported on stderr), 2 when the store is off or cannot be opened."""
    from rich.progress import Progress

    from verdictflow.cli.options import build_settings
    from verdictflow.cli.progress_lines import ProgressLines
    from verdictflow.context_store import ContextStore
    from verdictflow.evaluators.policy import load_policy
    from verdictflow.scoring_jobs.batch.index_contexts import index_passages, read_passages
    from verdictflow.scoring_setup import load_scoring

    settings = build_settings()
    scoring = load_scoring(
        load_policy(policy), "none", data_dir=settings.data_dir,
        store_bytes=settings.context_store_bytes, warm_up=False,
    )  # fmt: skip
    store = scoring.analyzer.store
    if not isinstance(store, ContextStore) or not store.available:
        _say(f"no context store to fill under {settings.data_dir} (off when "
             "VERDICTFLOW_CONTEXT_STORE_BYTES=0; else see the warning above)")  # fmt: skip
        raise typer.Exit(2)
    passages = read_passages(event_records(file))
    for number in passages.bad_records:
        _say(f"{source_name(file)}:{number}: not a passage, a context or an answer event")
    total = len(passages.texts)
    started = time.perf_counter()
    lines = ProgressLines(err, "index-contexts passages")  # stderr to a file: lines, not a bar
    indexed = 0
    with Progress(console=err, transient=True, disable=not err.is_terminal) as bar:
        task = bar.add_task("indexing contexts", total=total)

        def done(n: int) -> None:
            nonlocal indexed
            indexed += n
            bar.advance(task, n)
            lines.update(indexed, total)

        built = index_passages(
            scoring.analyzer, passages.texts, vocab_limit=settings.spacy_vocab_limit, done=done
        )
    _say(
        f"{total:,} distinct passages: {built:,} indexed, {total - built:,} already stored, in "
        f"{time.perf_counter() - started:.1f} s; the store {store.path} holds "
        f"{store.stored_bytes / 2**20:.1f} MiB of at most {store.max_bytes / 2**20:.1f} MiB"
    )
    if store.evictions:
        _say(
            f"the store was full: the oldest indexes were dropped {store.evictions:,} times to "
            "stay within VERDICTFLOW_CONTEXT_STORE_BYTES; raise it to keep the whole corpus"
        )
    if passages.bad_records:
        raise typer.Exit(1)


def _say(text: str) -> None:
    """One plain line on stderr, however long (no wrapping; no markup read in a path)."""
    err.print(text, soft_wrap=True, markup=False, highlight=False)


def eval_summaries(
    file: Annotated[Path, EventsFile("SummaryEvents")],
    judge: Annotated[
        str | None, typer.Option(help="twin_lock, judge_lock or both (default: each event's)")
    ] = None,
    fmt: Annotated[str, typer.Option("--format", help="jsonl (verdicts) or table")] = "jsonl",
    policy: PolicyOpt = None,
    idf_stats: Annotated[
        str,
        typer.Option(
            "--idf-stats",
            help="The worker's --idf-stats (a build-idf file, default or none): faithfulness "
            "verdicts carry its digest in config_digest",
        ),
    ] = "default",
) -> None:
    """Judge summaries offline with the agent's code (Twin-Lock / Judge-Lock, then
    faithfulness unless the policy's faithfulness.summaries is false): one verdict per line on
    stdout, dead letters on stderr."""
    from verdictflow.evaluators.policy import load_policy
    from verdictflow.scoring_jobs.batch.eval_summaries import run_cli

    run_cli(file, judge, fmt, err, load_policy(policy), idf_stats)


def build_idf(
    corpus: Annotated[
        list[Path] | None, typer.Argument(help="JSONL (one document per line) or text files")
    ] = None,
    out: Annotated[Path, typer.Option(help="Statistics file to write (.json or .json.gz)")] = Path(
        "background_df.json.gz"
    ),
    min_df: Annotated[int, typer.Option(min=1, help="Drop terms in fewer documents")] = 2,
    field: Annotated[str | None, typer.Option(help="JSONL field holding the text")] = None,
    wordfreq: Annotated[
        bool, typer.Option("--wordfreq", help="From wordfreq's English list (the default)")
    ] = False,
) -> None:
    """Build background document frequencies for relevance's TF-IDF."""
    from verdictflow.idf_stats import write_stats
    from verdictflow.scoring_jobs.batch.build_idf import build_from_corpus, build_from_wordfreq

    if wordfreq == bool(corpus):
        raise typer.BadParameter("give corpus files or --wordfreq (one of them)")
    stats = (
        build_from_wordfreq()
        if wordfreq
        else build_from_corpus(corpus or [], min_df=min_df, field=field)
    )
    write_stats(stats, out)
    Console(stderr=True).print(
        f"{out}: {stats.n_docs} documents, {len(stats.df)} terms, digest {stats.digest[:16]}"
    )


def calibrate(
    golden: Annotated[
        Path | None,
        typer.Argument(
            exists=True, dir_okay=False, help="JSONL: events + label (pass/fail) + group?"
        ),
    ] = None,
    kind: Annotated[
        str | None,
        typer.Option(
            help="A verdict kind of the registry: "
            + ", ".join(BY_NAME)
            + " (with --labels: default every kind labelled)"
        ),
    ] = None,
    labels: Annotated[
        Path | None,
        typer.Option(
            exists=True,
            dir_okay=False,
            help="Fit from people's labels instead: a `verdictflow labels export` file",
        ),
    ] = None,
    per_tenant_min: Annotated[
        int,
        typer.Option(
            min=0,
            help="With --labels: also write one policy per tenant with at least this many "
            "labelled rows of both outcomes (<out>.tenant-<name>.yaml; 0: off)",
        ),
    ] = 0,
    cost_fp: Annotated[float, typer.Option(min=0, help="Cost of passing a fail item")] = 1.0,
    cost_fn: Annotated[float, typer.Option(min=0, help="Cost of failing a pass item")] = 1.0,
    max_fpr: Annotated[
        float | None, typer.Option(min=0, max=1, help="FPR budget, met in every group")
    ] = None,
    margin_quantile: Annotated[
        float, typer.Option(min=0, max=1, help="Spread quantile added as margin")
    ] = 0.95,
    policy: PolicyOpt = None,
    out: Annotated[Path, typer.Option(help="Policy file to write")] = Path("policy.yaml"),
    report: Annotated[
        Path | None, typer.Option(help="Directory for ROC/DET plot and table")
    ] = None,
) -> None:
    """Choose a kind's threshold from a labelled golden set, or from reviewers' labels
    (--labels); write a policy (and a report)."""
    from verdictflow.evaluators.policy import load_policy
    from verdictflow.job_outputs import Outputs, check_outputs
    from verdictflow.scoring_jobs.calibration import calibrate as cal
    from verdictflow.scoring_jobs.calibration import labelled
    from verdictflow.scoring_jobs.calibration.report import report_files

    if (golden is None) == (labels is None):
        raise typer.BadParameter("give a golden set file or --labels (one of them)")
    if golden is not None and kind is None:
        raise typer.BadParameter("--kind is needed with a golden set")
    check_outputs([out], [report])  # before any work: a bad path fails now, in one line
    base = load_policy(policy)
    outputs = Outputs()  # the policies and the report: all written, or none

    def fit(golden_set: Any, name: str, start: Any) -> Any:
        return cal.calibrate(
            golden_set, name, start, cost_fp=cost_fp, cost_fn=cost_fn, max_fpr=max_fpr,
            margin_quantile=margin_quantile,
        )  # fmt: skip

    results = []
    if golden is not None:
        assert kind is not None
        results.append(fit(cal.read_golden(golden, kind), kind, base))
        outputs.add(out, cal.policy_yaml(results[-1].policy).encode())
    else:
        assert labels is not None
        rows = labelled.read_items(labels)
        kinds = [kind] if kind else sorted({r.kind for r in rows})
        if not kinds:
            raise typer.BadParameter(f"{labels} holds no labelled rows")
        current = base
        for name in kinds:
            found = labelled.golden_from_items(rows, name)
            result = fit(found.golden, name, current)
            results.append(result)
            current = result.policy
            err.print(
                f"{name}: {len(found.golden.events)} labelled rows"
                + (f", {found.ties} tied rows left out" if found.ties else "")
            )
        outputs.add(out, cal.policy_yaml(current).encode())
        for tenant in (
            labelled.tenants_with(rows, kinds[0], per_tenant_min) if per_tenant_min else []
        ):
            tenant_policy = base
            for name in kinds:
                try:
                    found = labelled.golden_from_items(rows, name, tenant)
                except cal.CalibrationError as exc:
                    err.print(f"tenant {tenant}: {name} kept the shared threshold ({exc})")
                    continue
                tenant_policy = fit(found.golden, name, tenant_policy).policy
            path = out.with_name(f"{out.stem}.tenant-{tenant}{out.suffix}")
            outputs.add(path, cal.policy_yaml(tenant_policy).encode())
    if report is not None:
        for path, data in report_files(results[-1], report):
            outputs.add(path, data)
    written = outputs.commit()
    for result in results:
        rec = result.record
        err.print(
            f"{result.kind}: threshold {rec.threshold:.4f} (raw {rec.raw_threshold:.4f} "
            f"{'-' if rec.direction == 'lower' else '+'} margin {rec.margin:.4f}; "
            f"{'at most' if rec.direction == 'lower' else 'at least'} passes), "
            f"expected TPR {rec.expected_tpr:.4f}, FPR {rec.expected_fpr:.4f}"
            + (f", worst group {rec.worst_group}" if rec.worst_group else "")
        )
    final = results[-1].policy
    err.print(f"policy written to {out} (digest {final.digest()[:16]})")
    for path in written[1:]:
        err.print(f"also written: {path}")


def train_faithfulness(
    data: Annotated[
        Path, typer.Option(file_okay=False, help="The shared data folder (../shared/data)")
    ] = Path("../shared/data"),
    out: Annotated[Path, typer.Option(help="Model file to write")] = Path(
        "faithfulness_model.json"
    ),
    sets: Annotated[
        str | None,
        typer.Option(help="Comma-separated sets (default: all): " + ", ".join(FAITHFULNESS_SETS)),
    ] = None,
    labels: Annotated[
        Path | None,
        typer.Option(
            exists=True,
            dir_okay=False,
            help="Also fit on a team's faithfulness labels (a `verdictflow labels export` "
            "file): one more source, weighted like each data set",
        ),
    ] = None,
) -> None:
    """Fit the faithfulness model on human-labelled data; write its file. Point a policy's
    ``faithfulness.model`` at it (the packaged one is verdictflow/data/faithfulness_model.json)."""
    from verdictflow.scoring_jobs.training.faithfulness_data import load_sets
    from verdictflow.scoring_jobs.training.faithfulness_training import train
    from verdictflow.scoring_jobs.training.labelled_sets import TrainingDataError

    names = tuple(n.strip() for n in sets.split(",")) if sets else FAITHFULNESS_SETS
    unknown = [n for n in names if n not in FAITHFULNESS_SETS]
    if unknown:
        raise typer.BadParameter(
            f"unknown set(s) {', '.join(unknown)}; sets: {', '.join(FAITHFULNESS_SETS)}"
        )
    try:
        labelled = load_sets(data, names)
        if labels is not None:
            from verdictflow.scoring_jobs.calibration.labelled import team_set

            labelled.append(team_set(labels))
    except TrainingDataError as exc:
        err.print(f"[red]error:[/] {exc}")
        raise typer.Exit(2) from None
    model = train(labelled, out)
    err.print(
        f"{out}: {out.stat().st_size} bytes, digest {model.digest[:16]}, threshold "
        f"{model.threshold:.2f}, fitted on {sum(len(s.events) for s in labelled)} rows of "
        f"{len(labelled)} sets"
    )


def schemas(
    out: Annotated[Path, typer.Option("--out", help="Output directory")] = Path("schemas"),
) -> None:
    """Write one JSON Schema per topic value, for consumers in other languages."""
    from verdictflow.scoring_jobs.batch.topic_schemas import write_schemas

    for path in write_schemas(out):
        typer.echo(str(path))


def train_checker(
    data: Annotated[
        Path, typer.Option(file_okay=False, help="The shared data folder (../shared/data)")
    ] = Path("../shared/data"),
    out: Annotated[
        Path,
        typer.Option(file_okay=False, help="Directory for the checker (ONNX, tokenizer, card)"),
    ] = Path("checker"),
    base: Annotated[
        Path | None,
        typer.Option(
            file_okay=False,
            help="Weights to start from (a local Hugging Face directory; default: the installed "
            "all-MiniLM-L6-v2)",
        ),
    ] = None,
    sets: Annotated[
        str | None, typer.Option(help="Comma-separated training sets (default: all but held-out)")
    ] = None,
    epochs: Annotated[int, typer.Option(min=1, max=20)] = 3,
    learning_rate: Annotated[float, typer.Option(min=1e-7, max=1e-2)] = 6e-5,
    batch_size: Annotated[int, typer.Option(min=1, max=1024)] = 16,
    max_length: Annotated[int, typer.Option(min=32, max=512)] = 256,
    limit: Annotated[
        int | None, typer.Option(min=2, help="Use only the first N pairs (a quick trial)")
    ] = None,
    cap_scale: Annotated[
        float,
        typer.Option(min=0.0, help="Multiply every source's cap of pairs (0: no caps; a GPU)"),
    ] = 1.0,
    pairs_out: Annotated[
        Path | None,
        typer.Option(dir_okay=False, help="Write the pairs (JSON lines; .xz compresses) and stop"),
    ] = None,
    pairs_file: Annotated[
        Path | None,
        typer.Option(
            "--pairs",
            exists=True,
            dir_okay=False,
            help="Train on the pairs of this file (from --pairs-out) instead",
        ),
    ] = None,
    weights: Annotated[
        Path | None,
        typer.Option(
            dir_okay=False,
            help="Skip training: export the weights scripts/train_checker_device.py trained "
            "(a .safetensors file or the prefix of its .partN files)",
        ),
    ] = None,
    report: Annotated[
        Path | None,
        typer.Option(
            exists=True,
            dir_okay=False,
            help="With --weights: the runs.json that run wrote, for the model card",
        ),
    ] = None,
    device: Annotated[str, typer.Option(help="auto (a GPU when there is one), cpu or cuda")] = (
        "auto"
    ),
    supported: Annotated[
        float | None,
        typer.Option(
            "--supported-at",
            min=0.0,
            max=1.0,
            help="P from which a claim is supported (default: the one threshold with "
            "the best mean balanced accuracy over the held-out sets, else 0.5)",
        ),
    ] = None,
    seed: int = 13,
    validate: Annotated[bool, typer.Option(help="Score the held-out sets after each epoch")] = True,
) -> None:
    """Fine-tune a claim checker (a cross-encoder) on (chunk, claim) pairs from the labelled
    sets and synthetic pairs; write it as int8 ONNX with its tokenizer and model card. Resumes
    from <out>/checkpoint when one is there."""
    import os
    from dataclasses import asdict

    from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

    from verdictflow.cli.progress_lines import ProgressLines
    from verdictflow.digests import file_digest
    from verdictflow.embedders import packaged_model_dir
    from verdictflow.scoring_jobs.training import checker_data, checker_sets
    from verdictflow.scoring_jobs.training import checker_training as ct
    from verdictflow.scoring_jobs.training.checker_pairs import dump_pairs, read_pairs

    start = base or packaged_model_dir()
    if start is None:
        raise typer.BadParameter("no --base given and all-MiniLM-L6-v2 is not installed")
    names = tuple(n.strip() for n in sets.split(",")) if sets else checker_data.DEFAULT_SETS
    if pairs_file is not None:
        pairs, files = read_pairs(pairs_file), {pairs_file.name: file_digest(pairs_file)}
    elif weights is None:
        pairs, files = checker_data.load_pairs(
            data, names, seed, cap_scale=cap_scale or None, n_process=min(2, os.cpu_count() or 1)
        )
    else:
        pairs, files = [], {}
    if limit is not None:
        pairs = pairs[:limit]
    if pairs_out is not None:
        err.print(f"{dump_pairs(pairs, pairs_out)} pairs -> {pairs_out}")
        return
    sources: dict[str, int] = {}
    for p in pairs:
        sources[p.source] = sources.get(p.source, 0) + 1
    trained_on = {p.set_name for p in pairs}
    held = [n for n in checker_sets.HELD_OUT if n not in trained_on]
    card: dict[str, Any] = {
        "base": Path(start).name if base else "all-MiniLM-L6-v2", "pairs": len(pairs),
        "sources": sources, "sets": list(names), "files": files, "held_out": held,
    }  # fmt: skip
    if supported is not None:
        card["supported_at"] = supported
    if weights is not None:  # trained elsewhere (scripts/train_checker_device.py)
        target = ct.export_onnx(ct.assemble(Path(start), weights, out), out)
        runs: list[dict[str, Any]] = orjson.loads(report.read_bytes()) if report else []
        run: dict[str, Any] = next(
            (r for r in runs if any(w.startswith(weights.name) for w in r.get("weights", []))),
            {},
        )
        ct.write_card(out, {
            **card, "steps": run.get("steps", 0), "seconds": run.get("seconds", 0.0),
            "options": run.get("options", {"epochs": 0, "batch_size": 0, "seed": seed}),
            "validation": ct.left_out_figures(run, runs),
            "trained_on": run.get("device", "a GPU machine (scripts/train_checker_device.py)"),
        })  # fmt: skip
        err.print(f"{target}: {target.stat().st_size / 1e6:.1f} MB; card {out / 'MODEL_CARD.md'}")
        return
    options = ct.TrainOptions(
        epochs=epochs, batch_size=batch_size, learning_rate=learning_rate,
        max_length=max_length, seed=seed, device=device,
    )  # fmt: skip
    err.print(f"{len(pairs)} pairs from {len(names)} sets; {start} -> {out}")

    def held_out(model: Any, tokenizer: Any) -> list[dict[str, Any]]:
        predict = checker_sets.torch_predict(model, tokenizer, max_length)
        figures = checker_sets.validate_all(data, predict, held)
        for f in figures:
            if "roc_auc" in f:
                err.print(
                    f"  {f['set']}: ROC-AUC {f['roc_auc']:.3f}, balanced accuracy "
                    f"{f['balanced_accuracy']:.3f} at {f['threshold']:.2f} (n {f['n']})"
                )
            else:
                err.print(f"  one threshold: {f['threshold']:.3f}, {f['balanced_accuracy']}")
        return figures

    with Progress(
        TextColumn("train-checker"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
        TextColumn("loss {task.fields[loss]:.3f}"), TimeRemainingColumn(), console=err,
    ) as bar:  # fmt: skip
        task = bar.add_task("steps", total=None, loss=0.0)
        lines = ProgressLines(err, "train-checker steps")  # stderr to a file: lines, not a bar

        def progress(step: int, total: int, loss: float) -> None:
            bar.update(task, completed=step, total=total, loss=loss)
            lines.update(step, total, f"loss {loss:.3f}")

        report_ = ct.train(
            pairs, Path(start), out, options, held_out if validate and held else None, progress
        )
    target = ct.export_onnx(out / "hf", out)
    ct.write_card(out, {
        **card, "steps": report_.steps, "seconds": round(report_.seconds, 1),
        "options": asdict(options), "validation": report_.validation,
        "trained_on": f"{os.cpu_count()} cores, {ct.resolve_device(device)}",
    })  # fmt: skip
    err.print(f"{target}: {target.stat().st_size / 1e6:.1f} MB; card {out / 'MODEL_CARD.md'}")
