"""The experiments of the chapter "Training the Transformer": norms, warm-up, residuals.

* [`first_gradient_norms`][attnprimer.site.experiments.transformer_training.first_gradient_norms]:
  the gradient of the very first training step, as [`train`][attnprimer.training.train.train]
  computes it (same initialisation, same first batch), its size block by block. Xiong et al. (2020)
  explain post-LN's need for a warm-up by the size of these gradients at initialisation; here they
  are measured, for pre-LN, post-LN and blocks without residual connections.
* [`position_spread`][attnprimer.site.experiments.transformer_training.position_spread]: how much
  the encoder's output vectors differ from one input position to the next. Attention averages
  the positions it reads; without the residual path that keeps each position's own vector,
  the averages of averages nearly become one vector at initialisation, an explanation of the
  gradients above that no intervention here tests.
* [`step_blind_loss`][attnprimer.site.experiments.transformer_training.step_blind_loss]: the
  training loss of the best predictor that knows which letters the input holds but not which
  step it is writing;
  [`step_dependence`][attnprimer.site.experiments.transformer_training.step_dependence]
  measures how far a trained model's predictions are from that predictor, and how much they
  change from step to step: whether a model that is stuck has learned the proportions only.

The runs themselves are catalogue models (``NORM_PLACEMENTS``, ``NO_RESIDUALS`` in
[`attnprimer.site.catalogue`][attnprimer.site.catalogue]); their histories are read as they are.
Everything here is on the CPU and takes well under a second per model.
"""

from __future__ import annotations

import math
from math import comb, log

import numpy as np
import torch
from torch import nn

from attnprimer.tasks import ReversalTransformerTask
from attnprimer.training.train import (
    TrainConfig,
    TrainedModel,
    held_out_generator,
    seed_everything,
    training_generator,
)

__all__ = ["first_gradient_norms", "initial_model", "position_spread", "step_blind_loss",
           "step_dependence"]


def _norm(module: nn.Module) -> float:
    """The size of the gradient of all of ``module``'s parameters, as one vector."""
    return math.sqrt(sum(float(p.grad.pow(2).sum()) for p in module.parameters()
                         if p.grad is not None))


def initial_model(task: ReversalTransformerTask, config: TrainConfig) -> nn.Module:
    """The model ``train(task, config)`` starts from: the same seed, before any step."""
    seed_everything(config.seed)
    return task.build_model()


def first_gradient_norms(task: ReversalTransformerTask, config: TrainConfig) -> dict[str, float]:
    """Gradient norm of each block at the first training step, before any update.

    The model is initialised and the first batch drawn exactly as ``train(task, config)``
    does, so this is the gradient the first Adam step of that run sees. Encoder-decoder only.

    Returns:
        ``{"encoder 1": ..., "encoder 2": ..., "decoder 1": ..., "output": ...}``, in the
        order the input flows through them; ``"output"`` is the final linear layer.

    Examples:
        >>> task = ReversalTransformerTask(dim=8, heads=2, layers=1)
        >>> norms = first_gradient_norms(task, TrainConfig(steps=1))
        >>> list(norms), all(value > 0 for value in norms.values())
        (['encoder 1', 'decoder 1', 'output'], True)
    """
    if task.architecture != "encoder-decoder":
        raise ValueError(f"encoder-decoder models only, got {task.architecture!r}")
    model = initial_model(task, config)
    batch = task.sample(config.batch_size, training_generator(config.seed))
    task.loss(model, batch).backward()
    norms = {f"encoder {layer}": _norm(block)
             for layer, block in enumerate(model.encoder, start=1)}
    norms |= {f"decoder {layer}": _norm(block)
              for layer, block in enumerate(model.decoder, start=1)}
    return norms | {"output": _norm(model.out)}


@torch.no_grad()
def position_spread(model: nn.Module, inputs: torch.Tensor) -> float:
    """How far apart the encoder's output vectors are across the positions of one input.

    For each input, the mean distance of each letter's output vector (the memory the decoder
    reads) from the mean of that input's vectors, divided by their mean length; averaged over
    the inputs. 0: every position carries the same vector. Encoder-decoder models.

    Args:
        model: a [`Transformer`][attnprimer.transformer.Transformer].
        inputs: (B, S) letters, padding 0; the padding is left out.

    Examples:
        >>> task = ReversalTransformerTask(dim=8, heads=2, layers=1)
        >>> model = initial_model(task, TrainConfig())
        >>> 0 < position_spread(model, torch.tensor([[1, 2, 3], [4, 5, 0]])) < 2
        True
    """
    memory, source_mask, _ = model.encode(inputs)  # (B, S, D), (B, 1, S)
    spreads = []
    for vectors, real in zip(memory, source_mask[:, 0], strict=True):
        vectors = vectors[real]  # (n, D): the letters only
        distance = (vectors - vectors.mean(dim=0)).norm(dim=-1).mean()
        spreads.append(float(distance / vectors.norm(dim=-1).mean()))
    return float(np.mean(spreads))


def step_blind_loss(max_len: int = 10, vocab_size: int = 8, min_len: int = 1) -> float:
    """The training loss of a predictor that knows the input's letters but not the step.

    At every step of an input of n letters it gives each letter its share of the n + 1 tokens
    to be written, count / (n + 1), and the end 1 / (n + 1): the best a model can do whose
    prediction is the same at every step of an input (it is the maximum-likelihood fit of one
    distribution to the n + 1 tokens). Its cross-entropy, averaged over every output token as
    the training loss is (lengths drawn uniformly from ``min_len`` to ``max_len``, letters
    uniformly), is computed exactly: a letter's count in n letters is binomial, and over an
    input the loss sums to (n + 1) log(n + 1) - sum over letters of count log count.

    Examples:
        >>> round(step_blind_loss(max_len=1, vocab_size=2), 4)  # "A.": 2 log 2 over 2 tokens
        0.6931
        >>> round(step_blind_loss(), 4)
        1.5964
    """
    total = tokens = 0.0
    for n in range(min_len, max_len + 1):
        p = 1 / vocab_size
        expected = vocab_size * sum(comb(n, c) * p**c * (1 - p) ** (n - c) * c * log(c)
                                    for c in range(1, n + 1))  # E[sum count log count]
        total += (n + 1) * log(n + 1) - expected
        tokens += n + 1
    return total / tokens


@torch.no_grad()
def step_dependence(trained: TrainedModel, samples: int = 500, seed: int = 0) -> dict[str, float]:
    """How a trained model's predictions depend on the step, teacher-forced, on held-out inputs.

    For each input and each scored step (its n letters and the end), p_t is the model's
    predicted distribution over the outputs; q is the step-blind predictor of
    [`step_blind_loss`][attnprimer.site.experiments.transformer_training.step_blind_loss] for
    that input (each letter count / (n + 1), the end 1 / (n + 1)). Distances are total
    variation, half the sum of absolute differences: 0 the same, 1 disjoint.

    Returns:
        ``"across steps"``: the mean distance of p_t from the mean of p over the input's steps
        (0: the same prediction at every step); ``"from step-blind"``: the mean distance of p_t
        from q; ``"loss"``: the model's cross-entropy on these inputs, ``"step-blind loss"``:
        q's, both averaged over every output token.

    Examples:
        >>> from attnprimer.tasks import ReversalTransformerTask
        >>> from attnprimer.training.train import train
        >>> trained = train(ReversalTransformerTask(dim=8, heads=2, layers=1), TrainConfig(steps=2))
        >>> found = step_dependence(trained, samples=20)
        >>> sorted(found), 0 <= found["across steps"] <= 1
        (['across steps', 'from step-blind', 'loss', 'step-blind loss'], True)
    """
    task, model = trained.task, trained.model.eval()
    batch = task.sample(samples, held_out_generator(seed))
    p = model(batch.inputs, batch.targets).logits.softmax(dim=-1)  # (B, T, C)
    scored = batch.targets != 0  # (B, T): the letters and the end
    counts = torch.zeros(p.shape[0], p.shape[2])  # (B, C)
    counts.scatter_add_(1, batch.inputs, torch.ones_like(batch.inputs, dtype=counts.dtype))
    counts[:, 0] = 0.0  # padding is no output
    counts[:, task.end] = 1.0
    q = counts / counts.sum(dim=1, keepdim=True)  # (B, C): the step-blind prediction
    weights = scored[..., None].float()  # (B, T, 1)
    mean_p = (p * weights).sum(dim=1) / weights.sum(dim=1)  # (B, C): over the input's steps
    across = 0.5 * (p - mean_p[:, None]).abs().sum(dim=-1)  # (B, T)
    blind = 0.5 * (p - q[:, None]).abs().sum(dim=-1)  # (B, T)
    truth = batch.targets.clamp(min=0)[..., None]  # (B, T, 1)
    loss = -p.gather(2, truth)[..., 0].log()  # (B, T)
    blind_loss = -q[:, None].expand_as(p).gather(2, truth)[..., 0].log()  # (B, T)
    return {"across steps": float(across[scored].mean()),
            "from step-blind": float(blind[scored].mean()),
            "loss": float(loss[scored].mean()), "step-blind loss": float(blind_loss[scored].mean())}
