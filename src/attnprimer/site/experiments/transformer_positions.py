"""Interventions on the positions of the trained Transformers: why they fail on longer inputs.

The sinusoid added to each embedding
([`SinusoidalEncoding`][attnprimer.positional.SinusoidalEncoding]) is what tells these models'
encoder where a token sits; a causal stack can also tell order from its mask, which the moves
below leave as it is. Sinusoids can be
evaluated at any position, fractional ones included, so the position a model *believes* each
token has can be chosen freely, without retraining and without touching the model's code:

* [`sinusoid_at`][attnprimer.site.experiments.transformer_positions.sinusoid_at] is the encoding of
  arbitrary (float) positions;
* [`moved_positions`][attnprimer.site.experiments.transformer_positions.moved_positions], a context
  manager, runs a trained model with the positions of its input letters and those of its
  output steps moved by two functions, one per side;
* [`position_scores`][attnprimer.site.experiments.transformer_positions.position_scores] scores a
  model under such a move, length by length, in one teacher-forced pass;
  [`extra_letters`][attnprimer.site.experiments.transformer_positions.extra_letters] decodes
  greedily with the encoder's positions shifted, and counts the letters written before the end.

The moves the chapter uses (``MOVES``): *shift* a short input's positions (or its output
steps') by ``k``, to other positions training used (``k = 1``, inputs of up to 9 letters) or to
unseen ones (larger ``k``); *squeeze* a long input's positions into the trained range ``0..9``.

Everything runs on held-out inputs, under ``torch.no_grad``, forward only, on the CPU.
Shape legend: B batch, S input length, T output steps, L sequence length, D model dim,
C output classes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager

import torch
from torch import nn

from attnprimer.positional import SinusoidalEncoding
from attnprimer.training.model_cache import cached_result
from attnprimer.training.train import TrainedModel, held_out_generator
from attnprimer.transformer import PAD, DecoderOnly, Transformer

__all__ = ["Move", "cached_extra_letters", "cached_position_scores", "extra_letters",
           "moved_positions", "position_scores", "shift", "sinusoid_at", "squeeze"]

Move = Callable[[torch.Tensor], torch.Tensor]
"""Where each position goes: natural positions (P,) float -> the positions to encode (P,)."""


def sinusoid_at(positions: torch.Tensor, dim: int,
                base: float = 10_000.0) -> torch.Tensor:
    """The sinusoidal encoding of any positions, fractional ones too: (P,) -> (P, D).

    The formula of [`sinusoidal_encoding`][attnprimer.positional.sinusoidal_encoding], with
    the positions given instead of ``0..L-1``.

    Examples:
        >>> from attnprimer.positional import sinusoidal_encoding
        >>> torch.allclose(sinusoid_at(torch.arange(5.0), 8), sinusoidal_encoding(5, 8))
        True
        >>> sinusoid_at(torch.tensor([0.5]), 2)             # halfway between 0 and 1
        tensor([[0.4794, 0.8776]])
    """
    # One speed per dimension pair, base^(-2i / D): (D/2,)
    speeds = base ** (-torch.arange(0, dim, 2, dtype=torch.float64) / dim)
    angles = positions.double()[:, None] * speeds  # (P, D/2)
    encoding = torch.stack([angles.sin(), angles.cos()], dim=-1)  # (P, D/2, 2)
    return encoding.flatten(-2).float()  # (P, D)


def _unmoved(positions: torch.Tensor) -> torch.Tensor:
    return positions


# --8<-- [start:moved_positions]
def _encoding(original: SinusoidalEncoding, move: Move) -> SinusoidalEncoding:
    """A copy of ``original`` whose row p holds the sinusoid of ``move(p)``."""
    size, dim = original.table.shape  # (P, D)
    positions = torch.arange(size, dtype=torch.float64)  # (P,): 0, 1, ...
    moved = SinusoidalEncoding(dim, size)
    moved.table = sinusoid_at(move(positions), dim)  # (P, D), row p: move(p)
    return moved


@contextmanager
def moved_positions(model: nn.Module, source: Move = _unmoved,
                    target: Move = _unmoved) -> Iterator[nn.Module]:
    """Run ``model`` with its positions moved: the input letters' by ``source``, the rest by
    ``target``.

    For the encoder-decoder [`Transformer`][attnprimer.transformer.Transformer], ``source``
    moves the encoder's positions and ``target`` the decoder's (the start token and the outputs
    so far). For [`DecoderOnly`][attnprimer.transformer.DecoderOnly], ``source`` moves the
    positions of the input letters (``0..S-1``) and ``target`` those of the separator and the
    outputs (``S`` on); its inputs must then have no padding. Each side's position module is
    swapped, while that side runs, for one whose table holds the sinusoids of the moved
    positions; the model's code and weights are untouched, and all is restored on exit.

    Examples:
        >>> model = Transformer(num_tokens=6, num_outputs=8, dim=16, heads=2, layers=1)
        >>> inputs = torch.tensor([[1, 2, 3]])
        >>> with moved_positions(model, source=lambda p: p + 2):
        ...     shifted = model(inputs).logits
        >>> torch.equal(shifted, model(inputs).logits)      # restored on exit
        False
    """
    if isinstance(model, Transformer):  # one table per side
        encoder, decoder = (_encoding(model.position, move)
                            for move in (source, target))
        model.encode = _with_position(model, "encode", lambda *_: encoder)
        model.decode = _with_position(model, "decode", lambda *_: decoder)
        methods = ("encode", "decode")
    elif isinstance(model, DecoderOnly):  # one table: the input, then the rest
        def encoding(sequence, source_length):
            _check_unpadded(sequence, source_length)
            return _encoding(model.position, lambda p: torch.where(
                p < source_length, source(p), target(p)))

        model.run = _with_position(model, "run", encoding)
        methods = ("run",)
    else:
        raise TypeError(f"expected a Transformer or a DecoderOnly, "
                        f"got {type(model).__name__}")
    try:
        yield model
    finally:
        for method in methods:
            delattr(model, method)  # the class's own method again
# --8<-- [end:moved_positions]


def _check_unpadded(sequence: torch.Tensor, source_length: int) -> None:
    if (sequence[:, :source_length] == PAD).any():
        raise ValueError("moved_positions on a decoder-only model needs inputs without padding")


def _with_position(model: nn.Module, method: str,
                   encoding: Callable[..., SinusoidalEncoding]) -> Callable:
    """``model.method``, run with ``model.position`` swapped for ``encoding(*arguments)``."""
    unbound = getattr(type(model), method)

    def call(*arguments):
        original = model.position
        model.position = encoding(*arguments)
        try:
            return unbound(model, *arguments)
        finally:
            model.position = original

    return call


def shift(k: float) -> Move:
    """Every position ``k`` further on: ``p -> p + k``.

    Examples:
        >>> shift(3)(torch.arange(3.0))
        tensor([3., 4., 5.])
    """
    return lambda positions: positions + k


def squeeze(length: int, last: int = 9) -> Move:
    """Positions scaled so that those of ``length`` letters span ``0..last``.

    ``p -> p last / (length - 1)``: the longest training input's range, fractions between.

    Examples:
        >>> squeeze(19)(torch.tensor([0.0, 9.0, 18.0, 19.0]))
        tensor([0.0000, 4.5000, 9.0000, 9.5000])
    """
    return lambda positions: positions * last / (length - 1)


def _move(name: str, length: int) -> Move:
    """A move by name: ``"natural"``, ``"shift k"`` or ``"squeeze"`` (into ``0..9``)."""
    if name == "natural":
        return _unmoved
    if name == "squeeze":
        return squeeze(length)
    if name.startswith("shift "):
        return shift(float(name.removeprefix("shift ")))
    raise ValueError(f"a move is 'natural', 'shift k' or 'squeeze', got {name!r}")


@torch.no_grad()
def position_scores(trained: TrainedModel, lengths: Iterable[int], source: str = "natural",
                    target: str = "natural", samples: int = 500,
                    seed: int = 0) -> dict[str, list[float]]:
    """Teacher-forced scores of a Transformer at each length, its positions moved by name.

    ``source`` and ``target`` name the moves of
    [`moved_positions`][attnprimer.site.experiments.transformer_positions.moved_positions]:
    ``"natural"``, ``"shift k"`` (every position ``k`` on) or ``"squeeze"`` (the positions of
    an input of n letters scaled by 9 / (n - 1), into the trained range). One teacher-forced
    pass per length; a sequence whose every step is right there is exactly one that greedy
    decoding gets right, since greedy decoding is teacher forcing on its own outputs.

    Returns:
        ``{"exact": [share of inputs with every letter and the end right, per length],
        "letters": [share of letters right, per length],
        "end": [share of end steps right, per length]}``.

    Examples:
        >>> from attnprimer.tasks import ReversalTransformerTask
        >>> from attnprimer.training.train import TrainConfig, train
        >>> trained = train(ReversalTransformerTask(dim=8, heads=2, layers=1), TrainConfig(steps=2))
        >>> scores = position_scores(trained, [3, 12], source="squeeze", samples=10)
        >>> [len(scores[name]) for name in ("exact", "letters", "end")]
        [2, 2, 2]
    """
    exact, letters, ends = [], [], []
    trained.model.eval()
    for length in lengths:
        batch = trained.task.at_length(length).sample(samples, held_out_generator(seed))
        with moved_positions(trained.model, _move(source, length), _move(target, length)):
            logits = trained.model(batch.inputs, batch.targets).logits  # (B, T, C)
        correct = logits.argmax(dim=-1) == batch.targets  # (B, T), T = n + 1
        exact.append(correct.all(dim=1).float().mean().item())
        letters.append(correct[:, :length].float().mean().item())
        ends.append(correct[:, length].float().mean().item())
    return {"exact": exact, "letters": letters, "end": ends}


def cached_position_scores(trained: TrainedModel, lengths: Iterable[int], source: str = "natural",
                           target: str = "natural", samples: int = 500) -> dict[str, list[float]]:
    """[`position_scores`][attnprimer.site.experiments.transformer_positions.position_scores]
    through the result cache: the page and the claims tests read the same numbers."""
    return cached_result(position_scores, trained, lengths=list(lengths), source=source,
                         target=target, samples=samples)


@torch.no_grad()
def extra_letters(trained: TrainedModel, length: int, shifts: Iterable[int], most: int = 8,
                  samples: int = 500, seed: int = 0) -> list[float]:
    """Greedy decoding, the encoder's positions shifted by k: letters written past the input's.

    For the encoder-decoder [`Transformer`][attnprimer.transformer.Transformer] only. Inputs
    of ``length`` letters get ``most`` padding tokens more (masked, so they change nothing but
    the number of greedy steps), so that the model can write up to ``length + most`` letters
    before its end token; a run that never writes the end counts ``length + most`` letters.

    Returns:
        For each shift k, the mean number of letters written minus ``length``.

    Examples:
        >>> from attnprimer.tasks import ReversalTransformerTask
        >>> from attnprimer.training.train import TrainConfig, train
        >>> trained = train(ReversalTransformerTask(dim=8, heads=2, layers=1), TrainConfig(steps=2))
        >>> len(extra_letters(trained, 4, [0, 1], samples=10))
        2
    """
    task = trained.task.at_length(length)
    batch = task.sample(samples, held_out_generator(seed))
    inputs = torch.nn.functional.pad(batch.inputs, (0, most))  # (B, S + most)
    trained.model.eval()
    extras = []
    for k in shifts:
        with moved_positions(trained.model, source=shift(k)):
            written = trained.model(inputs).logits.argmax(dim=-1)  # (B, S + most + 1)
        ended = written == task.end
        # Letters before the first end token; length + most if there is none: (B,)
        letters = torch.where(ended.any(dim=1), ended.float().argmax(dim=1),
                              torch.tensor(length + most))
        extras.append((letters.float() - length).mean().item())
    return extras


def cached_extra_letters(trained: TrainedModel, length: int, shifts: Iterable[int],
                         samples: int = 500) -> list[float]:
    """[`extra_letters`][attnprimer.site.experiments.transformer_positions.extra_letters] through
    the result cache."""
    return cached_result(extra_letters, trained, length=length, shifts=list(shifts),
                         samples=samples)
