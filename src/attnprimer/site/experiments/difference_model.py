"""Looking inside the trained difference model (the chapter "Self-attention").

A model that attends somewhere has not necessarily used what it attended to. Each function
here asks the trained [`DifferenceModel`][attnprimer.models.difference.DifferenceModel] a
sharper question than "where are the weights?":

* [`difference_step_profile`][attnprimer.site.experiments.difference_model.difference_step_profile]:
  where the difference step's self-attention goes, grouped by the signed difference
  count(A) - count(B);
* [`block_and_swap`][attnprimer.site.experiments.difference_model.block_and_swap]: ablations
  (the difference step may not read a step) and an intervention (its weights on the A and B
  steps are exchanged), scored by the difference step's accuracy;
* [`probe_difference_step`][attnprimer.site.experiments.difference_model.probe_difference_step]:
  linear probes, trained on one held-out set and scored on another, for what the difference
  step's state holds before and after self-attention.

Everything runs on held-out sequences, under ``torch.no_grad``, on the model as trained.
Shape legend: B batch, S input length, T output steps, D hidden size.
"""

from __future__ import annotations

from typing import NamedTuple

import torch

from attnprimer.dot_product import scaled_dot_product_attention
from attnprimer.site.experiments.probes import linear_probe
from attnprimer.training.model_cache import cached_result
from attnprimer.training.train import TrainedModel, held_out_generator

__all__ = [
    "STEP_A",
    "STEP_B",
    "Probe",
    "block_and_swap",
    "cached_block_and_swap",
    "cached_probes",
    "difference_step_profile",
    "encoder_weight_by_token",
    "mean_self_attention",
    "probe_difference_step",
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
        >>> from attnprimer.training.train import TrainConfig, train
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
        >>> from attnprimer.training.train import TrainConfig, train
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
        >>> from attnprimer.training.train import TrainConfig, train
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
        >>> from attnprimer.training.train import TrainConfig, train
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
        >>> from attnprimer.training.train import TrainConfig, train
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
    """[`block_and_swap`][attnprimer.site.experiments.difference_model.block_and_swap]
    of a cached model, computed once
    per model and per code: the page's table, the claims tests and the explorer's tests read the
    same numbers."""
    return cached_result(block_and_swap, trained)


def cached_probes(trained: TrainedModel, samples: int = 10_000) -> list[Probe]:
    """[`probe_difference_step`][attnprimer.site.experiments.difference_model.probe_difference_step]
    of a cached model,
    computed once per model and per code
    ([`cached_result`][attnprimer.training.model_cache.cached_result]):
    the page's table and the claims tests read the same probes."""
    return cached_result(probe_difference_step, trained, samples=samples,
                         encode=lambda probes: [list(probe) for probe in probes],
                         decode=lambda rows: [Probe(*row) for row in rows])
