"""A human-labelled set as the faithfulness model's training reads it (events, targets in
[0, 1], splits, groups and the digests of the files it came from), shared by the readers of the
real sets (:mod:`~verdictflow.scoring_jobs.training.faithfulness_data`) and the synthetic relation
swaps (:mod:`~verdictflow.scoring_jobs.training.relation_perturbations`)."""

from __future__ import annotations

from dataclasses import dataclass

from verdictflow.models.events import AnswerEvent
from verdictflow.scoring_jobs.training.data_files import TrainingDataError, require

__all__ = ["LabelledSet", "TrainingDataError", "require"]


@dataclass(frozen=True)
class LabelledSet:
    """Events with human targets in [0, 1], and where they came from."""

    name: str
    events: tuple[AnswerEvent, ...]
    targets: tuple[float, ...]
    splits: tuple[str, ...]  # SummEdits: evaluation / test; other sets: "all"
    groups: tuple[str, ...]  # SummEval: the article id; other sets: the event id
    files: dict[str, str]  # file name -> SHA-256 of its bytes

    @property
    def source(self) -> str:
        """The data set it comes from (``summedits``, ``halueval``, ``qags``, ``summeval``,
        ``perturbations``): training gives every source the same weight, shared by its sets."""
        return self.name.split("-", 1)[0]
