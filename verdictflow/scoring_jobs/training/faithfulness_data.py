"""The human-labelled sets the faithfulness model is trained and validated on.

Each set becomes answer events (the text to check as the answer, its source as the one context)
with a target in [0, 1], read as "how faithful a human found it":

- **SummEdits** (one set per domain; ``id`` ending ``_og``, the unedited originals, left out):
  ``label`` 1 consistent, 0 not; each row keeps its ``split`` (``evaluation`` / ``test``), which
  the leave-one-domain-out protocol needs.
- **HaluEval QA** (first 1,000 rows): the knowledge as context, the question as query; the right
  answer is 1, the hallucinated one 0.
- **QAGS** CNN/DM and XSum: the article as context; the target is the share of summary sentences
  a majority of the three workers marked supported.
- **SummEval**: the article as context; the target is the mean expert consistency rescaled from
  1-5 to 0-1 (``(c - 1) / 4``); ``groups`` holds the article id (summary-level correlations are
  per article).

Every set records the SHA-256 of the files it was read from: the model file lists them, so a
model says exactly which data it was fitted on.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from verdictflow.digests import file_digest
from verdictflow.models.events import AnswerEvent
from verdictflow.scoring_jobs.training.labelled_sets import LabelledSet, require

SUMMEDITS_DOMAINS = ("news", "podcast", "samsum", "scitldr")


def summedits(data: Path, domain: str) -> LabelledSet:
    path = require(data / "summedits" / f"summedits_{domain}.json")
    rows = [r for r in json.loads(path.read_text("utf-8")) if not str(r["id"]).endswith("_og")]
    return LabelledSet(
        name=f"summedits-{domain}",
        events=tuple(
            AnswerEvent(id=str(r["id"]), answer=str(r["summary"]), contexts=[str(r["doc"])])
            for r in rows
        ),
        targets=tuple(float(r["label"]) for r in rows),
        splits=tuple(str(r["split"]) for r in rows),
        groups=tuple(str(r["id"]) for r in rows),
        files={path.name: file_digest(path)},
    )


def halueval(data: Path) -> LabelledSet:
    path = require(data / "halueval" / "qa_data_first1000.json")
    events, targets = [], []
    for i, line in enumerate(path.read_text("utf-8").splitlines()):
        row = json.loads(line)
        for field, target in (("right_answer", 1.0), ("hallucinated_answer", 0.0)):
            events.append(
                AnswerEvent(
                    id=f"halueval-{i}-{int(target)}",
                    query=row["question"],
                    answer=row[field],
                    contexts=[row["knowledge"]],
                )
            )
            targets.append(target)
    return LabelledSet(
        "halueval-qa",
        tuple(events),
        tuple(targets),
        ("all",) * len(events),
        tuple(e.id for e in events),
        {path.name: file_digest(path)},
    )


def qags(data: Path, split: str) -> LabelledSet:
    path = require(data / "qags" / f"mturk_{split}.jsonl")
    events, targets = [], []
    for i, line in enumerate(path.read_text("utf-8").splitlines()):
        row = json.loads(line)
        sentences = row["summary_sentences"]
        supported = sum(sum(r["response"] == "yes" for r in s["responses"]) >= 2 for s in sentences)
        events.append(
            AnswerEvent(
                id=f"qags-{split}-{i}",
                answer=" ".join(s["sentence"] for s in sentences),
                contexts=[row["article"]],
            )
        )
        targets.append(supported / len(sentences))
    return LabelledSet(
        f"qags-{split}",
        tuple(events),
        tuple(targets),
        ("all",) * len(events),
        tuple(e.id for e in events),
        {path.name: file_digest(path)},
    )


def summeval(data: Path) -> LabelledSet:
    path = require(data / "summeval" / "summeval_pairs.jsonl")
    rows = [json.loads(line) for line in path.read_text("utf-8").splitlines()]
    return LabelledSet(
        "summeval",
        tuple(
            AnswerEvent(
                id=f"summeval-{r['doc_id']}-{r['system_id']}",
                answer=r["system_output"],
                contexts=[r["source"]],
            )
            for r in rows
        ),
        tuple((float(r["consistency"]) - 1.0) / 4.0 for r in rows),
        ("all",) * len(rows),
        tuple(str(r["doc_id"]) for r in rows),
        {path.name: file_digest(path)},
    )


#: Every set, by name, as the training command and the validation bench load them.
LOADERS: dict[str, Callable[[Path], LabelledSet]] = {
    **{
        f"summedits-{d}": (lambda data, d=d: summedits(data, d))  # type: ignore[misc]
        for d in SUMMEDITS_DOMAINS
    },
    "halueval-qa": halueval,
    "qags-cnndm": lambda data: qags(data, "cnndm"),
    "qags-xsum": lambda data: qags(data, "xsum"),
    "summeval": summeval,
    "perturbations-relations": lambda data: _relation_perturbations(data),
}


def _relation_perturbations(data: Path) -> LabelledSet:
    """The relation perturbation set (built by parsing documents: imported here, when asked)."""
    from verdictflow.nlp import load_pipeline
    from verdictflow.scoring_jobs.training.relation_perturbations import relation_perturbations

    return relation_perturbations(data, load_pipeline())


def load_sets(data: Path, names: tuple[str, ...] = tuple(LOADERS)) -> list[LabelledSet]:
    return [LOADERS[name](data) for name in names]
