"""What the induction model's heads do, shown by intervening on them.

Used by the chapter "Induction heads" (``docs/chapters/induction-heads.md``).

[`run_with`][attnprimer.site.experiments.induction_interventions.run_with] is the forward pass of
[`AttentionOnly`][attnprimer.models.attention_only.AttentionOnly] written out step by step, so
that one head's part can be changed on the way:

* **ablation**: a head's context (its weighted average of values, before the output
  projection) is replaced by zeros (*zero ablation*) or by its mean over the batch at each
  position (*mean ablation*); the two can disagree, so both are reported;
* **path patching**: the keys of one layer-2 head are computed from a residual stream in
  which one layer-1 head's output comes from a run on *another* sequence; its queries and
  values, and every other head, see the real stream. If the induction head's keys are built
  from what the previous-token head wrote, this alone should break the copy.

[`interventions`][attnprimer.site.experiments.induction_interventions.interventions] measures the
loss on the repeat under each of them, and also on held-out letter pairs and longer repeats.

Shape legend: B batch, L length, D model dim, H heads, Dh = D / H.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import torch

from attnprimer.dot_product import scaled_dot_product_attention
from attnprimer.masks import causal_mask
from attnprimer.models.attention_only import AttentionOnly
from attnprimer.multihead import merge_heads, split_heads
from attnprimer.site.experiments.induction_heads import (
    cached_curves,
    heads_of,
    induction_score,
    repeat_losses,
)
from attnprimer.training.model_cache import cached_result
from attnprimer.training.train import TrainedModel, held_out_generator

__all__ = ["LONGER", "SAMPLES", "Control", "Interventions", "cached_control",
           "cached_interventions", "control", "head_outputs", "interventions", "run_with",
           "seen_boost"]

SAMPLES = 2000
"""Held-out sequences each intervention is measured on."""

LONGER = (13, 16)
"""Repeats longer than any of training (4 to 12 letters): 13 to 16, in the same 32 letters."""


def _index(head: str) -> tuple[int, int]:
    """``"layer 2.1"`` -> (1, 0): the block and the head, counted from 0."""
    layer, head_number = head.removeprefix("layer ").split(".")
    return int(layer) - 1, int(head_number) - 1


# --8<-- [start:run_with]
def run_with(model: AttentionOnly, tokens: torch.Tensor, *,
             contexts: dict[str, torch.Tensor] | None = None,
             key_streams: dict[str, torch.Tensor] | None = None):
    """The model's forward pass, with heads' contexts or keys' inputs replaced.

    Args:
        tokens: (B, L).
        contexts: by head, (B, L, Dh) to use instead of its context.
        key_streams: by head, (B, L, D) the residual stream to compute its keys from.

    Returns:
        outputs (tuple): ``(logits, weights, contexts)``: logits (B, L, V + 1), and by head
        its weights (B, L, L) and its context (B, L, Dh).
    """
    contexts, key_streams = contexts or {}, key_streams or {}
    length = tokens.shape[1]
    x = model.embed(tokens) + model.position.weight[:length]  # (B, L, D)
    weights, seen = {}, {}
    for layer, block in enumerate(model.blocks):
        attention, heads = block.attention, block.attention.num_heads
        normed = block.norm(x)
        q = split_heads(attention.query_proj(normed), heads)  # (B, H, L, Dh)
        k = split_heads(attention.key_proj(normed), heads)
        v = split_heads(attention.value_proj(normed), heads)
        for head, stream in key_streams.items():
            at, h = _index(head)
            if at == layer:  # this head's keys from another stream
                other = block.norm(stream)  # (B, L, D)
                k[:, h] = split_heads(attention.key_proj(other), heads)[:, h]
        context, w = scaled_dot_product_attention(q, k, v, causal_mask(length))
        for h in range(heads):
            name = f"layer {layer + 1}.{h + 1}"
            weights[name], seen[name] = w[:, h], context[:, h]
            if name in contexts:
                context[:, h] = contexts[name]  # (B, L, Dh)
        x = x + attention.out_proj(merge_heads(context))  # (B, L, D)
    return model.readout(model.norm(x)), weights, seen
# --8<-- [end:run_with]


def head_outputs(model: AttentionOnly, head: str, context: torch.Tensor) -> torch.Tensor:
    """What ``head`` adds to the residual stream for its ``context`` (B, L, Dh): its slice
    of the output projection, without the projection's bias. -> (B, L, D)."""
    layer, h = _index(head)
    projection = model.blocks[layer].attention.out_proj.weight  # (D, D)
    dim = context.shape[-1]
    return context @ projection[:, h * dim:(h + 1) * dim].T


def _stream_before(model: AttentionOnly, tokens: torch.Tensor, layer: int) -> torch.Tensor:
    """The residual stream entering block ``layer`` (from 0): (B, L, D)."""
    x = model.embed(tokens) + model.position.weight[: tokens.shape[1]]
    for block in model.blocks[:layer]:
        x, _ = block(x)
    return x


@dataclass(frozen=True)
class Interventions:
    """One trained model's loss on the repeat (nats), intact and under each intervention.

    Attributes:
        previous_head, induction_head: the heads found by their scores (``heads_of``).
        chance: ln V.
        intact: the loss on the repeat, nothing changed; ``intact_first``: on the first
            occurrence.
        zero, mean: per head, the loss on the repeat with the head zero- or mean-ablated;
            ``"layer 2"``: both layer-2 heads at once.
        patched: per layer-1 head, the loss with every layer-2 head's keys computed from a
            stream where that head's output came from another sequence.
        patched_score: per layer-1 head, the induction head's induction score so patched
            (``intact_score`` without patching).
        held_out, held_out_first: the loss on repeats (and first occurrences) that step only
            along held-out letter pairs.
        longer: the loss on repeats of ``LONGER`` letters.
    """

    previous_head: str
    induction_head: str
    chance: float
    intact: float
    intact_first: float
    zero: dict[str, float]
    mean: dict[str, float]
    patched: dict[str, float]
    patched_score: dict[str, float]
    intact_score: float
    held_out: float
    held_out_first: float
    longer: float


@torch.no_grad()
def interventions(trained: TrainedModel, samples: int = SAMPLES) -> Interventions:
    """Measure ``trained`` (a two-layer model) intact and under every intervention."""
    task, model = trained.task, trained.model.model
    previous, induction = heads_of(cached_curves(trained))
    generator = held_out_generator()
    repeats = task.repeats(samples, generator)
    other = task.repeats(samples, generator)  # the other sequences, for path patching
    tokens, other_tokens = repeats.tokens[:, :-1], other.tokens[:, :-1]
    logits, _, contexts = run_with(model, tokens)
    intact, intact_first = repeat_losses(logits, repeats)
    second = [head for head in contexts if head.startswith("layer 2.")]
    zero, mean = {}, {}
    for group in [[head] for head in contexts] + [second]:
        name = "layer 2" if len(group) > 1 else group[0]
        zero[name] = repeat_losses(run_with(model, tokens, contexts={
            head: torch.zeros_like(contexts[head]) for head in group})[0], repeats)[0]
        mean[name] = repeat_losses(run_with(model, tokens, contexts={
            head: contexts[head].mean(dim=0, keepdim=True).expand_as(contexts[head])
            for head in group})[0], repeats)[0]
    _, _, other_contexts = run_with(model, other_tokens)
    stream = _stream_before(model, tokens, 1)  # entering layer 2: (B, L, D)
    patched, patched_score = {}, {}
    for head in (name for name in contexts if name.startswith("layer 1.")):
        # the stream with this head's output taken from the other sequences
        swapped = (stream - head_outputs(model, head, contexts[head])
                   + head_outputs(model, head, other_contexts[head]))
        logits, weights, _ = run_with(model, tokens,
                                      key_streams=dict.fromkeys(second, swapped))
        patched[head] = repeat_losses(logits, repeats)[0]
        patched_score[head] = induction_score(weights[induction], repeats)
    _, weights, _ = run_with(model, tokens)
    held = task.repeats(samples, generator, pairs="held-out")
    held_out, held_out_first = repeat_losses(model(held.tokens[:, :-1]).logits, held)
    longer = task.repeats(samples, generator, lengths=LONGER)
    return Interventions(
        previous, induction, math.log(task.vocab_size), intact, intact_first, zero, mean,
        patched, patched_score, induction_score(weights[induction], repeats),
        held_out, held_out_first, repeat_losses(model(longer.tokens[:, :-1]).logits, longer)[0])


def cached_interventions(trained: TrainedModel) -> Interventions:
    """:func:`interventions`, computed once per model and code version."""
    return cached_result(interventions, trained, encode=asdict,
                         decode=lambda data: Interventions(**data))


def seen_boost(logits: torch.Tensor, repeats, where: torch.Tensor) -> float:
    """How much more probability a model gives a letter already in the context than one not
    yet in it, at the predictions ``where`` (B, S - 1): the ratio of the mean probability of
    a seen letter to that of an unseen one (1: no preference).

    Args:
        logits: (B, S - 1, V + 1) on ``repeats.tokens[:, :-1]``.
    """
    tokens = repeats.tokens[:, :-1]  # (B, L)
    probabilities = logits.softmax(dim=-1)[..., 1:]  # (B, L, V): the letters only
    letters = torch.arange(1, probabilities.shape[-1] + 1)
    present = (tokens[..., None] == letters).cummax(dim=1).values  # (B, L, V): seen by t
    seen = (probabilities * present).sum(-1) / present.sum(-1)
    unseen = (probabilities * ~present).sum(-1) / (~present).sum(-1).clamp(min=1)
    keep = where & (~present).any(-1)  # a prediction with at least one unseen letter
    return (seen[keep].mean() / unseen[keep].mean()).item()


@dataclass(frozen=True)
class Control:
    """The one-layer control's losses (nats), and what it does instead of copying.

    Attributes:
        repeat, first: the loss on the repeat and on the first occurrence.
        held_out, longer: on held-out letter pairs, and on repeats of ``LONGER`` letters.
        boost: ``seen_boost`` on the repeat's predictions; ``boost_ablated`` and
            ``repeat_ablated`` with both its heads zero-ablated.
    """

    repeat: float
    first: float
    held_out: float
    longer: float
    boost: float
    boost_ablated: float
    repeat_ablated: float


@torch.no_grad()
def control(trained: TrainedModel, samples: int = SAMPLES) -> Control:
    """Measure the one-layer model: intact, and with its attention switched off."""
    task, model = trained.task, trained.model.model
    generator = held_out_generator()
    repeats = task.repeats(samples, generator)
    tokens = repeats.tokens[:, :-1]
    logits, _, contexts = run_with(model, tokens)
    ablated = run_with(model, tokens, contexts={
        head: torch.zeros_like(context) for head, context in contexts.items()})[0]
    repeat, first = repeat_losses(logits, repeats)
    held = task.repeats(samples, generator, pairs="held-out")
    longer = task.repeats(samples, generator, lengths=LONGER)
    return Control(repeat, first, repeat_losses(model(held.tokens[:, :-1]).logits, held)[0],
                   repeat_losses(model(longer.tokens[:, :-1]).logits, longer)[0],
                   seen_boost(logits, repeats, repeats.in_repeat()),
                   seen_boost(ablated, repeats, repeats.in_repeat()),
                   repeat_losses(ablated, repeats)[0])


def cached_control(trained: TrainedModel) -> Control:
    """:func:`control`, computed once per model and code version."""
    return cached_result(control, trained, encode=asdict, decode=lambda data: Control(**data))
