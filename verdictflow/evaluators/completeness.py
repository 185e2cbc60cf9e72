"""Completeness (spec 003): the share of the query's keywords that the response contains.

Keywords: NLTK's Treebank word tokenizer (``NLTKWordTokenizer``, which needs no downloaded data,
unlike ``nltk.word_tokenize`` whose sentence splitter needs punkt), after NFKC and lowercasing;
tokens that are stop words (scikit-learn's English list, the same as relevance uses) or not
alphanumeric are dropped. "Alphanumeric" admits inner hyphens, so "covid-19" and "state-of-the-art"
stay one keyword each; contractions and punctuation ("n't", "'s", "?") go. A query with no
keyword scores 1.0 (the spec's default), and the verdict says so.

Speed: NLTK 3.10 runs each of the tokenizer's ~40 substitutions through its ReDoS guard (the
third-party ``regex`` engine under a wall-clock timeout), ~450 us for a 75-character answer and
its query, most of the lexical tier's time. Those guards are for caller-supplied patterns; the
Treebank patterns are fixed, and were run by the standard ``re`` engine for a decade. So the
tokenizer here (:class:`TreebankWords`) runs NLTK's ``NLTKWordTokenizer.tokenize`` rule for
rule, in its order, with NLTK's own pattern strings compiled by ``re``, and is token for token
NLTK's on the 45,111 texts of ``../shared/data`` (25 MB; ``tests/evaluators/
test_completeness.py`` keeps checking, with a Hypothesis property over the rules' characters).

Each of its ~33 substitutions is also skipped when the text cannot match it: nearly every rule
needs a literal string (a quote, a bracket, ``;@#$%&``, a period, ...), and looking for those
costs far less than the substitution's pass. A rule is skipped only when none of its required
strings is in the text as it stands at that rule (earlier rules insert quotes and spaces), so
skipping cannot change a token; a pattern this module does not know (a new NLTK version) is
always run. Most text is ASCII without a quote mark, where no rule can insert a string another
rule needs: there the rules to run are known from the text's marks at once, and kept per set
of marks (:meth:`TreebankWords._tokenize_planned`). Replacement templates are compiled once
(``re`` parses a template string at every call), the two sentence-final period rules match at
the last period only, and the whitespace rule runs only when a quote is left for the rules that
read spacing. Measured on the benchmark's answers: keywords of a query and its answer 142-237 us
before the skipping, 46-68 us after it, ~78 us on 2026-11-29 and ~43 us with the plans
(``docs/benchmarks.md``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from verdictflow.evaluators import text_normalise
from verdictflow.evaluators.tokenize import stop_words

TOKENIZER_VERSION = (
    f"nltk-treebank-word:{text_normalise.VERSION}+lower:alnum(-):stop=sklearn-english"
)


def _stdlib_pattern(pattern: Any) -> re.Pattern[str]:
    """``pattern`` (an NLTK ``TimedPattern`` or a ``re.Pattern``) compiled by ``re``, with the
    flags both engines share (the ``regex`` engine adds its own version and Unicode bits)."""
    inner = getattr(pattern, "_rx", pattern)
    shared = re.IGNORECASE | re.MULTILINE | re.DOTALL | re.VERBOSE
    return re.compile(inner.pattern, inner.flags & shared)


#: For each Treebank pattern (its source text), strings of which the text must hold one for the
#: pattern to match: every alternative of the pattern starts with, or contains, one of them.
#: Patterns not listed (``\\s+``) always run.
_REQUIRED: dict[str, tuple[str, ...]] = {
    # starting quotes
    "([«“‘„]|[`]+)": ("«", "“", "‘", "„", "`"),
    r"^\"": ('"',),
    r"(``)": ("``",),
    r"([ \(\[{<])(\"|\'{2})": ('"', "''"),
    r"(?i)(?<!\w)(\')(?!(?:re|ve|ll|m|t|s|d|n)\b)(?=\w)": ("'",),
    # punctuation
    r'([^\.])(\.)([\]\)}>"\'' "»”’ " r"]*+)\s*$": (".",),
    r"([:,])([^\d])": (":", ","),
    r"([:,])$": (":", ","),
    r"\.{2,}": ("..",),
    r"[;@#$%&]": (";", "@", "#", "$", "%", "&"),
    r"[\u2012-\u2015]": ("\u2012", "\u2013", "\u2014", "\u2015"),
    r'([^\.])(\.)([\]\)}>"\']*)\s*$': (".",),
    r"[?!]": ("?", "!"),
    r"([^'])' ": ("' ",),
    r"[*]": ("*",),
    r"[\]\[\(\)\{\}\<\>]": tuple("[](){}<>"),
    r"--": ("--",),
    # ending quotes
    "([»”’])": ("»", "”", "’"),
    r"''": ("''",),
    r'"': ('"',),
    r"([^' ])('[sS]|'[mM]|'[dD]|') ": ("'",),
    r"([^' ])('ll|'LL|'re|'RE|'ve|'VE|n't|N'T) ": ("'",),
    # contractions, case-insensitive: the strings are looked for in the lowercased text, and
    # only when it is ASCII (IGNORECASE also folds a few non-ASCII letters onto ASCII ones)
    r"(?i)\b(can)(?#X)(not)\b": ("cannot",),
    r"(?i)\b(d)(?#X)('ye)\b": ("'",),
    r"(?i)\b(gim)(?#X)(me)\b": ("gimme",),
    r"(?i)\b(gon)(?#X)(na)\b": ("gonna",),
    r"(?i)\b(got)(?#X)(ta)\b": ("gotta",),
    r"(?i)\b(lem)(?#X)(me)\b": ("lemme",),
    r"(?i)\b(more)(?#X)('n)\b": ("'",),
    r"(?i)\b(wan)(?#X)(na)(?=\s)": ("wanna",),
    r"(?i) ('t)(?#X)(is)\b": ("'",),
    r"(?i) ('t)(?#X)(was)\b": ("'",),
}

#: The two sentence-final period rules: anchored at the text's end, so only the last period
#: can be the one they match (a later period is neither a closing bracket, a quote nor space).
_FINAL_PERIOD = (
    r'([^\.])(\.)([\]\)}>"\'' "»”’ " r"]*+)\s*$",
    r'([^\.])(\.)([\]\)}>"\']*)\s*$',
)


#: A replacement template's group references: ``\\1`` or ``\\g<1>``.
_GROUP_REFERENCE = re.compile(r"\\(?:(\d+)|g<(\d+)>)")

#: A replacement: a template string, or a function of the match.
_Replacement = str | Callable[[re.Match[str]], str]


def _replacement(template: str) -> _Replacement:
    """``template`` as a function of the match that gives the same string: ``re`` parses a
    template string again on every ``sub`` call (~5 us, most of a rule's cost on a short text).
    A template without a group reference, or with any other escape, stays a string."""
    literals = _GROUP_REFERENCE.split(template)
    if len(literals) == 1 or any("\\" in part for part in literals[::3] if part):
        return template  # a plain string (re inserts it as it is), or an escape kept for re
    parts: list[str | int] = []
    for i in range(0, len(literals), 3):
        if literals[i]:
            parts.append(literals[i])
        if i + 1 < len(literals):
            parts.append(int(literals[i + 1] or literals[i + 2]))

    def expand(match: re.Match[str]) -> str:
        # an unmatched group expands to nothing, as in a template string
        return "".join(p if isinstance(p, str) else match[p] or "" for p in parts)

    return expand


@dataclass(frozen=True, slots=True)
class _Rule:
    """One substitution: its pattern and replacement, the strings of which the text must hold
    one for it to match (None: always run), whether it can match only at the last period, and
    whether it is the one that collapses whitespace runs."""

    pattern: re.Pattern[str]
    replacement: _Replacement
    needs: tuple[str, ...] | None
    final_period: bool
    whitespace: bool

    def apply(self, text: str) -> str:
        if not self.final_period:
            return self.pattern.sub(self.replacement, text)
        at = text.rfind(".")
        if at < 1:  # the pattern needs a character that is not a period before the period
            return text
        found = self.pattern.match(text, at - 1)
        if found is None:
            return text
        replacement = self.replacement
        expanded = found.expand(replacement) if isinstance(replacement, str) else replacement(found)
        return text[: at - 1] + expanded + text[found.end() :]


def _rules(pairs: Any, replacement: str | None = None) -> tuple[_Rule, ...]:
    """NLTK's ``(pattern, replacement)`` pairs (or bare patterns with one ``replacement``)
    compiled by ``re``, each with its required strings."""
    out = []
    for item in pairs:
        rx, sub = (item, replacement) if replacement is not None else item
        compiled = _stdlib_pattern(rx)
        final = compiled.pattern in _FINAL_PERIOD and not compiled.flags & re.MULTILINE
        spaces = compiled.pattern == r"\s+" and sub == " "
        needs = _REQUIRED.get(compiled.pattern)
        out.append(_Rule(compiled, _replacement(sub), needs, final, spaces))
    return tuple(out)


def _holds_one(text: str, needs: tuple[str, ...]) -> bool:
    for string in needs:  # noqa: SIM110 - ``any`` over a generator costs more than the search
        if string in text:
            return True
    return False


def _apply(rules: Sequence[_Rule], text: str) -> str:
    """Run each rule unless the text, as it stands at that rule, holds none of its required
    strings. Whitespace runs are collapsed only when a quote is left: no later rule but the
    quote ones reads how many spaces there are, and the final split does not care."""
    for rule in rules:
        if rule.whitespace and "'" not in text:
            continue
        if rule.needs is not None and not _holds_one(text, rule.needs):
            continue
        text = rule.apply(text)
    return text


def _apply_ignoring_case(rules: Sequence[_Rule], text: str) -> str:
    """:func:`_apply` for case-insensitive rules: their strings are looked for in the
    lowercased text, and none is skipped when the text is not ASCII (``IGNORECASE`` also folds
    a few non-ASCII letters onto ASCII ones)."""
    if not text.isascii():
        for rule in rules:
            text = rule.apply(text)
        return text
    lowered = text_normalise.lower(text)
    for rule in rules:
        if rule.needs is not None and not _holds_one(lowered, rule.needs):
            continue
        changed = rule.apply(text)
        if changed != text:
            text, lowered = changed, text_normalise.lower(changed)
    return text


#: ASCII quote marks: the only characters a rule inserts besides spaces (``"`` becomes two
#: backticks or two apostrophes), and what the rules that read spacing look for.
_ASCII_QUOTES = ("'", '"', "`")

#: An ASCII character that is not a letter, a digit or whitespace: what a rule may look for.
_ASCII_MARK = re.compile(r"[^A-Za-z0-9\s]")

#: Plans kept (one per set of marks and contraction words seen; a few dozen on real text).
_MAX_PLANS = 4096


class TreebankWords:
    """NLTK's ``NLTKWordTokenizer.tokenize`` (default arguments), rule for rule in its order,
    with its own patterns compiled by ``re`` and rules that cannot match skipped.

    Most text is ASCII without a quote mark. There no rule can put a string another rule
    needs into the text (rules insert spaces around what they matched, which makes no new
    ``..``, ``--`` or word), so which rules can match is known from the text as given: one
    look for each required string, and the rules to run for that set of strings, kept per set.
    Running a rule whose strings an earlier rule broke up is harmless (NLTK runs every rule).
    """

    def __init__(self) -> None:
        from verdictflow.nltk_import import import_nltk

        import_nltk()  # without SciPy and scikit-learn, which NLTK would import too
        from nltk.tokenize import NLTKWordTokenizer as T

        self.starting_quotes = _rules(T.STARTING_QUOTES)
        self.punctuation = _rules([*T.PUNCTUATION, T.PARENS_BRACKETS, T.DOUBLE_DASHES])
        self.ending_quotes = _rules(T.ENDING_QUOTES)
        self.contractions = _rules([*T.CONTRACTIONS2, *T.CONTRACTIONS3], r" \1 \2 ")
        before = self.starting_quotes + self.punctuation
        after = self.ending_quotes + self.contractions
        strings = {s for rule in before + after for s in rule.needs or ()}
        #: Whether every rule but the whitespace one has required strings (NLTK's rules do; a
        #: new version's unknown pattern turns the fast path off).
        self._plannable = all(r.needs is not None or r.whitespace for r in before + after)
        #: The rules' one-character strings, longer ones (``..``), and words (``gonna``).
        self._marks = frozenset(s for s in strings if len(s) == 1)
        self._longer = sorted(s for s in strings if len(s) > 1 and not s.isalpha())
        self._words = sorted(s for s in strings if s.isalpha())
        self._any_word = re.compile("|".join(map(re.escape, self._words)))
        self._plans: dict[frozenset[str], tuple[tuple[_Rule, ...], tuple[_Rule, ...]]] = {}

    def tokenize(self, text: str) -> list[str]:
        if self._plannable and text.isascii() and not _holds_one(text, _ASCII_QUOTES):
            return self._tokenize_planned(text)
        text = _apply(self.starting_quotes, text)
        text = _apply(self.punctuation, text)
        text = _apply(self.ending_quotes, " " + text + " ")
        return _apply_ignoring_case(self.contractions, text).split()

    def _tokenize_planned(self, text: str) -> list[str]:
        """ASCII text without a quote mark: the rules its strings call for, in NLTK's order,
        with NLTK's padding between the punctuation and the ending quotes."""
        present = self._present(text)
        plan = self._plans.get(present)
        if plan is None:
            if len(self._plans) >= _MAX_PLANS:
                self._plans.clear()
            plan = self._plans[present] = self._plan(present)
        before, after = plan
        for rule in before:
            text = rule.apply(text)
        text = " " + text + " "
        for rule in after:
            text = rule.apply(text)
        return text.split()

    def _present(self, text: str) -> frozenset[str]:
        """The rules' strings in ``text`` (ASCII, no quote mark): its marks, the longer strings
        made of them, and (lowercased) the contraction words."""
        marks = frozenset(_ASCII_MARK.findall(text))
        present = self._marks & marks
        longer = [s for s in self._longer if s[0] in marks and s in text]
        lowered = text_normalise.lower(text)
        words = self._any_word.search(lowered) is not None
        if not longer and not words:
            return present
        return present.union(longer, (w for w in self._words if w in lowered) if words else ())

    def _plan(self, present: frozenset[str]) -> tuple[tuple[_Rule, ...], tuple[_Rule, ...]]:
        """The rules to run before and after the padding on a text holding ``present``."""

        def called_for(rules: tuple[_Rule, ...]) -> tuple[_Rule, ...]:
            return tuple(r for r in rules if not present.isdisjoint(r.needs or ()))

        before = called_for(self.starting_quotes + self.punctuation)
        return before, called_for(self.ending_quotes + self.contractions)


@lru_cache(maxsize=1)
def _tokenizer() -> TreebankWords:
    return TreebankWords()


def keywords(text: str) -> list[str]:
    """Distinct keywords of ``text`` in first-seen order."""
    normalised = text_normalise.lower(text_normalise.clean(text))
    stop = stop_words()
    seen: dict[str, None] = {}
    for token in _tokenizer().tokenize(normalised):
        if token in stop or not token.replace("-", "").isalnum():
            continue
        seen.setdefault(token, None)
    return list(seen)


@dataclass(frozen=True, slots=True)
class CompletenessResult:
    score: float
    query_keywords: tuple[str, ...]
    found: tuple[str, ...]
    missing: tuple[str, ...]

    @property
    def no_keywords(self) -> bool:
        return not self.query_keywords


def completeness(query: str, response: str) -> CompletenessResult:
    """|query keywords in the response| / |query keywords|; 1.0 when the query has none."""
    query_keywords = keywords(query)
    response_keywords = set(keywords(response))
    found = tuple(k for k in query_keywords if k in response_keywords)
    missing = tuple(k for k in query_keywords if k not in response_keywords)
    score = len(found) / len(query_keywords) if query_keywords else 1.0
    return CompletenessResult(score, tuple(query_keywords), found, missing)
