"""The review loop on ``/metrics`` (issue 44): computed from the queue at each scrape, so the
figures are the page's figures.

- ``vf_review_labels{kind,tier}``: labels on verdicts that decided (PASS or FAIL);
- ``vf_review_agreement{kind,tier}``: the share of them reviewers found right;
- ``vf_review_confusion{kind,tier,decision,expected}``: the counts behind it;
- ``vf_review_kappa{kind,reviewer_a,reviewer_b}``: Cohen's kappa of two reviewers on the
  inputs both labelled (absent while undefined);
- ``vf_review_queue_entries``: inputs in the queue.
"""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from verdictflow.console.review_queue import ReviewQueue


class ReviewCollector(Collector):
    def __init__(self, queue: ReviewQueue) -> None:
        self.queue = queue

    def collect(self) -> Iterator[GaugeMetricFamily]:
        figures = self.queue.agreement()
        labels = GaugeMetricFamily(
            "vf_review_labels", "Labels on decided verdicts", labels=["kind", "tier"]
        )
        share = GaugeMetricFamily(
            "vf_review_agreement",
            "Share of labelled verdicts that reviewers found right",
            labels=["kind", "tier"],
        )
        confusion = GaugeMetricFamily(
            "vf_review_confusion",
            "Labelled verdicts by the verdict's decision and what the reviewer expected",
            labels=["kind", "tier", "decision", "expected"],
        )
        for fig in figures["kinds"]:
            key = [fig["kind"], fig["tier"] or ""]
            labels.add_metric(key, fig["labels"])
            if fig["agreement"] is not None:
                share.add_metric(key, fig["agreement"])
            for cell, n in fig["confusion"].items():
                decision, expected = cell.split("/")
                confusion.add_metric([*key, decision, expected], n)
        kappa = GaugeMetricFamily(
            "vf_review_kappa",
            "Cohen's kappa between two reviewers on the inputs both labelled",
            labels=["kind", "reviewer_a", "reviewer_b"],
        )
        for k in figures["kappa"]:
            if k["kappa"] is not None:
                kappa.add_metric([k["kind"], *k["reviewers"]], k["kappa"])
        entries = GaugeMetricFamily("vf_review_queue_entries", "Inputs in the review queue")
        entries.add_metric([], len(self.queue.entries))
        yield from (labels, share, confusion, kappa, entries)
