"""Faithfulness: its signals on the real spaCy pipeline, the packaged model and the verdict."""

from __future__ import annotations

import json
import math
from importlib import resources

import pytest

from verdictflow.evaluators import answer_analysis
from verdictflow.evaluators.answer_quality_verdicts import score_hallucination
from verdictflow.evaluators.faithfulness import faithfulness_signals, score_faithfulness
from verdictflow.evaluators.faithfulness_model import (
    FaithfulnessModel,
    FaithfulnessModelError,
    load_model,
    model_bytes,
)
from verdictflow.evaluators.faithfulness_signals import DIRECTIONS, SIGNAL_NAMES
from verdictflow.evaluators.hallucination import HallucinationResult
from verdictflow.evaluators.policy import HallucinationPolicy, Policy
from verdictflow.models.events import AnswerEvent
from verdictflow.models.verdicts import Decision, ReasonCode, Verdict
from verdictflow.scoring_setup import Scoring, load_scoring

CONTEXT = (
    "Protesters gathered in front of the Russian embassy in Berlin on Friday. "
    "They marked the first anniversary of Russia's invasion of Ukraine. "
    "Police said about 2,000 people took part. Moscow did not comment."
)


@pytest.fixture(scope="module")
def scoring() -> Scoring:
    return load_scoring(Policy(), None)


def score(scoring: Scoring, answer: str, contexts: list[str] | None = None) -> Verdict:
    event = AnswerEvent(id="a", answer=answer, contexts=[CONTEXT] if contexts is None else contexts)
    (parsed,) = scoring.analyzer.analyze([event])
    return score_faithfulness(event, parsed, scoring.ctx)


def signals(scoring: Scoring, answer: str) -> dict[str, float]:
    event = AnswerEvent(id="a", answer=answer, contexts=[CONTEXT])
    (parsed,) = scoring.analyzer.analyze([event])
    return faithfulness_signals(event, parsed, scoring.ctx).values


def findings(v: Verdict, signal: str) -> list[str]:
    return [f["text"] for f in v.evidence["findings"] if f["signal"] == signal]


def test_a_fabricated_name_fails_where_a_paraphrase_passes(scoring) -> None:
    paraphrase = score(
        scoring, "Demonstrators assembled outside the Russian embassy in Berlin on Friday."
    )
    fabricated = score(
        scoring, "Demonstrators assembled outside the Russian embassy in Paris on Friday."
    )
    assert paraphrase.decision is Decision.PASS, paraphrase.evidence
    assert fabricated.decision is Decision.FAIL, fabricated.evidence
    assert fabricated.score < paraphrase.score
    assert "Paris" in findings(fabricated, "novel_propn")
    assert "Paris" in findings(fabricated, "fabricated_facts")
    reason = next(r for r in fabricated.reasons if r.code is ReasonCode.UNSUPPORTED_DETAIL)
    assert "'Paris'" in reason.detail
    assert "detail factor" in reason.detail
    assert fabricated.evidence["drivers"][0] in {"novel_propn", "novel_named_share"}


def test_signals_do_not_depend_on_word_order(scoring) -> None:
    """Every signal compares sets of words per sentence: a re-ordering of the same sentence
    has the same values (the first version's content-bigram novelty did not)."""
    a = signals(scoring, "Police said about 2,000 people took part in Berlin.")
    b = signals(scoring, "In Berlin about 2,000 people took part, police said.")
    assert a == b
    assert "novel_bigram_share" not in a


def test_signals_are_bounded_whatever_the_length(scoring) -> None:
    """Shares are in [0, 1] and counts enter as log(1 + min(n, 3)): an answer that makes up
    twenty names weighs no more than one that makes up three."""
    names = ", ".join(f"Name{i} Surname{i}" for i in range(20))
    values = signals(scoring, f"The protest was led by {names}.")
    for name, value in values.items():
        assert 0.0 <= value <= math.log1p(3) + 1e-12, (name, value)
    assert values["novel_propn"] == pytest.approx(math.log1p(3))


def test_the_packaged_weights_keep_their_signals_directions() -> None:
    model = load_model()
    for factor in model.factors:
        for name, weight in zip(factor.signals, factor.weights, strict=True):
            assert weight * DIRECTIONS[name] >= 0, (name, weight)
    raw = json.loads(model_bytes(model))
    raw["factors"]["detail"]["signals"][0]["weight"] = 1.0  # a novel name as good news
    with pytest.raises(FaithfulnessModelError, match="against their signal's direction"):
        FaithfulnessModel.from_bytes(json.dumps(raw).encode(), "x.json")


def test_a_name_taken_from_another_passage_is_misplaced(scoring) -> None:
    """A window is a sentence and its neighbours, so the two passages are kept apart."""
    context = [
        "The mayor of Springfield opened the new bridge on Monday. "
        "The ceremony drew a large crowd from the city. "
        "Traffic was diverted for three hours. "
        "Schools closed early. "
        "Later that month, the governor of Shelbyville visited a farm. "
        "He praised the farmers for their harvest and their patience."
    ]
    right = score(scoring, "The mayor of Springfield opened the new bridge.", context)
    swapped = score(scoring, "The mayor of Shelbyville opened the new bridge.", context)
    assert "Shelbyville" in findings(swapped, "misplaced_names")
    assert not findings(right, "misplaced_names")
    assert swapped.score < right.score


def test_an_added_negation_counts_against_the_answer(scoring) -> None:
    plain = signals(scoring, "Police said about 2,000 people took part.")
    negated = signals(scoring, "Police said about 2,000 people did not take part.")
    kept = signals(scoring, "Moscow did not comment.")  # the context's own negation
    assert plain["negation_flipped"] == 0.0
    assert negated["negation_flipped"] > 0.0
    assert kept["negation_flipped"] == 0.0


def test_a_negation_the_context_states_with_no_is_not_added(scoring) -> None:
    """The answer side and the context side read the same negation words ("no" included)."""
    v = score(scoring, "He has no plans to leave.", ["The coach has no plans to leave the club."])
    assert not findings(v, "negation_flipped")


def test_a_negating_prefix_flipped_against_the_support_is_found(scoring) -> None:
    v = score(scoring, "The method is incorrect.", ["The method is correct and fast."])
    assert findings(v, "negation_flipped") == ["incorrect"]
    assert v.decision is Decision.FAIL
    same = score(scoring, "The method is correct.", ["The method is correct and fast."])
    assert not findings(same, "negation_flipped")


def test_a_wrong_number_is_a_fabricated_fact(scoring) -> None:
    right = signals(scoring, "About 2,000 people took part, police said.")
    wrong = signals(scoring, "About 9,000 people took part, police said.")
    assert right["fabricated_facts"] == 0.0
    assert right["novel_number"] == 0.0
    assert wrong["fabricated_facts"] > 0.0
    assert wrong["novel_number"] > 0.0


#: An article as a tokenised corpus (QAGS CNN/DM) or a PDF gives it: separators followed by a
#: space, an apostrophe split off.
DETOKENISED = (
    "The clip has been viewed more than 235, 000 times. "
    "Scientists found that dog one got it right in 98. 7 per cent of cases. "
    "He is said to be in talks with martin o' malley's people."
)


@pytest.mark.parametrize(
    ("answer", "fact", "made_up"),
    [
        ("The clip has been viewed more than 235,000 times.", "235,000", "236,000"),
        ("Dog one got it right in 98.7 per cent of cases.", "98.7", "98.4"),
    ],
)
def test_a_fact_the_context_writes_apart_is_not_fabricated(scoring, answer, fact, made_up) -> None:
    event = AnswerEvent(id="a", answer=answer, contexts=[DETOKENISED])
    (parsed,) = scoring.analyzer.analyze([event])
    values = faithfulness_signals(event, parsed, scoring.ctx)
    assert values.values["fabricated_facts"] == 0.0, values.findings
    assert values.values["unsupported_number_share"] == 0.0
    # the same fact with a digit the context does not have is still made up
    wrong = AnswerEvent(id="b", answer=answer.replace(fact, made_up), contexts=[DETOKENISED])
    (parsed,) = scoring.analyzer.analyze([wrong])
    assert faithfulness_signals(wrong, parsed, scoring.ctx).values["fabricated_facts"] > 0.0


@pytest.mark.parametrize(
    ("context", "stated", "made_up", "signal"),
    [
        # as in BEGIN WoW and TopicalChat: a name the context spells out; each FAILed as a
        # made-up name before (issue 43)
        ("The song became a number one hit in the United States in 1956.",
         "The song was a number one hit in the US in 1956.",
         "The song was a number one hit in the UK in 1956.", "novel_named_share"),
        ("The National Football League has 32 teams.",
         "The NFL has 32 teams.", "The NBA has 32 teams.", "novel_named_share"),
        # a lowercase conversation has no capitals to tell the name by (BEGIN WoW)
        ("the song became a number one hit in the united states in 1956.",
         "the song was a number one hit in the us in 1956.",
         "the song was a number one hit in the uk in 1956.", "novel_named_share"),
        # a count the context writes in words, before the same word (BEGIN WoW)
        ("The band has earned two platinum and five gold albums since 1998.",
         "The band has earned 2 platinum albums since 1998.",
         "The band has earned 3 platinum albums since 1998.", "novel_number"),
        # a ten (BEGIN CMU-DoG)
        ("Sedated for a few hours, they spent fifty years in a dream building a world.",
         "They spent 50 years in a dream building a world.",
         "They spent 60 years in a dream building a world.", "novel_number"),
    ],
)  # fmt: skip
def test_a_name_the_context_spells_out_is_not_novel(
    scoring, context, stated, made_up, signal
) -> None:
    kept = score(scoring, stated, [context])
    assert kept.decision is Decision.PASS, kept.evidence
    assert not findings(kept, signal)
    wrong = score(scoring, made_up, [context])
    assert wrong.decision is Decision.FAIL, wrong.evidence
    assert wrong.evidence["drivers"][0] in {signal, "novel_propn", "fabricated_facts"}


def test_a_number_word_elsewhere_does_not_vouch_for_a_digit(scoring) -> None:
    """Only the word before the same next word: "three" in another phrase of the article does
    not make a made-up "3-1" found (QAGS XSum, issue 43)."""
    context = "United won 4-1 at home. The club has won three titles in a row."
    assert findings(score(scoring, "United won 3-1 at home.", [context]), "novel_number")


def test_a_date_made_of_numbers_the_context_has_apart_is_still_fabricated(scoring) -> None:
    context = "The museum reopened on 12 March 2021. Repairs cost 5 million euros."
    for answer, made_up in (
        ("The museum reopened on 5 March 2021.", ["5 March 2021"]),
        ("The museum reopened on 12 March 2021.", []),
    ):
        event = AnswerEvent(id="a", answer=answer, contexts=[context])
        (parsed,) = scoring.analyzer.analyze([event])
        found = faithfulness_signals(event, parsed, scoring.ctx).findings
        assert [f.text for f in found if f.signal == "fabricated_facts"] == made_up


def test_nothing_to_check_defers(scoring) -> None:
    yes = score(scoring, "Yes.")
    assert yes.decision is Decision.DEFER
    assert yes.score is None
    assert yes.reasons[0].code is ReasonCode.NO_ANCHORS
    assert score(scoring, "Berlin.", []).reasons[0].code is ReasonCode.NO_CONTEXTS


def test_evidence_explains_the_score(scoring) -> None:
    v = score(scoring, "Demonstrators assembled outside the Russian embassy in Paris on Friday.")
    model = scoring.ctx.faithfulness
    rows = {r["name"]: r for r in v.evidence["signals"]}
    assert tuple(rows) == model.signals
    for factor in model.factors:
        logit = math.fsum([factor.intercept, *(rows[n]["contribution"] for n in factor.signals)])
        assert v.evidence["factors"][factor.name] == pytest.approx(1 / (1 + math.exp(-logit)))
    ceiling = v.evidence["ceiling"]
    assert ceiling["signal"] == model.ceiling == "claim_groundedness"
    product = math.prod(v.evidence["factors"].values())
    assert v.score == pytest.approx(min(product, ceiling["value"]))
    assert ceiling["capped_from"] is None  # the factors are under the ceiling here
    assert v.evidence["model_digest"] == model.digest


def test_a_turn_mostly_not_in_its_contexts_is_capped_by_its_coverage(scoring, tmp_path) -> None:
    """The factors alone PASS it (their support intercept does), but 1 of its 8 words is in
    the context: the score is capped at its claims' Q1 and the reason says so."""
    answer = "Police were there and it was quite loud."
    v = score(scoring, answer)
    assert v.decision is Decision.FAIL, v.evidence
    assert v.score == pytest.approx(1 / 8)
    assert v.evidence["ceiling"]["capped_from"] >= Policy().faithfulness.threshold
    assert "capped at claim_groundedness 0.1250" in v.reasons[-1].detail
    assert v.reasons[-1].code is ReasonCode.WEAK_SUPPORT
    # The same model without its ceiling passes it.
    raw = json.loads(model_bytes(scoring.ctx.faithfulness))
    raw["ceiling"] = None
    uncapped = tmp_path / "uncapped.json"
    uncapped.write_text(json.dumps(raw))
    other = load_scoring(Policy.model_validate({"faithfulness": {"model": str(uncapped)}}), None)
    plain = score(other, answer)
    assert plain.decision is Decision.PASS
    assert plain.score == pytest.approx(v.evidence["ceiling"]["capped_from"])
    assert plain.evidence["ceiling"] is None


def test_a_comparison_the_values_bear_out_is_not_capped(scoring) -> None:
    """An inference from the numbers ("more massive than"), in words the context does not use:
    the ceiling leaves the sentence out (2 of its 6 words are in the context)."""
    context = "Jupiter has a mass of about 318 Earth masses, while Saturn has about 95 of them."
    v = score(scoring, "Jupiter is more massive than Saturn.", [context])
    assert v.decision is Decision.PASS, v.evidence
    assert v.evidence["ceiling"] == {
        "signal": "claim_groundedness", "value": 1.0, "capped_from": None
    }  # fmt: skip
    swapped = score(scoring, "Saturn is more massive than Jupiter.", [context])
    assert swapped.decision is Decision.FAIL
    assert swapped.evidence["ceiling"]["value"] == pytest.approx(2 / 6)


def test_verdicts_are_byte_identical_and_the_model_is_in_the_digest(scoring, tmp_path) -> None:
    answer = "Demonstrators assembled outside the Russian embassy in Paris on Friday."
    first, second = score(scoring, answer), score(scoring, answer)
    assert first.model_dump_json() == second.model_dump_json()
    raw = json.loads(model_bytes(scoring.ctx.faithfulness))
    raw["factors"]["detail"]["intercept"] += 1.0
    changed = tmp_path / "model.json"
    changed.write_text(json.dumps(raw))
    other = load_scoring(Policy.model_validate({"faithfulness": {"model": str(changed)}}), None)
    assert other.ctx.config_digest != scoring.ctx.config_digest


def test_the_packaged_model_is_canonical_and_its_threshold_the_default() -> None:
    packaged = resources.files("verdictflow.data").joinpath("faithfulness_model.json").read_bytes()
    model = load_model()
    assert model_bytes(model) == packaged  # what train-faithfulness writes, byte for byte
    assert Policy().faithfulness.threshold == model.threshold
    assert set(model.signals) == set(SIGNAL_NAMES)
    names = {s["name"] for s in model.training["sets"]}
    assert {"halueval-qa", "qags-cnndm", "summeval", "summedits-news"} <= names


def test_bad_model_files_are_refused_with_the_reason(tmp_path) -> None:
    with pytest.raises(FaithfulnessModelError, match="cannot read"):
        load_model(str(tmp_path / "missing.json"))
    raw = json.loads(model_bytes(load_model()))
    raw["factors"]["detail"]["signals"][0]["name"] = "vibes"
    with pytest.raises(FaithfulnessModelError, match="vibes"):
        FaithfulnessModel.from_bytes(json.dumps(raw).encode(), "x.json")
    with pytest.raises(FaithfulnessModelError, match="format"):
        FaithfulnessModel.from_bytes(b'{"format": "other"}', "x.json")
    raw = json.loads(model_bytes(load_model()))
    raw["ceiling"] = "novel_word_share"  # not a coverage: more of it is worse
    with pytest.raises(FaithfulnessModelError, match="ceiling 'novel_word_share'"):
        FaithfulnessModel.from_bytes(json.dumps(raw).encode(), "x.json")


PAPER = (
    "We train the parser with explicit supervision on every sentence. The error rate increased "
    "after pruning, and the model became slower."
)


@pytest.mark.parametrize(
    ("answer", "word", "opposite"),
    [
        ("The parser is trained with implicit supervision.", "implicit", "explicit"),
        ("The error rate decreased after pruning.", "decreased", "increase"),
        ("The model became faster after pruning.", "faster", "slow"),
    ],
)
def test_a_word_reversed_by_its_antonym_fails_and_names_both(
    scoring, answer, word, opposite
) -> None:
    v = score(scoring, answer, [PAPER])
    assert v.decision is Decision.FAIL, (v.score, v.evidence["drivers"])
    (finding,) = [f for f in v.evidence["findings"] if f["signal"] == "antonym_swaps"]
    assert finding["text"] == word
    assert opposite in finding["detail"]
    assert finding["context"]["text"] in PAPER  # the supporting sentence, for the console


@pytest.mark.parametrize(
    "answer",
    [
        "The error rate increased after pruning.",
        "The model became slower after pruning.",
        # the answer names both sides: not a swap
        "The error rate increased, not decreased, after pruning.",
    ],
)
def test_the_word_the_support_uses_is_no_antonym_swap(scoring, answer) -> None:
    v = score(scoring, answer, [PAPER])
    assert "antonym_swaps" not in [f["signal"] for f in v.evidence["findings"]]


def test_without_a_lexicon_there_are_no_antonym_swaps(scoring) -> None:
    from verdictflow.evaluators.answer_analysis import AnswerAnalyzer

    event = AnswerEvent(id="a", answer="The error rate decreased after pruning.", contexts=[PAPER])
    (parsed,) = AnswerAnalyzer(scoring.analyzer.nlp).analyze([event])
    assert faithfulness_signals(event, parsed, scoring.ctx).values["antonym_swaps"] == 0.0


# --- Behavioural sanity set ---------------------------------------------------------------
# Hand-written before the signals and the model were revised (issue 16's second round), and kept
# whatever the validation figures do: re-orderings, passive voice and partial quotes of a
# supported fact PASS; one fabricated name, number or date, or an added negation, FAILs. They
# are checks of behaviour a user sees first, not figures to tune on.

CURIE = "Marie Curie discovered polonium in 1898, two years after she began her research."
AMAZON = (
    "The Amazon River, which flows through Peru, Colombia and Brazil, is about 6,400 "
    "kilometres long and carries more water than any other river."
)
BRIDGE = "The mayor opened the new bridge on Monday after two years of construction."
MUSEUM = "The museum opens at 9 am. Tickets cost 12 euros. Children under six enter free."
FRANCE = "France's capital and largest city is Paris, on the Seine."
CATS = ["A cat is on a mat.", "The dog sat."]

SUPPORTED = [
    pytest.param("Paris is the capital of France.", [FRANCE], id="capital-1"),
    pytest.param("The capital of France is Paris.", [FRANCE], id="capital-2"),
    pytest.param("The cat sat on the mat.", CATS, id="cat-both-contexts"),
    pytest.param("the cat sits on the mat", CATS, id="cat-sits"),
    pytest.param("Polonium was discovered by Marie Curie in 1898.", [CURIE], id="passive-voice"),
    pytest.param(
        "After two years of construction, the mayor opened the new bridge on Monday.",
        [BRIDGE],
        id="re-ordered-clauses",
    ),
    pytest.param("The Amazon River is about 6,400 kilometres long.", [AMAZON], id="partial-quote"),
    pytest.param(
        "Children under six enter free, and tickets cost 12 euros.",
        [MUSEUM],
        id="two-sentences-joined-in-reverse",
    ),
    pytest.param(
        "Demonstrators assembled outside the Russian embassy in Berlin on Friday.",
        [CONTEXT],
        id="synonyms",
    ),
]

FABRICATED = [
    pytest.param("It is Lyon, the capital of France.", [FRANCE], "Lyon", id="capital-3-name"),
    pytest.param(
        "Buzz Aldrin was the first person to walk on the Moon in 1972.",
        ["Neil Armstrong became the first person to step onto the lunar surface on July 21, 1969."],
        ("Buzz", "1972"),  # two fabrications: either may drive
        id="moon-1-name-and-date",
    ),
    pytest.param(
        "Polonium was discovered by Ernest Rutherford in 1898.", [CURIE], "Ernest", id="name"
    ),
    pytest.param("Marie Curie discovered polonium in 1911.", [CURIE], "1911", id="date"),
    pytest.param(
        "The Amazon River is about 9,100 kilometres long.", [AMAZON], "9,100", id="number"
    ),
    pytest.param("Tickets cost 15 euros.", [MUSEUM], "15", id="price"),
    pytest.param("Marie Curie did not discover polonium.", [CURIE], None, id="negation"),
    pytest.param("Children under six do not enter free.", [MUSEUM], None, id="negation-2"),
]

# Added once the revised signals existed (regression checks of the same two rules, not tuned):
# one wrong name among many right facts still FAILs (no dilution by length), and a fronted date
# is a re-ordering like any other.
LONG_MUSEUM = (
    "The museum opens at 9 am and tickets cost 12 euros. Children under six enter free. The "
    "collection includes paintings by Rembrandt and {painter}. Guided tours start at noon on "
    "Saturdays."
)
MUSEUM_LONG_CONTEXT = (
    MUSEUM + " The collection includes paintings by Rembrandt and Vermeer. Guided tours start "
    "at noon on Saturdays."
)
SUPPORTED += [
    pytest.param("In 1898 Marie Curie discovered polonium.", [CURIE], id="fronted-date"),
    pytest.param(LONG_MUSEUM.format(painter="Vermeer"), [MUSEUM_LONG_CONTEXT], id="long-answer"),
]
FABRICATED += [
    pytest.param(
        LONG_MUSEUM.format(painter="Monet"),
        [MUSEUM_LONG_CONTEXT],
        "Monet",
        id="one-name-in-a-long-answer",
    ),
]


@pytest.mark.parametrize(("answer", "contexts"), SUPPORTED)
def test_sanity_a_supported_fact_passes_however_it_is_worded(scoring, answer, contexts) -> None:
    v = score(scoring, answer, contexts)
    assert v.decision is Decision.PASS, (v.score, v.evidence["factors"], v.evidence["drivers"])


@pytest.mark.parametrize(("answer", "contexts", "span"), FABRICATED)
def test_sanity_one_fabricated_detail_fails_and_names_its_span(
    scoring, answer, contexts, span
) -> None:
    v = score(scoring, answer, contexts)
    assert v.decision is Decision.FAIL, (v.score, v.evidence["factors"], v.evidence["drivers"])
    reason = next(r for r in v.reasons if r.code is ReasonCode.UNSUPPORTED_DETAIL)
    if span is not None:  # the driving span is the fabricated word, and the console can mark it
        spans = (span,) if isinstance(span, str) else span
        assert any(repr(s)[:-1] in reason.detail for s in spans), reason.detail
        assert any(s in f["text"] for s in spans for f in v.evidence["findings"])
    else:
        assert "negation_flipped" in reason.detail, reason.detail


# --- Paraphrase signals (WordNet stand-ins) -------------------------------------------------

DISTANT = "Astronomers used the telescope to study distant galaxies in the federal observatory."


def paraphrase_signals(scoring: Scoring, answer: str) -> dict[str, float]:
    event = AnswerEvent(id="a", answer=answer, contexts=[DISTANT])
    (parsed,) = scoring.analyzer.analyze([event])
    return faithfulness_signals(event, parsed, scoring.ctx).values


def test_a_synonym_of_a_dropped_word_counts_as_supported(scoring) -> None:
    values = paraphrase_signals(scoring, "Astronomers used the telescope to study remote galaxies.")
    assert values["paraphrased_share"] == 1.0  # "remote" stands for "distant"
    assert values["min_paraphrase_coverage"] > values["min_sentence_coverage"]


def test_a_sister_word_is_no_paraphrase(scoring) -> None:
    values = paraphrase_signals(
        scoring, "Astronomers used the telescope to study galaxies in the provincial observatory."
    )
    assert values["paraphrased_share"] == 0.0  # "provincial" does not stand for "federal"
    assert values["min_paraphrase_coverage"] == values["min_sentence_coverage"]


def test_an_antonym_is_never_a_stand_in(scoring) -> None:
    # "decreased" would stand for "slow" (a relative in WordNet), but it reverses "increased"
    v = score(scoring, "The error rate decreased after pruning.", [PAPER])
    values = {s["name"]: s["value"] for s in v.evidence["signals"]}
    assert values["paraphrased_share"] == 0.0
    assert values["antonym_swaps"] > 0


def test_questions_back_and_pleasantries_are_not_checked_as_claims(scoring) -> None:
    plain = score(scoring, "Protesters gathered in front of the Russian embassy in Berlin.")
    chat = score(
        scoring,
        "Great question! Protesters gathered in front of the Russian embassy in Berlin. "
        "Have you ever been to Vienna?",
    )
    assert chat.decision is Decision.PASS, chat.evidence
    assert chat.score == pytest.approx(plain.score, abs=0.05)
    # nor do they lower the ceiling: Q1 of the claims, not of the turn (0.53 here)
    assert chat.evidence["ceiling"]["value"] == 1.0
    # the question's name is not a fabricated fact: it claims nothing
    assert "Vienna" not in findings(chat, "novel_propn") + findings(chat, "fabricated_facts")
    # the same name stated as a fact is one
    stated = score(
        scoring, "Protesters gathered in front of the Russian embassy in Berlin and Vienna."
    )
    assert stated.score < plain.score


def test_an_acknowledgement_is_not_a_claim(scoring) -> None:
    """A turn that opens by acknowledging the user ("Yeah.", "That's true.", "I see.") is
    scored on what it goes on to state: the acknowledgement's words are in no context."""
    fact = "Protesters gathered in front of the Russian embassy in Berlin."
    plain = score(scoring, fact)
    for opener in ("Yeah.", "That's true.", "Oh, I see.", "You're right, I didn't know that."):
        chat = score(scoring, f"{opener} {fact}")
        assert chat.decision is Decision.PASS, (opener, chat.evidence)
        assert chat.score == pytest.approx(plain.score, abs=0.02), opener
    # a sentence with a word of its own still is a claim
    told = score(scoring, f"That's true for the winter palace. {fact}")
    assert told.score < plain.score - 0.05


def test_a_turn_that_claims_nothing_defers(scoring) -> None:
    for answer in (
        "Which embassy do you mean?",
        "You're welcome, glad I could help!",
        "Yeah, that's true!",
    ):
        v = score(scoring, answer)
        assert v.decision is Decision.DEFER, answer
        assert v.reasons[0].code is ReasonCode.NO_ANCHORS
        assert "no claim" in v.reasons[0].detail or "no number" in v.reasons[0].detail


def test_a_swapped_role_fails_with_the_supporting_sentence_as_evidence(scoring) -> None:
    context = ["Oracle acquired Sun Microsystems in 2010 for 7.4 billion dollars."]
    right = score(scoring, "Oracle acquired Sun Microsystems in 2010.", context)
    swapped = score(scoring, "Sun Microsystems acquired Oracle in 2010.", context)
    assert right.decision is Decision.PASS, right.evidence
    assert swapped.decision is Decision.FAIL, swapped.evidence
    (finding,) = [f for f in swapped.evidence["findings"] if f["signal"] == "role_swaps"]
    assert "Oracle acquired Sun Microsystems" in finding["context"]["text"]


def test_digits_that_int_cannot_read_are_not_taken_for_a_number_word() -> None:
    """A run such as "3²" passes ``str.isdigit`` but not ``int``: it is no spelled-out number."""
    from verdictflow.evaluators.answer_claims import AnswerToken
    from verdictflow.evaluators.faithfulness_signals import _spelled_before

    token = AnswerToken("3²", "3²", "NUM", 0, 2, False)
    assert _spelled_before(token, [token], []) is False


def test_the_hallucination_verdict_and_the_signals_share_one_anchor_check(
    scoring: Scoring, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Both read the same check of the answer's anchors: it is computed once an answer (it was
    computed twice, ~0.4 ms an answer on RAG traffic), again only for other drift settings."""
    real = answer_analysis.hallucination
    calls: list[float] = []

    def counted(*args: object, **kwargs: float) -> HallucinationResult:
        calls.append(kwargs["drift_min_overlap"])
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(answer_analysis, "hallucination", counted)
    event = AnswerEvent(
        id="a", answer="About 3,000 people protested in Berlin.", contexts=[CONTEXT]
    )
    (parsed,) = scoring.analyzer.analyze([event])
    hallucination = score_hallucination(event, parsed, scoring.ctx)
    faithfulness = score_faithfulness(event, parsed, scoring.ctx)
    assert calls == [Policy().hallucination.drift_min_overlap]
    unsupported = [
        a["text"] for a in hallucination.evidence["anchors"] if a["support"] == "unsupported"
    ]
    assert "3,000" in " ".join(unsupported)  # the context: about 2,000
    assert "3,000" in " ".join(findings(faithfulness, "fabricated_facts"))
    parsed.anchor_checks(HallucinationPolicy(drift_min_overlap=0.5))
    assert calls == [Policy().hallucination.drift_min_overlap, 0.5]
