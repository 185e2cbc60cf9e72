"""The cross-encoder backend for real, on a tiny randomly initialised cross-encoder written to
a temporary directory (plumbing, not quality: no trained NLI weights install here)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import orjson
import pytest

from tests.support.neural import requires_neural
from verdictflow.evaluators.faithfulness_llm import JudgeContext, build_verdict, parse_response
from verdictflow.judge_tier.claim_checks import PairCache
from verdictflow.models.events import AnswerEvent
from verdictflow.models.judge import Judgement, JudgeRequest, ReviewedVerdict
from verdictflow.models.verdicts import Decision, VerdictKind

pytestmark = requires_neural


def tiny_cross_encoder(directory: Path, labels: int) -> Path:
    """A 1-layer, 32-wide BERT classifier with MiniLM's tokenizer, random weights."""
    import torch
    from transformers import AutoTokenizer, BertConfig, BertForSequenceClassification

    from verdictflow.embedders import packaged_model_dir

    source = packaged_model_dir()
    assert source is not None
    tokenizer = AutoTokenizer.from_pretrained(str(source))
    names = {0: "contradiction", 1: "entailment", 2: "neutral"} if labels == 3 else {0: "LABEL_0"}
    config = BertConfig(
        vocab_size=tokenizer.vocab_size, hidden_size=32, num_hidden_layers=1,
        num_attention_heads=2, intermediate_size=64, max_position_embeddings=512,
        num_labels=labels, id2label=names, label2id={v: k for k, v in names.items()},
    )  # fmt: skip
    torch.manual_seed(0)
    BertForSequenceClassification(config).save_pretrained(str(directory))
    tokenizer.save_pretrained(str(directory))
    return directory


@pytest.mark.parametrize("labels", [1, 3])
def test_a_local_cross_encoder_judges_claims_in_the_contract(tmp_path: Path, labels: int) -> None:
    from verdictflow.judge_tier.cross_encoder_backend import CrossEncoderBackend

    backend = CrossEncoderBackend(str(tiny_cross_encoder(tmp_path / "ce", labels)))
    event = AnswerEvent(
        id="a", answer="Acme bought Globex. The Nile is long.",
        contexts=["Acme Corp acquired Globex in 2019. The Nile is the longest river."],
    )  # fmt: skip
    reply = asyncio.run(backend.ask(event, 256))
    claims = parse_response(reply.content).claims
    assert [c.claim for c in claims] == ["Acme bought Globex.", "The Nile is long."]
    assert all(0.0 <= p["probability"] <= 1.0 for p in orjson.loads(reply.content)["claims"])
    judgement = Judgement(
        backend=backend.name, model=backend.model, prompt_version=backend.prompt_version,
        content=reply.content,
    )  # fmt: skip
    request = JudgeRequest(
        scope="answer", priority="band", event=event,
        reviews=ReviewedVerdict(verdict_id="v", kind=VerdictKind.FAITHFULNESS, score=0.5,
                                decision=Decision.PASS, threshold=0.4, config_digest="d"),
    )  # fmt: skip
    verdict = build_verdict(request, JudgeContext(backend.name, backend.model, 0.8), judgement)
    assert verdict.decision in (Decision.PASS, Decision.FAIL)
    assert backend.model.startswith("ce@")  # the model's identity is its files' digest


def test_a_flood_is_cut_to_the_window_with_the_reply_unchanged(tmp_path: Path) -> None:
    """A claim and a context sentence of punctuation (one "word" each) go to the model cut to
    its window (``judge_tier.pair_window``): the same reply as the whole pair gives."""
    from verdictflow.judge_tier.cross_encoder_backend import CrossEncoderBackend

    backend = CrossEncoderBackend(str(tiny_cross_encoder(tmp_path / "ce", 1)))
    assert backend._model.window is not None
    assert backend._model.window.pieces == 512
    event = AnswerEvent(id="f", answer="!" * 3_000, contexts=["=" * 6_000 + ". The Nile is long."])
    cut = asyncio.run(backend.ask(event, 256)).content
    backend._model.window, backend._model.cache = None, PairCache()  # whole pairs, asked again
    assert asyncio.run(backend.ask(event, 256)).content == cut


def test_a_long_document_costs_three_pairs_a_claim_and_past_the_cap_none(tmp_path: Path) -> None:
    """Each claim goes to its three best chunks, not to every context sentence (4 claims
    against 400 sentences were 1,600 pairs, 71.5 s of a MiniLM-L6 cross-encoder), quoting the
    chunk that holds its words; past ``MAX_CLAIMS`` claims the backend takes no request."""
    from verdictflow.judge_tier.claim_checks import MAX_CLAIMS
    from verdictflow.judge_tier.cross_encoder_backend import CrossEncoderBackend

    backend = CrossEncoderBackend(str(tiny_cross_encoder(tmp_path / "ce", 3)))
    filler = " ".join(f"Station {i} lies {7 * i} km upstream." for i in range(400))
    claims = [f"Harbour {name} opened in {year}." for name, year in
              (("Alpha", 1901), ("Bravo", 1922), ("Delta", 1950), ("Omega", 1977))]  # fmt: skip
    context = filler + " " + " ".join(c.replace("opened", "was opened") for c in claims)
    event = AnswerEvent(id="long", answer=" ".join(claims), contexts=[context])
    reply = orjson.loads(asyncio.run(backend.ask(event, 256)).content)
    assert backend._model.cache.misses <= 3 * len(claims)
    assert [c["claim"] for c in reply["claims"]] == claims
    assert all(c["evidence"] in context for c in reply["claims"])
    assert reply["runtime"].startswith("sentence-transformers ")
    assert backend.prompt_version == "cross-encoder-chunks/2"
    many = AnswerEvent(id="m", answer=" ".join(["The Nile is long."] * (MAX_CLAIMS + 1)),
                       contexts=["The Nile is long."])  # fmt: skip
    assert backend.too_long(many) == (
        f"{MAX_CLAIMS + 1} claims > the cross-encoder's {MAX_CLAIMS} an answer (3 pairs a claim)"
    )
    assert backend.too_long(event) is None
