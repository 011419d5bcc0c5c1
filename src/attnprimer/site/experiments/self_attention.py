"""The experiments of the chapter "Self-attention" (``docs/chapters/self-attention.md``).

* [`projection_sweep`][attnprimer.site.experiments.self_attention.projection_sweep]: the difference
  variant with learned W_q, W_k, W_v at its default peak learning rate (tuned for the models
  without them) and at the lower ones of
  [`PROJECTION_SWEEP_LRS`][attnprimer.site.catalogue.PROJECTION_SWEEP_LRS], three seeds each;
* [`difference_step_readout`][attnprimer.site.experiments.self_attention.difference_step_readout]:
  where the model without self-attention gets the nonlinearity that |A - B| needs, by linear
  probes and by two interventions (exactly even weights; a layer norm that no longer divides by
  each state's own length);
* [`multihead_shapes`][attnprimer.site.experiments.self_attention.multihead_shapes]: the shapes
  inside [`MultiHeadAttention`][attnprimer.multihead.MultiHeadAttention], by running it;

Shape legend: B batch, S input length, T output steps, D hidden size.
"""

from __future__ import annotations

import torch
from torch.nn import functional as F

from attnprimer.dot_product import scaled_dot_product_attention
from attnprimer.multihead import MultiHeadAttention, split_heads
from attnprimer.site.catalogue import DIFFERENCE_VARIANTS, PROJECTION_SWEEP_LRS, SEEDS, site_seeds
from attnprimer.site.experiments.bahdanau import first_step_reaching
from attnprimer.site.experiments.difference_model import mean_self_attention
from attnprimer.site.experiments.probes import linear_probe
from attnprimer.tasks import DifferenceTask
from attnprimer.training.model_cache import cached_evaluation, cached_result
from attnprimer.training.train import TrainedModel, held_out_generator

__all__ = [
    "BROADCAST",
    "READOUT_CONDITIONS",
    "SHORT_NAMES",
    "broadcast_step",
    "cached_readout",
    "difference_models",
    "difference_step_readout",
    "mean_first_reaching",
    "multihead_shapes",
    "projection_sweep",
    "projection_sweep_models",
    "self_attention_models",
    "sweep_runs",
]

SHORT_NAMES = {"self-attention": "no projections",
               "self-attention with W_q, W_k, W_v": "W_q, W_k, W_v"}
"""The variants with self-attention, by the short names of the grids and tables."""


def difference_models(variant: str) -> list[TrainedModel]:
    """Every seed of one variant of
    [`DIFFERENCE_VARIANTS`][attnprimer.site.catalogue.DIFFERENCE_VARIANTS]."""
    return [model.trained() for model in site_seeds("difference", **DIFFERENCE_VARIANTS[variant])]


def self_attention_models() -> list[tuple[str, int, TrainedModel]]:
    """(short variant name, seed, model) for every difference model with self-attention."""
    return [(short, seed, trained) for variant, short in SHORT_NAMES.items()
            for seed, trained in zip(SEEDS, difference_models(variant), strict=True)]


def projection_sweep_models() -> dict[float, list[TrainedModel]]:
    """The W_q, W_k, W_v variant's seeds per peak learning rate, the default first."""
    settings = DIFFERENCE_VARIANTS["self-attention with W_q, W_k, W_v"]
    default = DifferenceTask.train_defaults["lr"]
    return {lr: [model.trained() for model in site_seeds("difference", **settings, lr=lr)]
            for lr in (default, *PROJECTION_SWEEP_LRS)}


BROADCAST = 0.95
"""A step is *broadcast* when every step puts at least this much self-attention weight on it."""


def broadcast_step(trained: TrainedModel) -> int | None:
    """The step whose state every step reads (mean weight >= ``BROADCAST``), or None.

    The weights are
    [`mean_self_attention`][attnprimer.site.experiments.difference_model.mean_self_attention]'s,
    averaged over held-out sequences.
    """
    means = mean_self_attention(trained)  # (T, T): query step, key step
    column = int(means.sum(0).argmax())
    return column if bool(torch.all(means[:, column] >= BROADCAST)) else None


def sweep_runs() -> dict[str, dict[float, list[TrainedModel]]]:
    """The runs of the sweep: ``{"no projections": {lr: [model per seed]}, "W_q, W_k, W_v":
    {lr: [...], ...}}``, the projection-free variant at its default learning rate only."""
    default = DifferenceTask.train_defaults["lr"]
    return {"no projections": {default: difference_models("self-attention")},
            "W_q, W_k, W_v": projection_sweep_models()}


def projection_sweep() -> dict[str, dict[float, list[float]]]:
    """Held-out exact match per seed, for every run of
    [`sweep_runs`][attnprimer.site.experiments.self_attention.sweep_runs], in the same shape."""
    return {variant: {lr: [cached_evaluation(trained).exact_match for trained in models]
                      for lr, models in by_lr.items()}
            for variant, by_lr in sweep_runs().items()}


def mean_first_reaching(models: list[TrainedModel], level: float) -> int | None:
    """[`first_step_reaching`][attnprimer.site.experiments.bahdanau.first_step_reaching] of the
    seeds' mean held-out exact match: the first evaluation step where the mean reaches
    ``level`` (None: it never does)."""
    scores = [trained.history["held_out_exact_match"] for trained in models]
    mean = {"held_out_step": models[0].history["held_out_step"],
            "held_out_exact_match": torch.tensor(scores).mean(0).tolist()}
    return first_step_reaching(mean, level)


READOUT_CONDITIONS = {
    "linear_counts": "a linear classifier on the counts (A, B, C) themselves",
    "linear_average": "a linear probe on the average the step reads (before the layer norm)",
    "linear_state": "a linear probe on the step's state (after the layer norm)",
    "as_trained": "the model's own classifier, as trained",
    "even_weights": "the model, its weights forced to exactly 1/S",
    "fixed_length": "the model, its layer norm dividing by the mean length, not each state's",
}
"""What
[`difference_step_readout`][attnprimer.site.experiments.self_attention.difference_step_readout]
scores, by key: each reads |A - B| on held-out sequences."""


@torch.no_grad()
def difference_step_readout(
    trained: TrainedModel, samples: int = 10_000, seeds: tuple[int, int] = (2, 3)
) -> dict[str, float]:
    """How well |A - B| can be read at each stage of the difference step, without self-attention.

    The step's state is ``norm(context + query)``, where ``context`` is the weighted average of
    the token values it reads, and its classifier is linear. With even weights the average is
    an affine function of the counts, and no linear classifier reads |A - B| from the counts
    (each class is two strips, A - B = k and A - B = -k, not one convex region), so the
    nonlinearity has to come from the uneven weights or from the layer norm, which divides
    each state by its own length. Probes are fitted on held-out stream ``seeds[0]`` and scored
    on ``seeds[1]``; the model's own scores use ``seeds[1]``.

    Returns:
        accuracy per key of
        [`READOUT_CONDITIONS`][attnprimer.site.experiments.self_attention.READOUT_CONDITIONS].
    """
    model, task = trained.model, trained.task
    if getattr(model, "self_attention", None) is not None:
        raise ValueError("the readout is for the difference model without self-attention")
    last = task.vocab_size  # the difference step
    query = model.queries[last]  # (D,)
    norm = model.norm
    features: dict[str, dict[str, torch.Tensor]] = {}
    labels = {}
    for name, seed in zip(("fit", "score"), seeds, strict=True):
        inputs, targets = task.sample(samples, held_out_generator(seed))
        values = model.key_value(F.one_hot(inputs, model.num_tokens).float())  # (B, S, D)
        queries = query.expand(len(inputs), 1, -1)  # (B, 1, D)
        context = scaled_dot_product_attention(queries, values, values)[0][:, 0]  # (B, D)
        state = context + query  # (B, D), before the layer norm
        centred = state - state.mean(-1, keepdim=True)
        length = centred.pow(2).mean(-1, keepdim=True).add(norm.eps).sqrt()  # (B, 1)
        features[name] = {
            "linear_counts": targets[:, :last].float(),
            "linear_average": context,
            "linear_state": norm(state),
            "as_trained": norm(state),
            "even_weights": norm(values.mean(1) + query),  # (B, S, D) -> (B, D)
            "fixed_length": centred / length.mean() * norm.weight + norm.bias,
        }
        labels[name] = targets[:, last]
    results = {}
    for key in READOUT_CONDITIONS:
        if key.startswith("linear_"):
            results[key] = linear_probe(features["fit"][key], labels["fit"],
                                        features["score"][key], labels["score"],
                                        task.num_classes)
        else:
            predicted = model.classifier(features["score"][key]).argmax(-1)
            results[key] = (predicted == labels["score"]).float().mean().item()
    return results


def cached_readout(trained: TrainedModel) -> dict[str, float]:
    """[`difference_step_readout`][attnprimer.site.experiments.self_attention.difference_step_readout],
    computed once per model and code: the page and the claims tests read the same numbers."""
    return cached_result(difference_step_readout, trained)


def multihead_shapes(batch: int = 2, length: int = 5, memory_length: int = 7, dim: int = 8,
                     heads: int = 2) -> list[tuple[str, str, tuple[int, ...]]]:
    """(what happens, the tensor, its shape) at each stage of a cross-attention in H heads."""
    with torch.random.fork_rng():
        torch.manual_seed(0)
        attention = MultiHeadAttention(dim, heads)
        x = torch.randn(batch, length, dim)
        memory = torch.randn(batch, memory_length, dim)
    q = split_heads(attention.query_proj(x), heads)
    k = split_heads(attention.key_proj(memory), heads)
    v = split_heads(attention.value_proj(memory), heads)
    output, weights = attention(x, memory)
    rows = [
        ("queries come from x", "x", x),
        ("keys and values from memory", "memory", memory),
        ("project, then split_heads", "q = split_heads(W_q x)", q),
        ("", "k = split_heads(W_k memory)", k),
        ("one score per (head, query, key)", "weights", weights),
        ("weighted values, per head", "weights @ v", weights @ v),
        ("merge_heads, then W_o", "output", output),
    ]
    return [(note, name, tuple(tensor.shape)) for note, name, tensor in rows]
