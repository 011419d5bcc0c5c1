"""The experiments of the chapter "Bahdanau attention": what the attention decoders use.

The chapter's reversal models (``REVERSAL_DECODERS`` and the bidirectional
``REVERSAL_BIDIRECTIONAL`` of the catalogue, three seeds each) are measured here:

* [`teacher_forced`][attnprimer.site.experiments.bahdanau.teacher_forced] runs an attention
  decoder step by step from its own pieces (the encoder, ``decoder.embed``, ``decoder.cell``,
  ``decoder.out``), so that its attention weights can be replaced before they are used;
* [`forced_attention`][attnprimer.site.experiments.bahdanau.forced_attention] is the intervention:
  every output step reads exactly one encoder state, chosen relative to the letter it copies,
  and the letters it then writes are scored;
* [`largest_weight`][attnprimer.site.experiments.bahdanau.largest_weight] says how sharp the
  weights are, and [`state_probes`][attnprimer.site.experiments.bahdanau.state_probes] what the
  encoder's states hold;
* [`alignment_by_length`][attnprimer.site.experiments.bahdanau.alignment_by_length] and
  [`first_step_reaching`][attnprimer.site.experiments.bahdanau.first_step_reaching] give the
  numbers of the alignment table and the training curves (the length figure reads
  [`cached_accuracy_by_length`][attnprimer.site.experiments.length_curves.cached_accuracy_by_length]).

Everything runs on held-out inputs, under ``torch.no_grad``, forward only, on the CPU.
Shape legend: B batch, S input length, T output steps, H encoder state size, C output classes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import torch

from attnprimer.rnn import PAD, Decoder, Seq2Seq
from attnprimer.site.experiments.probes import linear_probe
from attnprimer.training.model_cache import cached_result
from attnprimer.training.train import TrainedModel, held_out_generator, single_thread

__all__ = [
    "FORCED_OFFSETS",
    "alignment_by_length",
    "alignment_offsets",
    "encoder_state_probe",
    "first_step_reaching",
    "forced_attention",
    "largest_weight",
    "one_hot",
    "read_with",
    "split_rows",
    "state_probes",
    "teacher_forced",
]

FORCED_OFFSETS: dict[str, int] = {
    "the copied letter": 0,
    "one to its right": 1,
    "two to its right": 2,
}
"""Where [`forced_attention`][attnprimer.site.experiments.bahdanau.forced_attention] puts the whole
weight: an offset from the position of the letter the step copies (+1: one to the right)."""

Force = Callable[[int, torch.Tensor], torch.Tensor]


def one_hot(positions: torch.Tensor, size: int) -> torch.Tensor:
    """Attention weights that put everything on one position: positions (B,) -> (B, size).

    Examples:
        >>> one_hot(torch.tensor([2, 0]), 3)
        tensor([[0., 0., 1.],
                [1., 0., 0.]])
    """
    return torch.nn.functional.one_hot(positions, size).float()


# --8<-- [start:forced_step]
def read_with(
    decoder: Decoder,
    token: torch.Tensor,
    state: torch.Tensor,
    memory: torch.Tensor,
    weights: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor]:
    """One step of the attention decoder that reads the encoder's states with ``weights``.

    The lines of [`Decoder.step`][attnprimer.rnn.Decoder.step] after the weights are made,
    with the weights given instead of computed.

    Args:
        decoder: the attention decoder.
        token: (B,) the previous output token.
        state: (B, H) the previous decoder state.
        memory: (B, S, H) the encoder's states.
        weights: (B, S) how much the step reads of each state.

    Returns:
        logits (B, C) and the new state (B, H).
    """
    context = (weights[:, None, :] @ memory)[:, 0]  # (B, S) -> (B, H)
    inputs = torch.cat([decoder.embed(token), context], dim=-1)  # (B, E + H)
    state = decoder.cell(inputs, state)  # (B, H)
    logits = decoder.out(torch.cat([state, context], dim=-1))  # (B, C)
    return logits, state
# --8<-- [end:forced_step]


@torch.no_grad()
def teacher_forced(model: Seq2Seq, inputs: torch.Tensor, targets: torch.Tensor,
                   force: Force | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """An attention encoder-decoder, teacher-forced, with weights that ``force`` may replace.

    Step t is fed the correct previous token ``targets[:, t - 1]``, as in training. The
    model computes its own weights from its previous state; ``force(t, weights)`` returns
    the weights (B, S) the step then reads with. Without ``force`` this is
    ``model(inputs, targets)`` exactly.

    Args:
        model: a [`Seq2Seq`][attnprimer.rnn.Seq2Seq] with the attention decoder.
        inputs: (B, S) input tokens, padded with 0 at the end.
        targets: (B, T) the correct output tokens.
        force: the intervention, or None.

    Returns:
        logits (B, T, C) and the weights each step read with (B, T, S).
    """
    if model.decoder.kind != "attention":
        raise ValueError(f"this needs the attention decoder, got {model.decoder.kind!r}")
    encoder, decoder = model.encoder, model.decoder
    memory, final = encoder(inputs)  # (B, S, H), (B, H)
    mask = (inputs != PAD)[:, None, :]  # (B, 1, S)
    state = decoder.initial_state(final)  # (B, H)
    token = inputs.new_full((inputs.shape[0],), decoder.start)  # (B,)
    keys = decoder.keys(memory)
    all_logits, all_weights = [], []
    for step in range(targets.shape[1]):
        _, _, weights = decoder.step(token, state, memory, final, mask, keys)  # its own: (B, S)
        if force is not None:
            weights = force(step, weights)  # the intervention: (B, S)
        logits, state = read_with(decoder, token, state, memory, weights)
        all_logits.append(logits)
        all_weights.append(weights)
        token = targets[:, step]  # teacher forcing
    return torch.stack(all_logits, dim=1), torch.stack(all_weights, dim=1)


def _forced_attention(trained: TrainedModel, lengths: tuple[int, ...], samples: int,
                      seed: int) -> dict[str, float]:
    with single_thread():  # many small steps: threads cost more than they save
        return _score_forced(trained, lengths, samples, seed)


def _own_largest(step: int, weights: torch.Tensor) -> torch.Tensor:
    """Everything on the position of the step's own largest weight."""
    return one_hot(weights.argmax(dim=-1), weights.shape[-1])


def _at_offset(offset: int) -> Force:
    """Everything on the copied letter's position plus ``offset``, for inputs of exactly S
    letters (step t copies S - 1 - t); kept inside the input at the steps left unscored."""
    def force(step: int, weights: torch.Tensor) -> torch.Tensor:
        size = weights.shape[-1]
        position = min(max(size - 1 - step + offset, 0), size - 1)
        return one_hot(torch.full((weights.shape[0],), position), size)
    return force


def _score_forced(trained: TrainedModel, lengths: tuple[int, ...], samples: int,
                  seed: int) -> dict[str, float]:
    conditions: dict[str, Force | None] = {"as trained": None,
                                           "its own largest weight": _own_largest}
    conditions.update({name: _at_offset(offset) for name, offset in FORCED_OFFSETS.items()})
    correct = dict.fromkeys(conditions, 0)
    total = 0
    for length in lengths:
        task = trained.task.at_length(length)  # every input has exactly `length` letters
        inputs, targets = task.sample(samples, held_out_generator(seed))
        # the letter steps where every forced position is inside the input
        scored = torch.arange(length) >= max(FORCED_OFFSETS.values())
        for name, force in conditions.items():
            logits, _ = teacher_forced(trained.model, inputs, targets, force)
            right = logits.argmax(-1)[:, :length] == targets[:, :length]  # (B, n) letter steps
            correct[name] += int(right[:, scored].sum())
        total += samples * int(scored.sum())
    return {name: count / total for name, count in correct.items()}


def forced_attention(trained: TrainedModel, lengths: Iterable[int] = range(3, 11),
                     samples: int = 500, seed: int = 0) -> dict[str, float]:
    """Per-step letter accuracy, teacher-forced, when every step must read one chosen state.

    For each length n, ``samples`` held-out inputs are decoded with teacher forcing
    ([`teacher_forced`][attnprimer.site.experiments.bahdanau.teacher_forced]) under each condition:

    * ``"as trained"``: the model's own (soft) weights;
    * ``"its own largest weight"``: a one-hot on the position of its own largest weight;
    * each of [`FORCED_OFFSETS`][attnprimer.site.experiments.bahdanau.FORCED_OFFSETS]: a one-hot on
      the copied letter's position n - 1 - t plus the offset, at every step.

    The letter steps t >= 2 are scored (the end step left out), the steps where all the
    forced positions are inside the input. Computed once per model and code
    ([`cached_result`][attnprimer.training.model_cache.cached_result]).

    Returns:
        The share of those steps whose most likely letter is right, by condition.
    """
    return cached_result(_forced_attention, trained, lengths=tuple(lengths), samples=samples,
                         seed=seed)


def alignment_by_length(trained: TrainedModel, lengths: Iterable[int],
                        samples: int = 500) -> dict[int, float]:
    """[`alignment_offsets`][attnprimer.site.experiments.bahdanau.alignment_offsets]
    of a cached model, computed
    once per model and code; the offsets come back as integers."""
    offsets = cached_result(alignment_offsets, trained, lengths=list(lengths), samples=samples)
    return {int(offset): share for offset, share in offsets.items()}


def state_probes(trained: TrainedModel) -> dict[str, float]:
    """[`encoder_state_probe`][attnprimer.site.experiments.bahdanau.encoder_state_probe]
    of a cached model
    (does state j hold letter j, and letter j - 1?), computed once per model and code."""
    return cached_result(encoder_state_probe, trained)


@torch.no_grad()
def _letter_step_weights(trained: TrainedModel, length: int, samples: int) -> torch.Tensor:
    """Greedy decoding of ``samples`` held-out inputs of ``length`` letters: the attention
    weights of the letter steps (the end step left out), (B, n, S)."""
    inputs, _ = trained.task.at_length(length).sample(samples, held_out_generator(0))
    return trained.model(inputs).attention["encoder-decoder"][:, :length]


def _largest_weight(trained: TrainedModel, lengths: list[int], samples: int) -> float:
    largest = []
    for length in lengths:
        weights = _letter_step_weights(trained, length, samples)  # (B, n, S)
        largest.append(weights.max(dim=-1).values.flatten())
    return torch.cat(largest).mean().item()


def largest_weight(trained: TrainedModel, lengths: Iterable[int], samples: int = 500) -> float:
    """The mean of each letter step's largest attention weight (greedy decoding, held-out
    inputs of each length): 1 when every step reads one state, 1/n when it spreads evenly."""
    return cached_result(_largest_weight, trained, lengths=list(lengths), samples=samples)


def _split_rows(trained: TrainedModel, lengths: list[int], samples: int) -> float:
    split, steps = 0, 0
    for length in lengths:
        weights = _letter_step_weights(trained, length, samples)  # (B, n, S)
        top = weights.topk(min(2, length), dim=-1)  # the two largest of each letter step
        copied = torch.arange(length - 1, -1, -1)  # step t copies position n - 1 - t
        pair = torch.stack([copied, copied + 1], dim=-1)  # (n, 2): the letter, one to its right
        on_pair = (top.indices.sort(dim=-1).values == pair).all(dim=-1)  # (B, n)
        split += (on_pair & (top.values[..., -1] > 0.2)).sum().item()
        steps += on_pair.numel()
    return split / steps


def split_rows(trained: TrainedModel, lengths: Iterable[int], samples: int = 500) -> float:
    """The share of letter steps (greedy decoding, held-out inputs of each length) whose two
    largest attention weights are on the copied letter and the position to its right, the
    second of them over 0.2: a row split between those two states."""
    return cached_result(_split_rows, trained, lengths=list(lengths), samples=samples)


def first_step_reaching(history: dict[str, list[float]], level: float) -> int | None:
    """The first training step at which held-out exact match reached ``level``, or None.

    Examples:
        >>> history = {"held_out_step": [100, 200, 300], "held_out_exact_match": [0.2, 0.9, 0.95]}
        >>> first_step_reaching(history, 0.9), first_step_reaching(history, 0.99)
        (200, None)
    """
    for step, accuracy in zip(history["held_out_step"], history["held_out_exact_match"],
                              strict=True):
        if accuracy >= level:
            return int(step)
    return None


def _held_out(trained: TrainedModel, samples: int, seed: int):
    return trained.task.sample(samples, held_out_generator(seed))


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
        >>> from attnprimer.training.train import TrainConfig, train
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
