"""People's labels as a data set (issue 44): ``verdictflow labels export`` writes it,
``verdictflow calibrate --labels`` fits thresholds from it.

An export row (:class:`~verdictflow.models.labels.LabelledItem`, JSONL) is one verdict of a
queued input with the input event's texts and every reviewer's latest label on it. Rows are
sorted by input id then kind and written with sorted keys, so the same labels always give the
same bytes (an export read back and written again is byte-identical).

For calibration, the reviewers of one row vote on what the verdict should have decided
(``pass`` / ``fail``, the golden label); a tie is left out and counted. The row's tenant is its
group, so ``--max-fpr`` is met in every tenant and the worst one is named.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
from pydantic import ValidationError

from verdictflow.input_files import file_lines
from verdictflow.models.codec import summarize_validation_error
from verdictflow.models.labels import LabelledItem, ReviewEntry, ReviewLabel
from verdictflow.scoring_jobs.calibration.calibrate import GoldenSet
from verdictflow.scoring_jobs.calibration.kinds import CalibrationError, spec_for


@dataclass(frozen=True)
class ExportFilter:
    kinds: frozenset[str] | None = None
    tenants: frozenset[str] | None = None
    since: float | None = None  # labels given at or after (Unix seconds)
    until: float | None = None  # labels given before

    def keeps(self, label: ReviewLabel) -> bool:
        return (
            (self.kinds is None or label.kind in self.kinds)
            and (self.tenants is None or (label.tenant or "") in self.tenants)
            and (self.since is None or label.labelled_at >= self.since)
            and (self.until is None or label.labelled_at < self.until)
        )


def labelled_items(
    entries: Iterable[Mapping[str, Any]],
    labels: Iterable[Mapping[str, Any]],
    keep: ExportFilter = ExportFilter(),
) -> tuple[list[LabelledItem], int]:
    """Join the latest queue entries and labels (records as read from their compacted topics,
    oldest first) into export rows; also return how many labels had no entry to join."""
    latest_entries: dict[str, ReviewEntry] = {}
    for data in entries:
        entry = ReviewEntry.model_validate(data)
        latest_entries[entry.input_id] = entry
    latest_labels: dict[str, ReviewLabel] = {}
    for data in labels:
        label = ReviewLabel.model_validate(data)
        held = latest_labels.get(label.key)
        if held is None or label.labelled_at >= held.labelled_at:
            latest_labels[label.key] = label
    grouped: dict[tuple[str, str], list[ReviewLabel]] = {}
    for label in latest_labels.values():
        if keep.keeps(label):
            grouped.setdefault((label.input_id, label.kind), []).append(label)
    rows, orphans = [], 0
    for (input_id, kind), given in sorted(grouped.items()):
        found = latest_entries.get(input_id)
        verdict = None if found is None else _verdict(found, kind, given)
        if found is None or verdict is None:
            orphans += len(given)
            continue
        rows.append(
            LabelledItem(
                input_id=input_id,
                kind=kind,
                tier=verdict.tier,
                model=found.model,
                tenant=found.tenant,
                event=found.event,
                verdict=verdict,
                labels=sorted(given, key=lambda x: x.reviewer),
            )
        )
    return rows, orphans


def _verdict(entry: ReviewEntry, kind: str, given: Sequence[ReviewLabel]) -> Any:
    """The verdict the labels were given on (by id), else the entry's verdict of that kind."""
    ids = {x.verdict_id for x in given}
    same_kind = [v for v in entry.verdicts if v.kind == kind]
    return next((v for v in same_kind if v.verdict_id in ids), same_kind[0] if same_kind else None)


def dump_items(rows: Iterable[LabelledItem]) -> bytes:
    return b"".join(
        orjson.dumps(row.model_dump(mode="json"), option=orjson.OPT_SORT_KEYS) + b"\n"
        for row in rows
    )


def read_items(path: Path) -> list[LabelledItem]:
    """Rows of an export, or :class:`CalibrationError` naming the line."""
    rows = []
    for n, line in enumerate(file_lines(path), start=1):
        if not line.strip():
            continue
        try:
            rows.append(LabelledItem.model_validate(orjson.loads(line)))
        except orjson.JSONDecodeError as exc:
            raise CalibrationError(f"{path}:{n}: not JSON ({exc})") from None
        except ValidationError as exc:
            raise CalibrationError(f"{path}:{n}: {summarize_validation_error(exc)}") from None
    return rows


@dataclass(frozen=True)
class LabelledGolden:
    golden: GoldenSet
    ties: int  # rows whose reviewers split evenly: left out


def golden_from_items(
    rows: Sequence[LabelledItem], kind: str, tenant: str | None = None
) -> LabelledGolden:
    """The golden set of ``kind`` (optionally one tenant's) from export rows."""
    model = spec_for(kind).event_model
    events, positives, groups, canonical = [], [], [], []
    ties = 0
    for row in rows:
        if row.kind != kind or (tenant is not None and (row.tenant or "") != tenant):
            continue
        votes = Counter(x.expected for x in row.labels)
        if votes["pass"] == votes["fail"]:
            ties += 1
            continue
        expected = "pass" if votes["pass"] > votes["fail"] else "fail"
        try:
            events.append(model.model_validate(row.event))
        except ValidationError as exc:
            raise CalibrationError(
                f"{row.input_id}: its event is not a {model.__name__}: "
                f"{summarize_validation_error(exc)}"
            ) from None
        positives.append(expected == "pass")
        groups.append(row.tenant or "all")
        canonical.append(orjson.dumps([row.event, expected], option=orjson.OPT_SORT_KEYS))
    if len(set(positives)) < 2:
        raise CalibrationError(
            f"{kind}{f' (tenant {tenant})' if tenant else ''}: the labels need both verdicts "
            f"that should pass and ones that should fail ({len(positives)} usable rows)"
        )
    digest = hashlib.sha256(b"\n".join(canonical)).hexdigest()
    return LabelledGolden(GoldenSet(events, positives, groups, digest), ties)


def tenants_with(rows: Sequence[LabelledItem], kind: str, minimum: int) -> list[str]:
    """Tenants with at least ``minimum`` labelled rows of ``kind``, of both outcomes."""
    by_tenant: dict[str, Counter[str]] = {}
    for row in rows:
        if row.kind == kind and row.tenant:
            votes = Counter(x.expected for x in row.labels)
            if votes["pass"] != votes["fail"]:
                winner = "pass" if votes["pass"] > votes["fail"] else "fail"
                by_tenant.setdefault(row.tenant, Counter())[winner] += 1
    return sorted(t for t, c in by_tenant.items() if sum(c.values()) >= minimum and len(c) == 2)


#: The kinds whose labels say whether an answer is supported by its contexts: what the
#: faithfulness model learns (``train-faithfulness --labels``).
FAITHFULNESS_KINDS = ("faithfulness", "faithfulness_llm")


def team_set(path: Path) -> Any:
    """A team's labels on faithfulness (either tier) as a training set (``team-labels``): one
    row per input, its reviewers' majority (ties left out) as the target, 1 supported."""
    from verdictflow.digests import file_digest
    from verdictflow.models.events import AnswerEvent
    from verdictflow.scoring_jobs.training.labelled_sets import LabelledSet, TrainingDataError

    try:
        rows = read_items(path)
    except CalibrationError as exc:
        raise TrainingDataError(str(exc)) from None
    votes: dict[str, Counter[str]] = {}
    events: dict[str, AnswerEvent] = {}
    for row in rows:
        if row.kind not in FAITHFULNESS_KINDS:
            continue
        events[row.input_id] = AnswerEvent.model_validate(row.event)
        # one vote per reviewer and input: a reviewer who labelled both tiers counts once
        for label in row.labels:
            votes.setdefault(row.input_id, Counter())[f"{label.reviewer}\x1f{label.expected}"] = 1
    ids, targets = [], []
    for input_id in sorted(votes):
        tally = Counter(key.rsplit("\x1f", 1)[1] for key in votes[input_id])
        if tally["pass"] != tally["fail"]:
            ids.append(input_id)
            targets.append(1.0 if tally["pass"] > tally["fail"] else 0.0)
    if len(set(targets)) < 2:
        raise TrainingDataError(
            f"{path}: the faithfulness labels need supported and unsupported answers "
            f"({len(targets)} usable inputs)"
        )
    return LabelledSet(
        name="team-labels",
        events=tuple(events[i] for i in ids),
        targets=tuple(targets),
        splits=tuple("all" for _ in ids),
        groups=tuple(ids),
        files={path.name: file_digest(path)},
    )
