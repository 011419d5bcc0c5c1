"""Looking inside trained models: what they read, what they use, and where they fail.

A model that attends somewhere has not necessarily used what it attended to.
Each function here asks the trained
[`DifferenceModel`][attnprimer.models.difference.DifferenceModel] a
sharper question than "where are the weights?":

* [`difference_step_profile`][attnprimer.analysis.difference_step_profile]: where the difference
  step's self-attention goes, grouped by the signed difference count(A) - count(B);
* [`block_and_swap`][attnprimer.analysis.block_and_swap]: ablations (the difference step may not
  read a step) and an intervention (its weights on the A and B steps are exchanged), scored by the
  difference step's accuracy;
* [`probe_difference_step`][attnprimer.analysis.probe_difference_step]: linear probes, trained on
  one held-out set and scored on another, for what the difference step's state holds before and
  after self-attention.

For the signal models, [`signal_attention`][attnprimer.analysis.signal_attention] says where the
output step looks, and [`accuracy_by_length`][attnprimer.analysis.accuracy_by_length] scores any
trained model on inputs shorter or longer than those it was trained on.

Everything runs on held-out sequences, under ``torch.no_grad``, on the model as trained.
Shape legend: B batch, S input length, T output steps, D hidden size.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

import torch
from torch import nn
from torch.nn import functional as F

from attnprimer.cache import cached_result
from attnprimer.dot_product import scaled_dot_product_attention
from attnprimer.train import (
    HELD_OUT_SEED,
    TrainedModel,
    _exact_match,
    held_out_generator,
    predict,
    single_thread,
)

__all__ = [
    "Probe",
    "accuracy_by_length",
    "alignment_offsets",
    "block_and_swap",
    "cached_accuracy_by_length",
    "cached_block_and_swap",
    "cached_probes",
    "difference_step_profile",
    "encoder_state_probe",
    "encoder_weight_by_token",
    "errors_by_count",
    "linear_probe",
    "mean_self_attention",
    "own_letter_mass",
    "probe_difference_step",
    "signal_attention",
]

# The output steps of the difference task (vocab_size V letters): A = 0, B = 1, the other
# letters 2..V-1, and the difference step V.
STEP_A, STEP_B = 0, 1


def _model_with_self_attention(trained: TrainedModel):
    model = trained.model
    if getattr(model, "self_attention", None) is None:
        raise ValueError(
            f"this needs a difference model with self-attention (self_att=True), got {trained.task}"
        )
    return model


def _held_out(trained: TrainedModel, samples: int, seed: int):
    return trained.task.sample(samples, held_out_generator(seed))


@torch.no_grad()
def mean_self_attention(trained: TrainedModel, samples: int = 5000, seed: int = 0) -> torch.Tensor:
    """The self-attention weights (T, T) averaged over ``samples`` held-out sequences.

    Examples:
        >>> from attnprimer.tasks import DifferenceTask
        >>> from attnprimer.train import TrainConfig, train
        >>> trained = train(DifferenceTask(hidden=8, self_att=True), TrainConfig(steps=5))
        >>> means = mean_self_attention(trained, samples=50)
        >>> means.shape, torch.allclose(means.sum(dim=-1), torch.ones(4))   # rows sum to one
        (torch.Size([4, 4]), True)
    """
    model = _model_with_self_attention(trained)
    inputs, _ = _held_out(trained, samples, seed)
    return model(inputs).attention["self"].mean(dim=0)  # (B, T, T) -> (T, T)


@torch.no_grad()
def encoder_weight_by_token(
    trained: TrainedModel, step: int = -1, samples: int = 5000, seed: int = 0
) -> torch.Tensor:
    """The mean encoder-decoder weight one output step puts on an input token of each kind.

    Returns:
        (V + 1,): for token 0 (the blank) and each letter, the weight the output step
        ``step`` (default: the last, the difference) gives one input position holding that
        token, averaged over positions and held-out sequences. Even attention over the
        ``S`` inputs gives ``1 / S`` for every kind.

    Examples:
        >>> from attnprimer.tasks import DifferenceTask
        >>> from attnprimer.train import TrainConfig, train
        >>> untrained = train(DifferenceTask(hidden=8), TrainConfig(steps=1, lr=1e-9))
        >>> encoder_weight_by_token(untrained, samples=100)   # zero queries: even attention
        tensor([0.1000, 0.1000, 0.1000, 0.1000])
    """
    inputs, _ = _held_out(trained, samples, seed)
    weights = trained.model(inputs).attention["encoder-decoder"][:, step]  # (B, S)
    kinds = range(trained.task.vocab_size + 1)
    return torch.stack([weights[inputs == token].mean() for token in kinds])


@torch.no_grad()
def difference_step_profile(
    trained: TrainedModel, samples: int = 10_000, seed: int = 0, min_count: int = 30
) -> tuple[list[int], torch.Tensor]:
    """The difference step's mean self-attention row, for each value of count(A) - count(B).

    Args:
        trained: a difference model with self-attention.
        samples: held-out sequences to average over.
        seed: their seed.
        min_count: leave out differences seen fewer times than this (noisy means).

    Returns:
        ``(differences, rows)``: the signed differences d, ascending, and rows (len(d), T):
        the mean weight the difference step puts on each output step when A - B = d.

    Examples:
        >>> from attnprimer.tasks import DifferenceTask
        >>> from attnprimer.train import TrainConfig, train
        >>> trained = train(DifferenceTask(hidden=8, self_att=True), TrainConfig(steps=5))
        >>> differences, rows = difference_step_profile(trained, samples=500)
        >>> 0 in differences, rows.shape[1]
        (True, 4)
    """
    model = _model_with_self_attention(trained)
    inputs, targets = _held_out(trained, samples, seed)
    row = model(inputs).attention["self"][:, -1]  # the difference step's row: (B, T)
    signed = targets[:, STEP_A] - targets[:, STEP_B]  # (B,)
    differences = [int(d) for d in signed.unique() if (signed == d).sum() >= min_count]
    return differences, torch.stack([row[signed == d].mean(dim=0) for d in differences])


@torch.no_grad()
def block_and_swap(trained: TrainedModel, samples: int = 10_000, seed: int = 0) -> dict[str, float]:
    """The difference step's accuracy when what it may read through self-attention is changed.

    Only sequences with count(A) != count(B) are scored, so that "the larger
    count" is defined. Blocking a step masks it out of the difference step's
    self-attention row (the softmax renormalises over the rest); every other
    step, and the residual connection, are left alone. The conditions:

    * ``"as trained"``;
    * ``"block the larger count"`` and ``"block the smaller count"``: the A or
      the B step, whichever holds the larger (smaller) count in that sequence;
    * ``"block the other letters"``: the steps of C, D, ...;
    * ``"block itself"``: the difference step's own entry;
    * ``"swap the A and B weights"``: an intervention. The weights the step
      puts on the A and the B step are exchanged before the values are averaged.

    Returns:
        The difference step's accuracy under each condition, by name.

    Examples:
        >>> from attnprimer.tasks import DifferenceTask
        >>> from attnprimer.train import TrainConfig, train
        >>> trained = train(DifferenceTask(hidden=8, self_att=True), TrainConfig(steps=5))
        >>> sorted(block_and_swap(trained, samples=200))[:2]
        ['as trained', 'block itself']
    """
    model = _model_with_self_attention(trained)
    inputs, targets = _held_out(trained, samples, seed)
    unequal = targets[:, STEP_A] != targets[:, STEP_B]
    inputs, targets = inputs[unequal], targets[unequal]
    hidden, _ = model.read(inputs)  # before self-attention: (B, T, D)
    batch, steps = targets.shape
    last = steps - 1
    a_larger = targets[:, STEP_A] > targets[:, STEP_B]  # (B,)
    larger = torch.where(a_larger, STEP_A, STEP_B)
    smaller = torch.where(a_larger, STEP_B, STEP_A)

    def accuracy(hidden_after: torch.Tensor) -> float:
        prediction = model.classifier(hidden_after[:, last]).argmax(dim=-1)  # (B,)
        return (prediction == targets[:, last]).float().mean().item()

    def blocking(*columns: torch.Tensor | int) -> float:
        mask = torch.ones(batch, steps, steps, dtype=torch.bool)  # True = may attend
        for column in columns:
            mask[torch.arange(batch), last, column] = False
        return accuracy(model.self_attention(hidden, mask)[0])

    layer = model.self_attention
    query, key, value = layer.query(hidden), layer.key(hidden), layer.value(hidden)  # (B, T, D)
    _, weights = scaled_dot_product_attention(query, key, value)  # (B, T, T)
    swapped = weights.clone()
    swapped[:, last, [STEP_A, STEP_B]] = weights[:, last, [STEP_B, STEP_A]]
    return {
        "as trained": accuracy(model.self_attention(hidden)[0]),
        "block the larger count": blocking(larger),
        "block the smaller count": blocking(smaller),
        "block the other letters": blocking(*range(STEP_B + 1, last)),
        "block itself": blocking(last),
        "swap the A and B weights": accuracy(layer.norm(hidden + swapped @ value)),
    }


class Probe(NamedTuple):
    """Held-out accuracy of linear probes reading one quantity from a hidden state.

    Attributes:
        target: what is read, e.g. ``"|A-B|"``.
        state: which hidden state it is read from.
        accuracy: fraction of the evaluation set read correctly.
    """

    target: str
    state: str
    accuracy: float


def linear_probe(
    train_features: torch.Tensor,
    train_labels: torch.Tensor,
    test_features: torch.Tensor,
    test_labels: torch.Tensor,
    num_classes: int,
    *,
    weight_decay: float = 1e-4,
) -> float:
    """Fit a multinomial logistic regression on one set, return its accuracy on another.

    A linear probe asks whether a quantity can be *read off* a hidden state by
    a linear map, which is all the model's own classifier can do with it. The
    fit is deterministic (zero initialisation, full-batch L-BFGS).

    Examples:
        >>> features = torch.tensor([[0.0, 1.0], [1.0, 0.0]]).repeat(20, 1)
        >>> labels = torch.tensor([0, 1]).repeat(20)
        >>> linear_probe(features, labels, features, labels, num_classes=2)
        1.0
    """
    probe = nn.Linear(train_features.shape[-1], num_classes)
    nn.init.zeros_(probe.weight)
    nn.init.zeros_(probe.bias)
    optimizer = torch.optim.LBFGS(probe.parameters(), max_iter=300, line_search_fn="strong_wolfe")

    def closure() -> torch.Tensor:
        optimizer.zero_grad()
        loss = F.cross_entropy(probe(train_features), train_labels)
        loss = loss + weight_decay * probe.weight.pow(2).sum()
        loss.backward()
        return loss

    with single_thread(), torch.enable_grad():  # hundreds of small steps
        optimizer.step(closure)
    with torch.no_grad():
        return (probe(test_features).argmax(dim=-1) == test_labels).float().mean().item()


@torch.no_grad()
def probe_difference_step(
    trained: TrainedModel, samples: int = 10_000, seeds: tuple[int, int] = (2, 3)
) -> list[Probe]:
    """What the difference step's state holds, read by linear probes.

    The probes are fitted on held-out stream ``seeds[0]`` and scored on
    ``seeds[1]``. They read count(A), count(B), their sum and |A-B| from the difference
    step's state before self-attention (the output of its encoder-decoder
    attention) and, for models that have it, |A-B| after self-attention.

    Examples:
        >>> from attnprimer.tasks import DifferenceTask
        >>> from attnprimer.train import TrainConfig, train
        >>> trained = train(DifferenceTask(hidden=8), TrainConfig(steps=5))
        >>> [(probe.target, probe.state) for probe in probe_difference_step(trained, samples=100)]
        [('count(A)', 'before'), ('count(B)', 'before'), ('count(A) + count(B)', 'before'),
         ('|A-B|', 'before')]
    """
    model = trained.model
    fit, score = (_held_out(trained, samples, seed) for seed in seeds)
    last = fit.targets.shape[1] - 1
    classes = trained.task.num_classes
    states = {}
    for name, (inputs, _) in (("fit", fit), ("score", score)):
        hidden, _ = model.read(inputs)  # (B, T, D)
        states[name, "before"] = hidden[:, last]
        if getattr(model, "self_attention", None) is not None:
            states[name, "after"] = model.self_attention(hidden)[0][:, last]
    quantities = {  # what each probe reads, from the task's targets (B, T)
        "count(A)": lambda targets: targets[:, STEP_A],
        "count(B)": lambda targets: targets[:, STEP_B],
        "count(A) + count(B)": lambda targets: targets[:, STEP_A] + targets[:, STEP_B],
        "|A-B|": lambda targets: targets[:, last],
    }
    probes = []
    for state in ("before", "after"):
        if ("fit", state) not in states:
            continue
        for target, quantity in quantities.items():
            if state == "after" and target != "|A-B|":
                continue
            accuracy = linear_probe(states["fit", state], quantity(fit.targets),
                                    states["score", state], quantity(score.targets), classes)
            probes.append(Probe(target, state, accuracy))
    return probes


def cached_block_and_swap(trained: TrainedModel) -> dict[str, float]:
    """[`block_and_swap`][attnprimer.analysis.block_and_swap] of a cached model, computed once
    per model and per code: the page's table, the claims tests and the explorer's tests read the
    same numbers."""
    return cached_result(block_and_swap, trained)


def cached_probes(trained: TrainedModel, samples: int = 10_000) -> list[Probe]:
    """[`probe_difference_step`][attnprimer.analysis.probe_difference_step] of a cached model,
    computed once per model and per code ([`cached_result`][attnprimer.cache.cached_result]):
    the page's table and the claims tests read the same probes."""
    return cached_result(probe_difference_step, trained, samples=samples,
                         encode=lambda probes: [list(probe) for probe in probes],
                         decode=lambda rows: [Probe(*row) for row in rows])


def cached_accuracy_by_length(trained: TrainedModel, lengths: Iterable[int],
                              samples: int = 2000) -> list[float]:
    """[`accuracy_by_length`][attnprimer.analysis.accuracy_by_length] of a cached model,
    computed once per model and per code ([`cached_result`][attnprimer.cache.cached_result]):
    the pages' length figures and the claims tests read the same numbers."""
    return cached_result(accuracy_by_length, trained, lengths=list(lengths), samples=samples)


@torch.no_grad()
def accuracy_by_length(
    trained: TrainedModel, lengths: Iterable[int], samples: int = 2000, seed: int = 0
) -> list[float]:
    """Exact match of a model trained at one length, on held-out inputs of other lengths.

    The task is rebuilt at each length ([`Task.at_length`][attnprimer.tasks.Task.at_length]);
    the model and its classes stay as trained, so a count the model has no
    class for is simply wrong. The exact match of greedy decoding, which a teacher-forced
    model gives in one pass fed the right outputs, as training scores it (a sequence is wholly
    right greedily exactly when every teacher-forced guess is; ``tests/test_train_monitor.py``
    checks the two agree on the site's models).

    Examples:
        >>> from attnprimer.tasks import CountingTask
        >>> from attnprimer.train import TrainConfig, train
        >>> trained = train(CountingTask(hidden=8), TrainConfig(steps=5))
        >>> len(accuracy_by_length(trained, [5, 10, 20], samples=50))
        3
    """
    scores = []
    for length in lengths:
        task = trained.task.at_length(length)
        batch = task.sample(samples, held_out_generator(seed))
        scores.append(_exact_match(task, trained.model, batch))  # one pass if teacher-forced
    return scores


@torch.no_grad()
def signal_attention(trained: TrainedModel, samples: int = 5000, seed: int = 0) -> dict[str, float]:
    """Where a signal model's output step looks: mean weight on one position of each kind.

    Returns:
        The mean encoder-decoder weight on ``"the signal"`` (position 0), on
        ``"a later copy of the signal letter"``, and on ``"another letter"``.
        Even attention over the ``S`` inputs gives ``1 / S`` to each.

    Examples:
        >>> from attnprimer.tasks import SignalTask
        >>> from attnprimer.train import TrainConfig, train
        >>> trained = train(SignalTask(hidden=8), TrainConfig(steps=1, lr=1e-9))
        >>> {kind: round(weight, 3) for kind, weight in
        ...  signal_attention(trained, samples=50).items()}
        {'the signal': 0.091, 'a later copy of the signal letter': 0.091, 'another letter': 0.091}
    """
    inputs, _ = _held_out(trained, samples, seed)
    weights = trained.model(inputs).attention["encoder-decoder"][:, 0]  # (B, S)
    copies = inputs == inputs[:, :1]  # (B, S): the signal letter, wherever it is
    copies[:, 0] = False
    others = inputs != inputs[:, :1]
    return {
        "the signal": weights[:, 0].mean().item(),
        "a later copy of the signal letter": weights[copies].mean().item(),
        "another letter": weights[others].mean().item(),
    }


@torch.no_grad()
def alignment_offsets(
    trained: TrainedModel, lengths: Iterable[int], samples: int = 500, seed: int = 0
) -> dict[int, float]:
    """Where a reversal model's largest attention weight falls, relative to the letter it copies.

    Output step t of an input of n letters copies position n - 1 - t
    ([`reversal_alignment`][attnprimer.tasks.reversal.reversal_alignment]). For every letter
    step (the end step left out) of ``samples`` held-out inputs of each length,
    the offset is (position of the largest weight) - (n - 1 - t): 0 is on the
    copied letter, +1 one position to its right.

    Returns:
        The share of steps at each offset, by offset.

    Examples:
        >>> from attnprimer.tasks import ReversalTask
        >>> from attnprimer.train import TrainConfig, train
        >>> trained = train(ReversalTask(hidden=8, max_len=4), TrainConfig(steps=2))
        >>> round(sum(alignment_offsets(trained, [2, 3], samples=20).values()), 6)
        1.0
    """
    counts: dict[int, int] = {}
    total = 0
    for length in lengths:
        task = trained.task.at_length(length)
        inputs, _ = task.sample(samples, held_out_generator(seed))
        weights = trained.model(inputs).attention["encoder-decoder"][:, :length]  # (B, n, S)
        truth = torch.arange(length - 1, -1, -1)  # step t copies position n - 1 - t
        offsets = weights.argmax(dim=-1) - truth  # (B, n)
        for offset, count in zip(*offsets.unique(return_counts=True), strict=True):
            counts[int(offset)] = counts.get(int(offset), 0) + int(count)
        total += offsets.numel()
    return {offset: count / total for offset, count in sorted(counts.items())}


@torch.no_grad()
def encoder_state_probe(trained: TrainedModel, samples: int = 2000,
                        seeds: tuple[int, int] = (2, 3)) -> dict[str, float]:
    """What a reversal model's encoder state at position j holds: its own letter, the one before.

    Linear probes are fitted on the states of one held-out set and scored on
    another (positions 1 and later, so that a letter before exists).

    Returns:
        ``{"letter j": accuracy, "letter j - 1": accuracy}``.
    """
    features, labels = {}, {}
    for role, seed in zip(("fit", "score"), seeds, strict=True):
        inputs, _ = _held_out(trained, samples, seed)
        states, _ = trained.model.encoder(inputs)  # (B, S, H)
        real = (inputs[:, 1:] != 0)  # positions j >= 1 holding a letter: (B, S - 1)
        features[role] = states[:, 1:][real]  # (N, H)
        labels[role] = {"letter j": inputs[:, 1:][real], "letter j - 1": inputs[:, :-1][real]}
    classes = trained.task.vocab_size + 1
    return {target: linear_probe(features["fit"], labels["fit"][target], features["score"],
                                 labels["score"][target], classes)
            for target in ("letter j", "letter j - 1")}


# --- the counting and signal models ----------------------------------------------------------


def own_letter_mass(
    trained: TrainedModel, samples: int = 2000, seed: int = 0
) -> tuple[torch.Tensor, torch.Tensor]:
    """For each output step and held-out sequence: the letter's count and the weight on it.

    Returns:
        ``(counts, mass)``, both (samples, T): how often each step's letter occurs, and the
        total attention weight that step puts on the positions holding that letter.

    Examples:
        >>> from attnprimer.tasks import CountingTask
        >>> from attnprimer.train import TrainConfig, train
        >>> trained = train(CountingTask(hidden=8), TrainConfig(steps=5))
        >>> counts, mass = own_letter_mass(trained, samples=100)
        >>> counts.shape, bool((mass[counts == 0] == 0).all())   # no letter, no weight
        (torch.Size([100, 3]), True)
    """
    batch = trained.task.sample(samples, held_out_generator(seed))
    output, _ = predict(trained.model, batch.inputs)
    weights = output.attention["encoder-decoder"]  # (B, T, S)
    letters = torch.arange(1, weights.shape[1] + 1)  # token id of each output step's letter
    is_letter = batch.inputs[:, None, :] == letters[None, :, None]  # (B, 1, S) == (1, T, 1)
    return is_letter.sum(-1), (weights * is_letter).sum(-1)  # (B, T) each


def errors_by_count(trained: TrainedModel, samples: int = 10_000,
                    seed: int = HELD_OUT_SEED) -> tuple[torch.Tensor, torch.Tensor]:
    """How many held-out sequences of each true count a one-step model gets wrong.

    Returns:
        ``(wrong, seen)``, both (C,): wrong answers and sequences, by the true class of the
        (only) output step. Every model scored with the same ``seed`` sees the same data.

    Examples:
        >>> from attnprimer.tasks import SignalTask
        >>> from attnprimer.train import TrainConfig, train
        >>> wrong, seen = errors_by_count(train(SignalTask(hidden=8), TrainConfig(steps=5)), 200)
        >>> int(seen.sum()), bool((wrong <= seen).all())
        (200, True)
    """
    classes = trained.task.num_classes
    batch = trained.task.sample(samples, held_out_generator(seed))
    _, predictions = predict(trained.model, batch.inputs)
    truth = batch.targets[:, 0]
    wrong = torch.bincount(truth[predictions[:, 0] != truth], minlength=classes)
    return wrong, torch.bincount(truth, minlength=classes)
