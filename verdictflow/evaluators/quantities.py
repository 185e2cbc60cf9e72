"""Numbers and dates as values, so "3.2 billion" matches "3,200,000,000" and "March 3, 2021"
matches "3 March 2021".

Why hand-written: the libraries that parse number words (word2number, text2num) or free-form
dates (dateparser) are not in our dependency set, and the forms that occur in spaCy's MONEY /
CARDINAL / PERCENT / QUANTITY / DATE / TIME entities are few and regular. Values are exact
``Decimal`` numbers (no float rounding surprises), and matching is explicit about precision:
an answer that says "3.2 billion" for a context's "3,215,000,000" rounded honestly, so a value
matches when the context value rounded to the answer's significant digits equals it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation

_UNITS = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13,
    "fourteen": 14, "fifteen": 15, "sixteen": 16, "seventeen": 17, "eighteen": 18,
    "nineteen": 19, "twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60,
    "seventy": 70, "eighty": 80, "ninety": 90, "a": 1, "an": 1, "half": 0.5,
}  # fmt: skip
#: A whole number up to twenty, or a ten up to ninety, as the one word that writes it (2 ->
#: "two", 50 -> "fifty").
NUMBER_WORDS: dict[int, str] = {
    int(value): word for word, value in _UNITS.items() if word not in ("a", "an", "half")
}
_SCALES = {
    "hundred": 100, "thousand": 1_000, "k": 1_000, "million": 1_000_000, "m": 1_000_000,
    "mn": 1_000_000, "mln": 1_000_000, "billion": 1_000_000_000, "bn": 1_000_000_000,
    "b": 1_000_000_000, "trillion": 1_000_000_000_000, "tn": 1_000_000_000_000,
    "dozen": 12, "dozens": 12,
}  # fmt: skip
_MONTHS = {
    name: i
    for i, names in enumerate(
        (
            ("january", "jan"), ("february", "feb"), ("march", "mar"), ("april", "apr"),
            ("may",), ("june", "jun"), ("july", "jul"), ("august", "aug"),
            ("september", "sep", "sept"), ("october", "oct"), ("november", "nov"),
            ("december", "dec"),
        ),
        start=1,
    )
    for name in names
}  # fmt: skip
_NUMBER = re.compile(r"(?<![\w.])(?:(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?|\.\d+)(?![\d,.]\d)")
_WORD = re.compile(r"[a-z]+")
_ISO_DATE = re.compile(r"\b(\d{4})-(\d{1,2})-(\d{1,2})\b")
_SLASH_DATE = re.compile(r"\b(\d{1,2})/(\d{1,2})/(\d{2,4})\b")
_YEAR = re.compile(r"(?<!\d)(1[5-9]\d\d|20\d\d|2100)(?:s)?(?!\d)")
_DAY = re.compile(r"(?<!\d)([12]?\d|3[01])(?:st|nd|rd|th)?(?!\d)")
_CLOCK = re.compile(r"\b(\d{1,2})(?::(\d{2}))?\s*(a\.?m\.?|p\.?m\.?)?(?![\w])", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class Quantity:
    """A numeric value with the significant digits it was stated with, and whether it is a %."""

    value: Decimal
    significant: int
    percent: bool = False

    def matches(self, other: Quantity) -> bool:
        """True when ``other`` (from the context) rounds to this value at its precision."""
        if self.percent != other.percent:
            return False
        if self.value == other.value:
            return True
        return self.value != 0 and other.rounded(self.significant) == self.value

    def rounded(self, digits: int) -> Decimal:
        """This value rounded half up to ``digits`` significant digits."""
        return _round_significant(self.value, digits)


def _round_significant(value: Decimal, digits: int) -> Decimal:
    if value == 0:
        return value
    quantum = Decimal(1).scaleb(value.adjusted() - digits + 1)
    return value.quantize(quantum, rounding=ROUND_HALF_UP).normalize()


def _significant(digits: str) -> int:
    stripped = digits.replace(",", "").replace(".", "").lstrip("0")
    if "." not in digits:
        stripped = stripped.rstrip("0") or stripped
    return max(1, len(stripped))


def parse_quantity(text: str) -> Quantity | None:
    """The value stated by an entity such as "$3.2 billion", "12%", "1,200", "twenty-five".

    Returns None when ``text`` states no number (e.g. "several").
    """
    lowered = text.lower().replace("\u2212", "-")
    percent = "%" in lowered or "percent" in lowered or "per cent" in lowered
    match = _NUMBER.search(lowered)
    if match:
        raw = match.group(0)
        try:
            value = Decimal(raw.replace(",", ""))
        except InvalidOperation:
            return None
        significant = _significant(raw)
        tail = lowered[match.end() :]
        for word in _WORD.findall(tail)[:2]:
            if word in _SCALES:
                value *= _SCALES[word]
                break
    else:
        parsed = _parse_number_words(_WORD.findall(lowered.replace("-", " ")))
        if parsed is None:
            return None
        value, significant = parsed
    return Quantity(value.normalize(), significant, percent)


def _parse_number_words(words: list[str]) -> tuple[Decimal, int] | None:
    total = Decimal(0)
    current = Decimal(0)
    seen = False
    for word in words:
        if word in _UNITS and not (word in ("a", "an") and seen):
            current += Decimal(str(_UNITS[word]))
            seen = seen or word not in ("a", "an")
        elif word in _SCALES and len(word) > 2:
            seen = True
            scale = Decimal(_SCALES[word])
            current = (current or Decimal(1)) * scale
            if scale >= 1000:
                total += current
                current = Decimal(0)
        elif word in ("and", "a", "an"):
            continue
        elif seen:
            break
    if not seen:
        return None
    value = total + current
    return value, _significant(str(value))


@dataclass(frozen=True, slots=True)
class DatePoint:
    """The calendar components a date states; None where it does not say."""

    year: int | None = None
    month: int | None = None
    day: int | None = None
    decade: bool = False

    @property
    def empty(self) -> bool:
        return self.year is None and self.month is None and self.day is None

    def within(self, other: DatePoint) -> bool:
        """True when every component this date states agrees with ``other``."""
        if self.year is not None:
            if other.year is None:
                return False
            if self.decade:
                if other.year // 10 != self.year // 10:
                    return False
            elif other.year != self.year:
                return False
        if self.month is not None and other.month != self.month:
            return False
        return not (self.day is not None and other.day != self.day)


def parse_date(text: str) -> DatePoint:
    """Calendar components of a DATE entity ("March 3rd, 2021", "2021-03-03", "the 1990s").

    An entity with no calendar components ("last week", "annually") gives an empty DatePoint;
    callers fall back to text matching for it.
    """
    lowered = text.lower()
    iso = _ISO_DATE.search(lowered)
    if iso:
        return DatePoint(int(iso.group(1)), int(iso.group(2)), int(iso.group(3)))
    slash = _SLASH_DATE.search(lowered)
    if slash:  # US order, as spaCy's English model is trained on American text
        short_year = int(slash.group(3))
        full_year = short_year + 2000 if short_year < 100 else short_year
        return DatePoint(full_year, int(slash.group(1)), int(slash.group(2)))
    year_match = _YEAR.search(lowered)
    year = int(year_match.group(1)) if year_match else None
    decade = bool(year_match and year_match.group(0).endswith("s"))
    month = next((_MONTHS[w] for w in _WORD.findall(lowered) if w in _MONTHS), None)
    day: int | None = None
    if month is not None:
        rest = _YEAR.sub(" ", lowered)
        day_match = _DAY.search(rest)
        day = int(day_match.group(1)) if day_match else None
        if day == 0:
            day = None
    return DatePoint(year, month, day, decade)


def parse_time(text: str) -> tuple[int, int] | None:
    """(hour, minute) on a 24 h clock for "3 pm", "15:30", "noon"; None when not a clock time."""
    lowered = text.lower()
    if "noon" in lowered or "midday" in lowered:
        return (12, 0)
    if "midnight" in lowered:
        return (0, 0)
    match = _CLOCK.search(lowered)
    if not match or (match.group(2) is None and match.group(3) is None):
        return None
    hour, minute = int(match.group(1)), int(match.group(2) or 0)
    suffix = (match.group(3) or "").replace(".", "")
    if suffix == "pm" and hour < 12:
        hour += 12
    if suffix == "am" and hour == 12:
        hour = 0
    if hour > 23 or minute > 59:
        return None
    return (hour, minute)


def quantity_spans(text: str) -> list[tuple[Quantity, int, int]]:
    """Every digit-written number in ``text`` with its character span; a number followed by a
    scale word ("3.2 billion") yields both the scaled and the bare value, so either matches."""
    lowered = text.lower()
    found = []
    for match in _NUMBER.finditer(lowered):
        try:
            value = Decimal(match.group(0).replace(",", ""))
        except InvalidOperation:  # pragma: no cover - the regex only admits digits
            continue
        tail = lowered[match.end() : match.end() + 16]
        percent = bool(re.match(r"\s*(%|percent|per cent)", tail))
        start, end = match.start(), match.end()
        scale = re.match(r"\s*([a-z]+)", tail)
        if scale and scale.group(1) in _SCALES:
            scaled = (value * _SCALES[scale.group(1)]).normalize()
            found.append((Quantity(scaled, 1, percent), start, end + scale.end()))
        found.append((Quantity(value.normalize(), 1, percent), start, end))
    return found
