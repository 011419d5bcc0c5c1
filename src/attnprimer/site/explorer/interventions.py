"""The chapters' interventions on one model's forward pass, as the explorer offers them.

A heatmap shows where a model looks; an intervention changes what it reads and watches the
answer. The chapters measure their interventions over thousands of held-out sequences (in
[`difference_model`][attnprimer.site.experiments.difference_model],
[`bahdanau`][attnprimer.site.experiments.bahdanau] and
[`head_ablation`][attnprimer.site.experiments.head_ablation]); the attention explorer lets a
reader make them on one input in the browser. These functions are the same interventions as
ordinary forward passes, so that the site's tests can check the page against them:

* [`difference_intervened`][attnprimer.site.explorer.interventions.difference_intervened]: the
  difference model's last step may not read some output steps, or reads the A step with the weight
  it gave the B step and the other way round (the self-attention chapter);
* [`reversal_forced`][attnprimer.site.explorer.interventions.reversal_forced]: greedy decoding in
  which one step of the attention decoder must read one chosen input position (the Bahdanau
  chapter);
* switching Transformer heads off is
  [`heads_off`][attnprimer.site.experiments.head_ablation.heads_off].

Shape legend: B batch, S input length, T output steps, D hidden size, C classes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import torch

from attnprimer.dot_product import scaled_dot_product_attention
from attnprimer.models import ModelOutput
from attnprimer.models.difference import DifferenceModel
from attnprimer.rnn import PAD, Seq2Seq
from attnprimer.site.experiments.bahdanau import one_hot, read_with
from attnprimer.site.experiments.difference_model import STEP_A, STEP_B

__all__ = ["difference_intervened", "reversal_forced"]


@torch.no_grad()
def difference_intervened(
    model: DifferenceModel,
    tokens: torch.Tensor,
    *,
    blocked: Iterable[int] = (),
    swap: bool = False,
) -> ModelOutput:
    """The difference model, with what its last step reads through self-attention changed.

    Args:
        model: a [`DifferenceModel`][attnprimer.models.difference.DifferenceModel] with
            self-attention over its output steps.
        tokens: (B, S) inputs.
        blocked: output steps the last (difference) step may not read: they are masked out
            of its self-attention row, and the softmax shares its weight among the rest.
            Every other step, and the residual connection, are left alone.
        swap: after the weights are made, exchange the last step's weights on the A and
            the B step, so that it reads each with the weight it gave the other.

    Returns:
        Logits (B, T, C) and the weights ``encoder-decoder`` (B, T, S) and ``self``
        (B, T, T), the latter as the step used them. Without an intervention this is
        ``model(tokens)``.

    Examples:
        >>> from attnprimer.tasks import DifferenceTask
        >>> model = DifferenceTask(hidden=8, self_att=True).build_model()
        >>> tokens = torch.tensor([[1, 1, 2, 0, 3]])
        >>> output = difference_intervened(model, tokens, blocked=[0])
        >>> output.attention["self"][0, -1, 0].item()       # the A step: no weight
        0.0
        >>> swapped = difference_intervened(model, tokens, swap=True).attention["self"]
        >>> plain = model(tokens).attention["self"]
        >>> torch.equal(swapped[0, -1, :2], plain[0, -1, :2].flip(0))
        True
    """
    layer = model.self_attention
    if layer is None:
        raise ValueError("this model has no self-attention over its output steps")
    hidden, read_weights = model.read(tokens)  # (B, T, D), (B, T, S)
    steps = hidden.shape[1]
    last = steps - 1
    mask = torch.ones(steps, steps, dtype=torch.bool)  # (T, T): True = may read
    mask[last, list(blocked)] = False
    query, key, value = layer.query(hidden), layer.key(hidden), layer.value(hidden)
    _, weights = scaled_dot_product_attention(query, key, value, mask)  # (B, T, T)
    if swap:
        weights = weights.clone()
        weights[:, last, [STEP_A, STEP_B]] = weights[:, last, [STEP_B, STEP_A]]
    hidden = layer.norm(hidden + weights @ value)  # the layer's residual and norm
    return ModelOutput(model.classifier(hidden),
                       {"encoder-decoder": read_weights, "self": weights})


@torch.no_grad()
def reversal_forced(
    model: Seq2Seq, inputs: torch.Tensor, force: Mapping[int, int] | None = None
) -> ModelOutput:
    """Greedy decoding, with chosen steps' attention forced onto one input position.

    Every step is fed the previous step's best guess, as in ``model(inputs)``. A step
    in ``force`` reads only the encoder state at the position it is given (weight 1
    there, 0 elsewhere) instead of the average its own weights make; the steps after it
    follow from what it wrote.

    Args:
        model: a [`Seq2Seq`][attnprimer.rnn.Seq2Seq]; ``force`` needs the attention decoder.
        inputs: (B, S) input tokens, padded with 0 at the end.
        force: output step -> the input position it must read.

    Returns:
        Logits (B, T, C) for T = S + 1 steps and, for the attention decoder, the weights
        each step read with (B, T, S). Without ``force`` this is ``model(inputs)``.

    Examples:
        >>> from attnprimer.tasks import ReversalTask
        >>> model = ReversalTask(hidden=8).build_model()
        >>> output = reversal_forced(model, torch.tensor([[1, 2, 3]]), {0: 1})
        >>> output.attention["encoder-decoder"][0, 0].tolist()
        [0.0, 1.0, 0.0]
    """
    force = dict(force or {})
    encoder, decoder = model.encoder, model.decoder
    if force and decoder.kind != "attention":
        raise ValueError(f"only the attention decoder can be forced, not {decoder.kind!r}")
    memory, final = encoder(inputs)  # (B, S, H), (B, H)
    mask = (inputs != PAD)[:, None, :]  # (B, 1, S)
    state = decoder.initial_state(final)  # (B, D)
    token = inputs.new_full((inputs.shape[0],), decoder.start)  # (B,)
    keys = decoder.keys(memory)
    all_logits, all_weights = [], []
    for step in range(inputs.shape[1] + 1):
        if step in force:  # read one chosen state: (B, S)
            position = torch.full_like(token, force[step])
            weights = one_hot(position, inputs.shape[1])
            logits, state = read_with(decoder, token, state, memory, weights)
        else:
            logits, state, weights = decoder.step(token, state, memory, final, mask, keys)
        all_logits.append(logits)
        all_weights.append(weights)
        token = logits.argmax(dim=-1)  # greedy
    attention = {}
    if decoder.kind == "attention":
        attention["encoder-decoder"] = torch.stack(all_weights, dim=1)  # (B, T, S)
    return ModelOutput(torch.stack(all_logits, dim=1), attention)
