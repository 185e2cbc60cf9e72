"""The attribute ruler's matches found by table lookups instead of spaCy's general ``Matcher``.

Why: the English pipeline's ``attribute_ruler`` (the tag map, lemma and morphology
exceptions: 179 rules) was 17 % of every parse on the 2-core VM (2.9-3.1 of 16.8-17.9 ms an
answer of ~63 tokens, more than the tagger and the parser together). spaCy's ``Matcher`` starts
every rule at every token and calls its 20 set and regex predicates, written in Python, on
every token (~600,000 predicate calls for 600 answers). The rules here read only a token's own
attributes (``LOWER``, ``TAG``, ``DEP``, ``IS_SPACE``), so which of them a token satisfies is a
function of those few values: the tests a value passes are worked out once per attribute and
value, a token's matches once per combination of values, and looked up after that.

Only :meth:`AttributeRuler.match` is replaced; spaCy's own ``set_annotations`` still applies
the matches, and :class:`RuleMatches` returns exactly the list the ruler's ``match`` returns
(the same ``(rule, match id, start, end)`` tuples, deduplicated and sorted: later rules win),
so every part of speech, lemma and morphology is the same
(``tests/test_attribute_rules.py``; ``python bench/attribute_rules.py`` over texts of every
data set in ``../shared/data``). A ruler whose patterns use anything else (operators such as ``OP``,
other attributes, comparisons) keeps spaCy's matching, as does a ruler given rules after this
was built.
"""

from __future__ import annotations

import logging
import re
from typing import Any

logger = logging.getLogger(__name__)

#: Token attributes a rule may test here: plain attributes, read by ``Doc.to_array`` exactly as
#: the ``Matcher`` reads them (``get_token_attr``).
SUPPORTED_ATTRS = ("ORTH", "LOWER", "NORM", "TAG", "DEP", "POS", "IS_SPACE")
#: Distinct attribute values, and combinations of them, kept (each table cleared when full): a
#: working vocabulary's worth, at most ~15 MB of tables.
CACHE_ENTRIES = 50_000


#: A token's single-token matches (rule, match id), the longer patterns whose first token it
#: matches (rule, match id, tests of each token), and the ids of the tests it passes.
_TokenMatches = tuple[
    list[tuple[int, int]], list[tuple[int, int, tuple[tuple[int, ...], ...]]], frozenset[int]
]


class UnsupportedRuleError(ValueError):
    """A pattern this module does not match exactly the way spaCy's ``Matcher`` does."""


class _Test:
    """One attribute test of a token pattern, on the attribute's id (hash) as ``to_array``
    gives it: equality, ``IN``, ``NOT_IN`` (ids, as spaCy's set predicate compares them) or
    ``REGEX`` (``search`` on the attribute's string, as spaCy's regex predicate does)."""

    def __init__(self, column: int, kind: str, value: Any) -> None:
        self.column = column
        self.kind = kind
        self.value = value

    def passes(self, got: int, strings: Any) -> bool:
        if self.kind == "==":
            return bool(got == self.value)
        if self.kind == "IN":
            return got in self.value
        if self.kind == "NOT_IN":
            return got not in self.value
        return bool(self.value.search(strings[got]))


class RuleMatches:
    """A drop-in for ``AttributeRuler.match`` (see the module's docstring)."""

    def __init__(self, ruler: Any) -> None:
        """Compiles ``ruler``'s patterns; :class:`UnsupportedRuleError` if one cannot be."""
        from spacy import attrs as spacy_attrs
        from spacy.strings import get_string_id

        self._ruler = ruler
        self._rules = len(ruler.attrs)
        strings = ruler.vocab.strings
        columns: dict[str, int] = {}
        tests: dict[tuple[int, str, Any], int] = {}
        found_tests: list[_Test] = []

        def test_id(attr: str, value: Any) -> int:
            if attr not in SUPPORTED_ATTRS:
                raise UnsupportedRuleError(f"attribute {attr!r}")
            column = columns.setdefault(attr, len(columns))
            kind: str
            arg: Any
            key: Any
            if isinstance(value, bool):
                kind, arg, key = "==", int(value), int(value)
            elif isinstance(value, str):
                kind, arg, key = "==", strings.add(value), strings.add(value)
            elif isinstance(value, dict) and len(value) == 1:
                ((kind, arg),) = value.items()
                if kind in ("IN", "NOT_IN") and isinstance(arg, list):
                    if not all(isinstance(v, str) for v in arg):
                        raise UnsupportedRuleError(f"{kind} of non-strings")
                    ids = frozenset(get_string_id(v) for v in arg)
                    arg, key = ids, ids
                elif kind == "REGEX" and isinstance(arg, str):
                    key, arg = arg, re.compile(arg)
                else:
                    raise UnsupportedRuleError(f"operator {kind!r}")
            else:
                raise UnsupportedRuleError(f"value {value!r}")
            found = tests.get((column, kind, key))
            if found is None:
                found = tests[(column, kind, key)] = len(found_tests)
                found_tests.append(_Test(column, kind, arg))
            return found

        # Per rule pattern: (rule, match id, each token's tests).
        patterns: list[tuple[int, int, tuple[tuple[int, ...], ...]]] = []
        for rule, entry in enumerate(ruler.patterns):
            match_id = strings[str(rule)]
            for pattern in entry["patterns"]:
                if not pattern:
                    raise UnsupportedRuleError("an empty pattern")
                tokens = []
                for spec in pattern:
                    if not isinstance(spec, dict) or not spec:  # ``{}``: any token
                        raise UnsupportedRuleError(f"token pattern {spec!r}")
                    tokens.append(tuple(test_id(str(a).upper(), v) for a, v in spec.items()))
                patterns.append((rule, match_id, tuple(tokens)))
        self._attr_ids = [getattr(spacy_attrs, name) for name in columns]
        # Every test reads one column, so which tests a value passes is worked out once per
        # (column, value); equality tests are found by the value they want, the rest (sets,
        # regular expressions: a few dozen) run on each new value.
        self._equal: dict[tuple[int, int], list[int]] = {}
        self._other: list[list[tuple[int, _Test]]] = [[] for _ in columns]
        for i, test in enumerate(found_tests):
            if test.kind == "==":
                self._equal.setdefault((test.column, test.value), []).append(i)
            else:
                self._other[test.column].append((i, test))
        self._passes: list[dict[int, frozenset[int]]] = [{} for _ in columns]
        #: One object per distinct set of passed tests, shared by every value that passes it.
        self._interned: dict[frozenset[int], frozenset[int]] = {}
        # Patterns by their first token's first test: a token is tried only on the patterns
        # whose first test it passes.
        self._single: dict[int, list[tuple[int, int, tuple[int, ...]]]] = {}
        self._longer: dict[int, list[tuple[int, int, tuple[tuple[int, ...], ...]]]] = {}
        for rule, match_id, specs in patterns:
            if len(specs) == 1:
                self._single.setdefault(specs[0][0], []).append((rule, match_id, specs[0]))
            else:
                self._longer.setdefault(specs[0][0], []).append((rule, match_id, specs))
        #: By the tests a token's values pass, one set per attribute (a handful of distinct
        #: combinations, however large the vocabulary): the single-token matches' (rule, match
        #: id), the longer patterns whose first token it matches, and every test it passes.
        self._by_passed: dict[tuple[frozenset[int], ...], _TokenMatches] = {}

    def __call__(self, doc: Any) -> list[tuple[int, int, int, int]]:
        if len(self._ruler.attrs) != self._rules:  # rules added since: spaCy's own matching
            return list(type(self._ruler).match(self._ruler, doc))
        n = len(doc)
        if n == 0:
            return []
        array = doc.to_array(self._attr_ids)
        columns = [array.tolist()] if array.ndim == 1 else [c.tolist() for c in array.T]
        passed_by_column = []
        for column, values in enumerate(columns):
            known = self._passes[column].get  # an empty set is a value: no ``or`` here
            row = []
            for value in values:
                seen = known(value)
                row.append(self._passed(column, value) if seen is None else seen)
            passed_by_column.append(row)
        by_passed = self._by_passed
        if len(by_passed) >= CACHE_ENTRIES:
            by_passed.clear()
        tokens = []
        for passed in zip(*passed_by_column, strict=True):
            found = by_passed.get(passed)
            if found is None:
                found = by_passed[passed] = self._token_matches(passed)
            tokens.append(found)
        matches = set()
        for i, (single, starts, _) in enumerate(tokens):
            for rule, match_id in single:
                matches.add((rule, match_id, i, i + 1))
            for rule, match_id, specs in starts:
                width = len(specs)
                if i + width <= n and all(
                    tokens[i + j][2].issuperset(specs[j]) for j in range(1, width)
                ):
                    matches.add((rule, match_id, i, i + width))
        return sorted(matches)

    def _token_matches(self, by_column: tuple[frozenset[int], ...]) -> _TokenMatches:
        passed = frozenset().union(*by_column)
        single = [
            (rule, m)
            for first in passed
            for rule, m, tests in self._single.get(first, ())
            if passed.issuperset(tests)
        ]
        starts = [
            (rule, m, specs)
            for first in passed
            for rule, m, specs in self._longer.get(first, ())
            if passed.issuperset(specs[0])
        ]
        return single, starts, passed

    def _passed(self, column: int, value: int) -> frozenset[int]:
        """The tests ``value`` passes in ``column`` (cached)."""
        known = self._passes[column]
        found = known.get(value)
        if found is None:
            if len(known) >= CACHE_ENTRIES:
                known.clear()
            strings = self._ruler.vocab.strings
            found = frozenset(
                [
                    *self._equal.get((column, value), ()),
                    *(i for i, test in self._other[column] if test.passes(value, strings)),
                ]
            )
            found = known[value] = self._interned.setdefault(found, found)
        return found


def faster_attribute_rules(nlp: Any) -> bool:
    """Give the pipeline's ``attribute_ruler`` a :class:`RuleMatches`; False (and spaCy's own
    matching kept) when it has none or a pattern cannot be matched here."""
    if "attribute_ruler" not in nlp.component_names:
        return False
    ruler = nlp.get_pipe("attribute_ruler")
    try:
        ruler.match = RuleMatches(ruler)
    except UnsupportedRuleError as e:
        logger.info("attribute ruler left to spaCy's Matcher: %s", e)
        return False
    return True
