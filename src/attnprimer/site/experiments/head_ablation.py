"""Switching attention heads off: the intervention that asks whether a model needs a head.

A heatmap shows where a head looks; it does not show that the model needs what the head reads.
[`heads_off`][attnprimer.site.experiments.head_ablation.heads_off] removes heads from a trained
Transformer of [`attnprimer.transformer`][attnprimer.transformer] for the length of a ``with``
block, so that its accuracy can be measured without them.

A multi-head attention concatenates its H heads' contexts, head-major (head 1's Dh
columns first: [`merge_heads`][attnprimer.multihead.merge_heads]), and mixes them with its
output projection. Switching head h off zeroes its Dh columns just before that projection,
through a forward pre-hook: the model's code and weights stay as they are, and the other
heads, the residual connection and the projection's bias are untouched. The head's weights
are still computed (and returned); only what it read no longer reaches the output.

Zeroing is one way to remove a head, and it also moves the projection's input away from any
value it took in training: a head whose output is large on average is missed for its mean as
much as for what it reads. *Mean ablation* replaces the head's slice by its mean over held-out
data instead ([`head_means`][attnprimer.site.experiments.head_ablation.head_means]; pass it to
[`heads_off`][attnprimer.site.experiments.head_ablation.heads_off] as ``means``): what the head
carries *about this input* is gone, its average is kept.

Heads are named as the models name their weights: ``"encoder self 1.2"`` (layer 1, head 2),
``"decoder self 2.1"``, ``"cross 1.3"``.

Shape legend: B batch, L query length, D model dim, H heads, Dh = D / H.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager

import torch
from torch import nn

from attnprimer.multihead import MultiHeadAttention
from attnprimer.transformer import DecoderOnly, Transformer

__all__ = ["attention_layer", "head_means", "head_names", "heads_off"]

_KINDS = ("encoder self", "decoder self", "cross")


def head_names(model: nn.Module) -> list[str]:
    """Every head of a Transformer, by name, in the order of its layers.

    Examples:
        >>> head_names(DecoderOnly(num_outputs=5, dim=8, heads=2, layers=2))
        ['decoder self 1.1', 'decoder self 1.2', 'decoder self 2.1', 'decoder self 2.2']
        >>> len(head_names(Transformer(6, 8, dim=8, heads=2, layers=2)))  # 3 kinds, 2 layers
        12
    """
    if isinstance(model, DecoderOnly):
        kinds, layers = ("decoder self",), len(model.blocks)
    elif isinstance(model, Transformer):
        kinds, layers = _KINDS, len(model.encoder)
    else:
        raise TypeError(f"expected a Transformer or a DecoderOnly, got {type(model).__name__}")
    heads = attention_layer(model, f"{kinds[0]} 1").num_heads
    return [f"{kind} {layer}.{head}" for kind in kinds for layer in range(1, layers + 1)
            for head in range(1, heads + 1)]


def attention_layer(model: nn.Module, name: str) -> MultiHeadAttention:
    """The attention module that ``name`` (``"cross 2"``, or a head ``"cross 2.3"``) is in.

    Examples:
        >>> model = Transformer(6, 8, dim=8, heads=2, layers=2)
        >>> attention_layer(model, "cross 2.1") is model.decoder[1].cross_attention
        True
    """
    kind, _, layer = name.partition(".")[0].rpartition(" ")
    if kind not in _KINDS or not layer.isdigit():
        raise ValueError(f"a head is named like 'cross 1.2' ({', '.join(_KINDS)}), got {name!r}")
    index = int(layer) - 1
    if isinstance(model, DecoderOnly) and kind == "decoder self":
        blocks, attribute = model.blocks, "attention"
    elif isinstance(model, Transformer):
        blocks, attribute = {"encoder self": (model.encoder, "attention"),
                             "decoder self": (model.decoder, "self_attention"),
                             "cross": (model.decoder, "cross_attention")}[kind]
    else:
        raise ValueError(f"{type(model).__name__} has no {kind} attention")
    if not 0 <= index < len(blocks):
        raise ValueError(f"{name!r}: the model has {len(blocks)} layers")
    return getattr(blocks[index], attribute)


# --8<-- [start:zero_heads]
def _zero_heads(heads: list[int], num_heads: int):
    """A pre-hook for ``out_proj`` that zeroes these heads' slices of its input."""

    def hook(projection: nn.Linear, inputs: tuple[torch.Tensor]):
        merged = inputs[0].clone()  # (B, L, D): the heads side by side
        # A view of the copy: (B, L, D) -> (B, L, H, Dh), head-major
        per_head = merged.view(*merged.shape[:-1], num_heads, -1)
        per_head[..., heads, :] = 0.0  # these heads' contexts: gone
        return (merged,)  # out_proj mixes what is left

    return hook
# --8<-- [end:zero_heads]


def _mean_heads(heads: list[int], num_heads: int, means: torch.Tensor):
    """A pre-hook for ``out_proj`` that sets these heads' slices to their means (H, Dh)."""

    def hook(projection: nn.Linear, inputs: tuple[torch.Tensor]):
        merged = inputs[0].clone()  # (B, L, D)
        per_head = merged.view(*merged.shape[:-1], num_heads, -1)  # (B, L, H, Dh)
        per_head[..., heads, :] = means[heads].to(merged.dtype)  # (len(heads), Dh), broadcast
        return (merged,)

    return hook


def _real_queries(model: nn.Module, inputs: torch.Tensor,
                  targets: torch.Tensor) -> dict[str, torch.Tensor]:
    """Per kind of attention: (B, L), True where the query is real, teacher-forced: an input
    letter, or a step whose output is scored (a letter or the end)."""
    scored = targets != 0  # (B, T)
    if isinstance(model, DecoderOnly):  # input, then from the separator on the output steps
        return {"decoder self": torch.cat([inputs != 0, scored], dim=1)}  # (B, S + T)
    return {"encoder self": inputs != 0, "decoder self": scored, "cross": scored}


@torch.no_grad()
def head_means(model: nn.Module, inputs: torch.Tensor,
               targets: torch.Tensor) -> dict[str, torch.Tensor]:
    """Every attention layer's mean head outputs, for mean ablation.

    One teacher-forced pass over ``inputs`` (B, S) and ``targets`` (B, T); for each attention
    layer, the input of its output projection (every head's context, side by side) is averaged
    over the real queries (input letters, and the output steps that are scored: padding
    left out), then split by head.

    Returns:
        ``{"cross 1": (H, Dh), ...}``: layer name -> each head's mean output.

    Examples:
        >>> model = Transformer(6, 8, dim=8, heads=2, layers=1)
        >>> inputs, targets = torch.tensor([[1, 2, 0]]), torch.tensor([[2, 1, 7, 0]])
        >>> means = head_means(model, inputs, targets)
        >>> sorted(means), tuple(means["cross 1"].shape)
        (['cross 1', 'decoder self 1', 'encoder self 1'], (2, 4))
        >>> with heads_off(model, ["cross 1.1", "cross 1.2"], means=means):
        ...     logits = model(inputs, targets).logits  # each head replaced by its mean
    """
    layers = dict.fromkeys(name.rpartition(".")[0] for name in head_names(model))
    real = _real_queries(model, inputs, targets)
    seen: dict[str, torch.Tensor] = {}
    handles = []
    for name in layers:
        def record(projection, given, name=name):
            seen[name] = given[0]  # (B, L, D)
        handles.append(attention_layer(model, name).out_proj.register_forward_pre_hook(record))
    try:
        model(inputs, targets)
    finally:
        for handle in handles:
            handle.remove()
    means = {}
    for name in layers:
        merged, where = seen[name], real[name.rpartition(" ")[0]]
        heads = attention_layer(model, name).num_heads
        means[name] = merged[where].mean(dim=0).view(heads, -1)  # (H, Dh)
    return means


@contextmanager
def heads_off(model: nn.Module, names: Iterable[str],
              means: dict[str, torch.Tensor] | None = None) -> Iterator[nn.Module]:
    """Inside the ``with`` block, the named heads contribute nothing to ``model``'s output.

    By default a head's slice is zeroed (zero ablation); with ``means``, from
    [`head_means`][attnprimer.site.experiments.head_ablation.head_means], it is set to the
    head's mean output instead (mean ablation). The hooks are removed on leaving the block,
    however it is left.

    Examples:
        >>> model = Transformer(6, 8, dim=8, heads=2, layers=1)
        >>> inputs = torch.tensor([[1, 2, 3]])
        >>> before = model(inputs).logits
        >>> with heads_off(model, ["cross 1.1", "cross 1.2"]):
        ...     without_cross = model(inputs).logits
        >>> torch.equal(before, model(inputs).logits), torch.equal(before, without_cross)
        (True, False)
    """
    by_layer: dict[int, tuple[MultiHeadAttention, str, list[int]]] = {}
    for name in names:
        layer = attention_layer(model, name)
        head = name.rpartition(".")[2]
        if "." not in name or not head.isdigit() or not 1 <= int(head) <= layer.num_heads:
            raise ValueError(f"{name!r}: heads are numbered 1 to {layer.num_heads}")
        by_layer.setdefault(id(layer), (layer, name.rpartition(".")[0], []))[2].append(
            int(head) - 1)
    handles = []
    try:
        for layer, layer_name, heads in by_layer.values():
            hook = (_zero_heads(sorted(heads), layer.num_heads) if means is None
                    else _mean_heads(sorted(heads), layer.num_heads, means[layer_name]))
            handles.append(layer.out_proj.register_forward_pre_hook(hook))
        yield model
    finally:
        for handle in handles:
            handle.remove()
