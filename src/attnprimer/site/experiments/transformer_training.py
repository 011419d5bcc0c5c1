"""The experiments of the Transformer chapter's section on training: norms, warm-up, residuals.

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

The runs themselves are catalogue models (``NORM_PLACEMENTS``, ``NO_RESIDUALS`` in
[`attnprimer.site.catalogue`][attnprimer.site.catalogue]); their histories are read as they are.
Everything here is on the CPU and takes well under a second per model.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from torch import nn

from attnprimer.tasks import ReversalTransformerTask
from attnprimer.training.train import TrainConfig, seed_everything, training_generator

__all__ = ["first_gradient_norms", "initial_model", "position_spread"]


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
