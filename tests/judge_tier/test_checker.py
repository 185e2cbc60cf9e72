"""The claim checker (issue 43) for real, on a tiny checker trained here: ``train`` on a few
pairs from a 1-layer BERT with MiniLM's tokenizer, the int8 ONNX export, the backend's claims
contract with chunk offsets and its pair cache, the digest check against a card, and a real worker
whose judge tier runs it against the embedded broker (plumbing, not quality: quality is
measured by bench/validate_checker.py on the trained, shipped checker)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.judge_tier.test_cross_encoder import tiny_cross_encoder
from tests.support.neural import requires_neural
from tests.support.paths import SHARED_DATA
from tests.support.reliability import OutputCollector
from verdictflow.evaluators.faithfulness_llm import parse_response
from verdictflow.judge_tier.backends import BackendError
from verdictflow.models.events import AnswerEvent
from verdictflow.scoring_jobs.training.checker_pairs import Pair
from verdictflow.streams.replay import replay

pytestmark = requires_neural

CONTEXT = "Acme Corp acquired Globex in 2019. The Nile is the longest river in Africa."


@pytest.fixture(scope="module")
def tiny_checker(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from verdictflow.scoring_jobs.training import checker_training as ct

    root = tmp_path_factory.mktemp("checker")
    base = tiny_cross_encoder(root / "base", 1)
    pairs = [
        Pair("t", "t", CONTEXT, "Acme bought Globex.", 1.0),
        Pair("t", "t", CONTEXT, "Globex bought Acme.", 0.0),
        Pair("t", "t", CONTEXT, "The Nile is in Africa.", 1.0),
        Pair("t", "t", CONTEXT, "The Nile is in Asia.", 0.0),
    ] * 2
    options = ct.TrainOptions(batch_size=4, checkpoint_every=1)
    report = ct.train(pairs, base, root / "out", options)
    assert report.steps == 2
    assert (root / "out" / "checkpoint" / "state.pt").is_file()
    again = ct.train(pairs, base, root / "out", options)  # resumes: nothing left to do
    assert again.steps == 2
    ct.export_onnx(root / "out" / "hf", root / "export")
    return root / "export"


def test_the_shipped_checker_matches_its_card_and_reads_support() -> None:
    """The checker in the package: its files are the ones its card names (checked at start),
    it decides with the card's cut, and it tells a claim the text makes from one it does not
    (a smoke check on the real weights; quality: bench/validate_checker.py)."""
    from verdictflow.judge_tier.checker_backend import CheckerBackend, shipped_dir
    from verdictflow.judge_tier.factory import make_backend
    from verdictflow.settings import JudgeSettings

    card = orjson.loads((shipped_dir() / "model_card.json").read_bytes())
    backend = make_backend(JudgeSettings(url=None, model_dir=None))
    assert isinstance(backend, CheckerBackend)  # no endpoint, no directory: the shipped one
    assert backend._model.digest == card["model_digest"]
    assert backend._model.supported_at == card["supported_at"] < 0.5
    text = (
        "The Eiffel Tower was completed in 1889 for the World's Fair in Paris. It was designed "
        "by the engineering company of Gustave Eiffel and is 330 metres tall."
    )
    made, contradicted, unrelated = backend._model.probabilities([
        (text, "The Eiffel Tower was finished in 1889."),
        (text, "The Eiffel Tower was finished in 1925."),
        (text, "The Louvre holds the Mona Lisa."),
    ])  # fmt: skip
    assert made > max(contradicted, unrelated), (made, contradicted, unrelated)


def test_a_pairs_probability_does_not_depend_on_the_pairs_asked_with_it() -> None:
    """The int8 export scales its activations per input tensor: batched, a pair read 0.656
    alone and 0.704 beside another, so a verdict depended on its neighbours and on what filled
    the cache first. Each pair is its own call now: the same bits alone and among others."""
    from verdictflow.judge_tier.checker_backend import CheckerModel, shipped_dir

    pair = ("The Eiffel Tower is 330 metres tall and stands in Paris.",
            "The tower is 330 metres tall.")  # fmt: skip
    others = [
        ("Photosynthesis converts light energy into chemical energy stored in glucose, in the "
         "chloroplasts of plant cells, and releases oxygen.", "Plants release oxygen."),
        ("Cats sleep a lot.", "Dogs bark at night when strangers come near the garden gate."),
    ]  # fmt: skip
    (alone,) = CheckerModel(shipped_dir()).probabilities([pair])
    among = CheckerModel(shipped_dir()).probabilities([others[0], pair, others[1]])
    assert among[1] == alone


def test_weights_trained_elsewhere_come_back_in_parts_and_fit_the_base(
    tiny_checker: Path, tmp_path: Path
) -> None:
    """The GPU route (scripts/train_checker_device.py, then ``train-checker --weights``): the
    vocabulary stayed frozen, the rest travels as fp16 parts and is put back on the base."""
    import torch
    from safetensors.torch import save
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    from verdictflow.scoring_jobs.training import checker_training as ct

    root = tiny_checker.parent
    trained = AutoModelForSequenceClassification.from_pretrained(str(root / "out" / "hf")).eval()
    base = AutoModelForSequenceClassification.from_pretrained(str(root / "base"))
    assert torch.equal(trained.get_input_embeddings().weight, base.get_input_embeddings().weight)
    parts = ct.write_parts(save(ct.trained_weights(root / "out" / "hf")), tmp_path / "w", 40_000)
    assert len(parts) > 1
    hf = ct.assemble(root / "base", tmp_path / "w", tmp_path / "assembled")
    again = AutoModelForSequenceClassification.from_pretrained(str(hf)).eval()
    tokenizer = AutoTokenizer.from_pretrained(str(hf))
    encoded = tokenizer([CONTEXT], ["Acme bought Globex."], return_tensors="pt")
    with torch.no_grad():
        want, got = trained(**encoded).logits, again(**encoded).logits
    assert torch.allclose(want, got, atol=2e-2), (want, got)
    with pytest.raises(FileNotFoundError, match="part0"):
        ct.read_weight_parts(tmp_path / "nothing")


def test_the_backend_answers_in_the_claims_contract_with_chunks_and_a_cache(
    tiny_checker: Path,
) -> None:
    from verdictflow.judge_tier.checker_backend import CheckerBackend, CheckerModel

    backend = CheckerBackend(str(tiny_checker))
    assert backend.model.startswith("export@")
    event = AnswerEvent(id="a", answer="Acme bought Globex. The Nile is long.", contexts=[CONTEXT])
    reply = asyncio.run(backend.ask(event, 256))
    claims = orjson.loads(reply.content)["claims"]
    assert orjson.loads(reply.content)["runtime"].startswith("onnxruntime ")  # which kernels
    assert [c.claim for c in parse_response(reply.content).claims] == [
        "Acme bought Globex.", "The Nile is long.",
    ]  # fmt: skip
    for claim in claims:
        assert 0.0 <= claim["probability"] <= 1.0
        assert claim["supported"] == (claim["probability"] >= 0.5)
        span = claim["chunk"]
        assert CONTEXT[span["start"] : span["end"]] == claim["evidence"]
    model = backend._model
    asked = model.misses
    asyncio.run(backend.ask(event, 256))
    assert model.misses == asked  # the same pairs again: from the cache
    assert model.hits >= asked
    with pytest.raises(BackendError, match="do not match its card"):
        CheckerModel(tiny_checker, expected_digest="0" * 64)


def test_a_claim_longer_than_the_window_is_cut_not_refused(tiny_checker: Path) -> None:
    """A sentence with no spaces has one "word" for ``cut_claim`` and hundreds of word pieces;
    the pair is cut to the window (the longer side first), and the answer gets its reply."""
    from verdictflow.judge_tier.checker_backend import CheckerBackend

    sentence = "这是一个很长的句子" * 40 + "。"  # 361 characters, one piece each
    event = AnswerEvent(id="zh", answer=sentence, contexts=["这是一个句子。" + CONTEXT])
    reply = asyncio.run(CheckerBackend(str(tiny_checker)).ask(event, 256))
    (claim,) = orjson.loads(reply.content)["claims"]
    assert 0.0 <= claim["probability"] <= 1.0


@pytest.mark.broker
@pytest.mark.timeout(300)
def test_a_judge_worker_reviews_with_the_checker(
    tiny_checker: Path, settings_factory, worker_factory, tmp_path: Path
) -> None:
    settings = settings_factory()
    policy = tmp_path / "policy.yaml"
    policy.write_text("judge_tier:\n  escalate:\n    faithfulness: {band: [0.0, 1.0]}\n")
    env = {"VERDICTFLOW_JUDGE_MODEL_DIR": str(tiny_checker)}
    answers = [
        {"id": "c1", "query": "Who bought whom?", "answer": "Acme Corp acquired Globex in 2019.",
         "contexts": [CONTEXT]},
        {"id": "c2", "query": "Where is the Nile?", "answer": "The Nile is the longest river.",
         "contexts": [CONTEXT]},
    ]  # fmt: skip
    with OutputCollector(settings) as out:
        worker = worker_factory(settings, policy, env=env)
        asyncio.run(replay([orjson.dumps(a) for a in answers], "answers", settings))

        def judged() -> bool:
            return (
                sum(orjson.loads(v[0])["kind"] == "faithfulness_llm" for v in out.verdicts.values())
                == 2
            )

        alive = lambda: worker.proc.poll() is None  # noqa: E731
        assert out.wait_until(judged, timeout=240, alive=alive), worker.log()[-3000:]
    verdicts = [orjson.loads(v[0]) for v in out.verdicts.values()]
    stream = {v["verdict_id"]: v for v in verdicts if v["kind"] == "faithfulness_llm"}
    # the same answers offline (eval answers --judge local): the same bytes
    from verdictflow.evaluators.policy import load_policy
    from verdictflow.judge_tier.factory import make_client
    from verdictflow.models.codec import encode
    from verdictflow.scoring_jobs.batch.eval_answers import evaluate_answers
    from verdictflow.scoring_jobs.batch.eval_judge import judge_verdicts
    from verdictflow.scoring_setup import load_scoring
    from verdictflow.settings import JudgeSettings

    loaded = load_policy(policy)
    lines = [orjson.dumps(a) for a in answers]
    cheap = [o.verdict for o in evaluate_answers(lines, load_scoring(loaded)) if o.verdict]
    client = make_client(JudgeSettings(model_dir=str(tiny_checker)), loaded.judge_tier)
    offline = judge_verdicts(lines, cheap, loaded, client).verdicts
    assert {v.verdict_id: encode(v) for v in offline} == {
        vid: next(iter(out.verdicts[vid])) for vid in stream
    }
    for v in stream.values():
        judge = v["evidence"]["judge"]
        assert judge["backend"] == "checker"
        assert judge["model"].startswith(f"{tiny_checker.name}@")
        assert judge["prompt_version"] == "checker-chunks/1"
        assert "probability" in v["evidence"]["response"]


@pytest.mark.skipif(not SHARED_DATA.is_dir(), reason="../shared/data not present")
def test_pairs_tokenized_once_give_the_tokenizers_own_batches() -> None:
    """The fit tokenizes every pair before its first step (``EncodedPairs``); each batch it
    pads must be what the tokenizer gives for that batch with ``padding=True``: the same ids,
    segments and mask, truncation included (a claim longer than the window too: cutting the
    chunk alone raised there)."""
    import random

    import torch
    from transformers import AutoTokenizer

    from verdictflow.embedders import packaged_model_dir
    from verdictflow.evaluators.checker_chunks import PAIR_TRUNCATION
    from verdictflow.scoring_jobs.training.checker_training import EncodedPairs

    tokenizer = AutoTokenizer.from_pretrained(str(packaged_model_dir()))
    scifact = SHARED_DATA / "scifact_beir"
    abstracts = [
        orjson.loads(line)["text"]
        for line in (scifact / "corpus.jsonl").read_bytes().splitlines()[:40]
    ]
    pairs = [Pair("t", "t", CONTEXT, "Acme bought Globex.", 1.0), Pair("t", "t", "", "x", 0.0)]
    pairs.append(Pair("t", "t", abstracts[0], abstracts[1], 0.0))  # a claim over the window
    pairs += [
        Pair("t", "t", text, text.split(". ")[0][: 30 + 2 * i], float(i % 2))
        for i, text in enumerate(abstracts)
    ]
    for max_length in (64, 256):
        encoded = EncodedPairs(tokenizer, pairs, max_length, chunk=16)
        order = list(range(len(pairs)))
        random.Random(max_length).shuffle(order)
        for start in range(0, len(order), 8):
            ids = order[start : start + 8]
            expected = tokenizer(
                [pairs[i].chunk for i in ids], [pairs[i].claim for i in ids],
                truncation=PAIR_TRUNCATION, max_length=max_length, padding=True,
                return_tensors="pt",
            )  # fmt: skip
            got = encoded.batch(ids)
            assert set(got) == set(expected.keys())
            for key, tensor in got.items():
                assert tensor.dtype == expected[key].dtype
                assert torch.equal(tensor, expected[key]), (max_length, key)


def test_an_answer_of_more_claims_than_the_checker_takes_defers_without_a_pair(
    tiny_checker: Path,
) -> None:
    """Each claim costs up to three pairs, one answer at a time: past ``MAX_CLAIMS`` the
    request DEFERs ``too_long_for_judge`` before the budget or the model is asked; at it, the
    answer is judged."""
    from verdictflow.evaluators.escalation import Priority
    from verdictflow.evaluators.judge_tier_policy import JudgeTierPolicy
    from verdictflow.judge_tier.checker_backend import CheckerBackend
    from verdictflow.judge_tier.claim_checks import MAX_CLAIMS
    from verdictflow.judge_tier.client import JudgeClient
    from verdictflow.models.judge import Judgement, JudgeRequest, ReviewedVerdict
    from verdictflow.models.verdicts import Decision, ReasonCode, VerdictKind

    backend = CheckerBackend(str(tiny_checker))
    client = JudgeClient(backend, JudgeTierPolicy())
    reviews = ReviewedVerdict(verdict_id="v", kind=VerdictKind.FAITHFULNESS, score=0.5,
                              decision=Decision.PASS, threshold=0.4, config_digest="d")  # fmt: skip

    def judged(sentences: int) -> object:
        answer = " ".join(f"Station {i} is {7 * i} km from the sea." for i in range(sentences))
        event = AnswerEvent(id=f"s{sentences}", answer=answer, contexts=[CONTEXT])
        request = JudgeRequest(scope="answer", priority="band", reviews=reviews, event=event)
        return asyncio.run(client.judge(request, Priority.BAND))

    outcome = judged(MAX_CLAIMS + 1)
    assert outcome == (
        ReasonCode.TOO_LONG_FOR_JUDGE,
        f"{MAX_CLAIMS + 1} claims > the checker's {MAX_CLAIMS} an answer (3 pairs a claim)",
    )
    assert backend._model.misses == 0  # no pair was run, and no budget spent
    assert client.budget.spend.requests == 0
    assert isinstance(judged(MAX_CLAIMS), Judgement)
    assert backend._model.misses == MAX_CLAIMS  # one chunk: a pair a claim


def test_a_checker_trained_on_every_held_out_set_shows_the_figures_of_the_runs_that_left_them_out(
    tmp_path: Path,
) -> None:
    """scripts/train_checker_device.py trains one run per group of held-out sets left out,
    then one on all of them (nothing left to validate): that checker's card takes each set's
    figures from the run that left it out, says which, and names no set as held out."""
    from verdictflow.scoring_jobs.training import checker_training as ct

    def fig(name: str, auc: float, epoch: int = 1) -> dict[str, object]:
        return {"set": name, "n": 10, "roc_auc": auc, "balanced_accuracy": auc - 0.1,
                "threshold": 0.3, "epoch": epoch}  # fmt: skip

    runs = [
        {"run": "agg-out", "added": ["begin-wow"],
         "validation": [fig("wice", 0.5, 0), fig("wice", 0.7),
                        {"set": "one threshold", "threshold": 0.2}]},
        {"run": "begin-out", "added": ["wice"],
         "validation": [fig("begin-wow", 0.9, 2), fig("wice", 0.1, 2)]},
        {"run": "all", "added": ["wice", "begin-wow"], "validation": []},
    ]  # fmt: skip
    got = ct.left_out_figures(runs[2], runs)
    assert [(f["set"], f["roc_auc"], f["run"]) for f in got] == [
        ("wice", 0.7, "agg-out"), ("begin-wow", 0.9, "begin-out"),
    ]  # fmt: skip
    assert ct.left_out_figures(runs[0], runs) == runs[0]["validation"]  # its own, when it has
    assert ct.left_out_figures({}, runs) == []  # weights the report has no run for
    assert ct.left_out_figures({"run": "x", "added": ["begin-wow"]}, runs)[0]["run"] == "begin-out"
    (tmp_path / "model.onnx").write_bytes(b"onnx")
    (tmp_path / "tokenizer.json").write_text("{}")
    ct.write_card(tmp_path, {
        "base": "b", "pairs": 1, "sources": {"aggrefact": 1}, "sets": [], "files": {},
        "held_out": [], "steps": 1, "seconds": 1.0, "trained_on": "a GPU",
        "options": {"epochs": 1, "batch_size": 1, "seed": 1}, "validation": got,
    })  # fmt: skip
    card = (tmp_path / "MODEL_CARD.md").read_text()
    assert "held out (never trained on): none" in card
    assert "| wice (run agg-out) | 10 | 0.700 |" in card
    assert "| begin-wow (run begin-out) | 10 | 0.900 |" in card  # its run's last epoch (2)
    assert "the run that left it out" in card


def _device_script() -> object:
    """scripts/train_checker_device.py as a module (``scripts`` is no package)."""
    import importlib.util
    import sys

    path = Path(__file__).resolve().parents[2] / "scripts" / "train_checker_device.py"
    spec = importlib.util.spec_from_file_location("train_checker_device", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclass looks its module up there
    spec.loader.exec_module(module)
    return module


def test_the_gpu_script_reads_each_runs_flags_averages_a_soup_and_picks_the_best_run(
    tiny_checker: Path, tmp_path: Path
) -> None:
    """scripts/train_checker_device.py's runs (docs/checker.md "GPU runs, 2026-11-30"): a
    run's flags override the command's options for it alone, a wrong flag or set stops the
    command before any run, a soup is the mean of its members' weights, and --export-best
    takes the run validated on every held-out set with the best mean ROC-AUC."""
    import shutil

    import torch
    from transformers import AutoModelForSequenceClassification

    from verdictflow.scoring_jobs.training import checker_sets as cs
    from verdictflow.scoring_jobs.training import checker_training as ct

    script: Any = _device_script()
    options = ct.TrainOptions(seed=13, epochs=1, learning_rate=5e-5)
    run = script.parse_run("r:wice,begin-tc:seed=14:epochs=2:lr=1e-4:limit=9:cap=missing=0:"
                           "cap=qags=3:export", options)  # fmt: skip
    assert (run.name, run.added, run.export, run.limit, run.caps) == (
        "r", ["wice", "begin-tc"], True, 9, ["missing=0", "qags=3"],
    )  # fmt: skip
    assert (run.options.seed, run.options.epochs, run.options.learning_rate) == (14, 2, 1e-4)
    assert options.seed == 13  # the command's options are not changed
    assert script.parse_run("s::soup=a+b", options).soup == ["a", "b"]
    for wrong in ("r::seed", "r::lr=x", "r::cap=qags=", "r::bogus=1", "r:wice,nope"):
        with pytest.raises(SystemExit):
            script.parse_run(wrong, options)
    pairs = [Pair(s, s, "c", "q", 1.0) for s in ("missing", "qags", "qags", "documents")]
    assert [p.source for p in script.capped(pairs, ["missing=0", "qags=1"])] == [
        "qags", "documents",
    ]  # fmt: skip

    work = tmp_path / "work"
    trained = tiny_checker.parent / "out" / "hf"
    for name, scale in (("a", 1.0), ("b", 3.0)):
        shutil.copytree(trained, work / "runs" / name / "hf")
        model = AutoModelForSequenceClassification.from_pretrained(str(trained))
        with torch.no_grad():
            model.classifier.weight.mul_(scale)
        model.save_pretrained(str(work / "runs" / name / "hf"))
    every = ",".join(cs.HELD_OUT)  # nothing left to validate: no data needed
    result = script.soup_run(script.parse_run(f"s:{every}:soup=a+b", options), work, {})
    souped = AutoModelForSequenceClassification.from_pretrained(str(work / "runs" / "s" / "hf"))
    first = AutoModelForSequenceClassification.from_pretrained(str(trained))
    assert torch.allclose(souped.classifier.weight, 2 * first.classifier.weight)
    assert torch.equal(souped.bert.encoder.layer[0].output.dense.weight,
                       first.bert.encoder.layer[0].output.dense.weight)  # fmt: skip
    assert (result["soup"], result["validation"]) == (["a", "b"], [])

    def ran(name: str, auc: float, sets: tuple[str, ...] = tuple(cs.HELD_OUT)) -> dict[str, Any]:
        figures = [{"set": s, "roc_auc": auc, "epoch": 1} for s in sets]
        return {"run": name, "validation": [*figures, {"set": "one threshold", "epoch": 1}]}

    results = [ran("x", 0.7), ran("y", 0.8), ran("z", 0.9, ("wice", "factcheckgpt"))]
    assert script.best_run(results)["run"] == "y"  # z's mean leaves three sets out
    assert script.best_run([results[2]]) is None
