"""How the checker reads long documents (issue 43): chunks of whole sentences within the word
budget that cover the text in order, pre-selection by shared content words, claims by
sentence."""

from __future__ import annotations

from verdictflow.evaluators.checker_chunks import (
    chunk_context,
    chunk_contexts,
    claim_sentences,
    cut_claim,
    top_chunks,
)

DOC = " ".join(f"Sentence {i} says the river number {i} flows past town {i}." for i in range(40))


def test_chunks_are_whole_sentences_in_order_within_the_budget() -> None:
    chunks = chunk_context(DOC, context=2, max_words=30)
    assert len(chunks) > 3
    for c in chunks:
        assert DOC[c.start : c.end] == c.text
        assert len(c.text.split()) <= 30
        assert c.text.endswith(".")
        assert c.context == 2
    assert " ".join(c.text for c in chunks) == DOC
    long_sentence = "word " * 70 + "end."
    assert [len(c.text.split()) for c in chunk_context(long_sentence, max_words=30)] == [30, 30, 11]
    assert chunk_context("   ") == []


def test_pre_selection_and_claims() -> None:
    chunks = chunk_contexts(["The Nile flows north.", "Acme acquired Globex in 2019."])
    assert top_chunks("Globex was acquired by Acme", chunks, 1) == [1]
    assert top_chunks("nothing shared here", chunks, 2) == [0, 1]  # ties: the earlier first
    assert claim_sentences("Acme bought Globex. The Nile is long!  Fine?") == [
        "Acme bought Globex.", "The Nile is long!", "Fine?",
    ]  # fmt: skip
    assert len(cut_claim("w " * 100).split()) == 60
