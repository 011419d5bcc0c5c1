"""What the attention explorer's script needs to run each family of trained models.

One function per model family, each returning a JSON-ready dict: the task's settings the
page needs (alphabet, lengths, labels) and every parameter the forward pass reads, each
stored exactly ([`encode_array`][attnprimer.site.explorer.families.encode_array]). Nothing the
browser can compute is exported: the sinusoidal and rotary encodings are formulas, which the
script evaluates with the same base as the package.
[`attnprimer.site.explorer.export`][attnprimer.site.explorer.export]
puts the exports together into the page's file.

Shape legend: S input length, T output steps, D hidden size, C classes, V letters (the one-hot
codes have V + 1 entries: the blank, then the letters).
"""

from __future__ import annotations

import base64
import inspect
from collections.abc import Mapping
from typing import Any

import numpy as np
import torch

from attnprimer.models.counting import CountingModel
from attnprimer.models.difference import DifferenceModel
from attnprimer.models.signal import SignalModel
from attnprimer.positional import apply_rotary, sinusoidal_encoding
from attnprimer.rnn import Seq2Seq
from attnprimer.tasks import BLANK, CountingTask, DifferenceTask, ReversalTask, SignalTask
from attnprimer.tasks.reversal import END
from attnprimer.tasks.reversal_transformer import ReversalTransformerTask
from attnprimer.training.train import HELD_OUT_SEED, TrainedModel, evaluate
from attnprimer.transformer import Transformer

__all__ = [
    "HELD_OUT_SAMPLES",
    "LONGEST_INPUT",
    "decode_array",
    "encode_array",
    "exact_match",
    "export_counting",
    "export_difference",
    "export_reversal",
    "export_signal",
    "export_transformer",
]

HELD_OUT_SAMPLES = 10_000
"""How many held-out sequences the exported exact match is measured on (as in the chapters)."""

LONGEST_INPUT = 20
"""The longest input the page lets a reader give the reversal models: twice their training's."""


def encode_array(tensor: torch.Tensor) -> dict[str, Any]:
    """A tensor as JSON: its shape and its float32 values, little-endian, base64-encoded.

    float32 is what the models hold, so this is exact; base64 is about a third of the size of
    the same numbers written out in decimal at full precision.

    Examples:
        >>> encode_array(torch.tensor([[1.0, -2.0]]))
        {'shape': [1, 2], 'float32': 'AACAPwAAAMA='}
        >>> decode_array(encode_array(torch.tensor([[1.0, -2.0]])))
        tensor([[ 1., -2.]])
    """
    values = tensor.detach().to(torch.float32).contiguous().numpy()
    little_endian = values.astype("<f4", copy=False)  # a no-op on little-endian machines
    return {"shape": list(values.shape),
            "float32": base64.b64encode(little_endian.tobytes()).decode("ascii")}


def decode_array(entry: Mapping[str, Any]) -> torch.Tensor:
    """The tensor
    [`encode_array`][attnprimer.site.explorer.families.encode_array] encoded, bit for bit.

    Raises:
        ValueError: the number of values does not match the shape.

    Examples:
        >>> decode_array({"shape": [3], "float32": "AACAPw=="})
        Traceback (most recent call last):
        ...
        ValueError: shape [3] needs 3 float32 values, the data holds 1
    """
    shape = [int(size) for size in entry["shape"]]
    values = np.frombuffer(base64.b64decode(entry["float32"]), dtype="<f4")
    if values.size != int(np.prod(shape)):
        raise ValueError(f"shape {shape} needs {int(np.prod(shape))} float32 values, "
                         f"the data holds {values.size}")
    return torch.from_numpy(values.astype(np.float32).reshape(shape))


def _weights(model: torch.nn.Module, names: list[str] | None = None) -> dict[str, dict[str, Any]]:
    """The named parameters (all of the ``state_dict`` by default), encoded."""
    state = model.state_dict()
    return {name: encode_array(state[name]) for name in (state if names is None else names)}


def _layer(prefix: str) -> list[str]:
    return [f"{prefix}.weight", f"{prefix}.bias"]


def exact_match(trained: TrainedModel) -> dict[str, Any]:
    """The model's held-out exact match, as the file records it (a second or so)."""
    result = evaluate(trained, samples=HELD_OUT_SAMPLES, seed=HELD_OUT_SEED)
    return {"exact_match": result.exact_match, "samples": result.samples, "seed": result.seed}


def _check(trained: TrainedModel, task_type: type, model_type: type, family: str) -> None:
    task, model = trained.task, trained.model
    if type(task) is not task_type or not isinstance(model, model_type):
        raise TypeError(f"expected a {family} model, got {type(task).__name__} "
                        f"with {type(model).__name__}")


def _counting_settings(task: CountingTask, trained: TrainedModel, held_out: bool) -> dict:
    return {
        "task": task.name,
        "alphabet": task.alphabet,
        "blank": BLANK,
        "input_length": task.max_len,
        "output_labels": task.output_labels(),
        "num_classes": task.num_classes,
        "hidden": task.hidden,
        "held_out": exact_match(trained) if held_out else None,
    }


def export_counting(trained: TrainedModel, *, held_out: bool = True) -> dict[str, Any]:
    """What the browser needs to run a trained counting model.

    Args:
        trained: a model of [`CountingTask`][attnprimer.tasks.CountingTask].
        held_out: measure its held-out exact match (a fraction of a second) and include it.

    Returns:
        The task's settings and the weights by their ``state_dict`` names: ``queries`` (T, D),
        ``key_value`` (D, V + 1) and (D,), ``norm`` (D,) twice, ``classifier`` (C, D) and (C,).

    Examples:
        >>> from attnprimer.training.train import TrainConfig, train
        >>> trained = train(CountingTask(hidden=8), TrainConfig(steps=2))
        >>> exported = export_counting(trained, held_out=False)
        >>> exported["alphabet"], exported["input_length"], exported["num_classes"]
        (' ABC', 10, 11)
        >>> exported["weights"]["key_value.weight"]["shape"]           # (D, V + 1)
        [8, 4]
    """
    _check(trained, CountingTask, CountingModel, "counting")
    return {**_counting_settings(trained.task, trained, held_out),
            "weights": _weights(trained.model, ["queries", *_layer("key_value"),
                                                *_layer("norm"), *_layer("classifier")])}


def export_difference(trained: TrainedModel, *, held_out: bool = True) -> dict[str, Any]:
    """What the browser needs to run a trained difference model, with or without self-attention.

    The counting model's settings and weights, and those of the self-attention over the output
    steps if the model has one (``self_attention.norm``, and its W_q, W_k, W_v if learned).

    Examples:
        >>> from attnprimer.training.train import TrainConfig, train
        >>> trained = train(DifferenceTask(hidden=8, self_att=True), TrainConfig(steps=2))
        >>> exported = export_difference(trained, held_out=False)
        >>> exported["output_labels"], exported["self_attention"], exported["projections"]
        (['A', 'B', 'C', '|A-B|'], True, False)
        >>> exported["weights"]["self_attention.norm.weight"]["shape"]
        [8]
    """
    _check(trained, DifferenceTask, DifferenceModel, "difference")
    task = trained.task
    return {**_counting_settings(task, trained, held_out),
            "self_attention": task.self_att,
            "projections": task.projections,
            "weights": _weights(trained.model)}


def export_signal(trained: TrainedModel, *, held_out: bool = True) -> dict[str, Any]:
    """What the browser needs to run a trained signal model, for any of its encodings.

    Besides the weights every signal model has, a learned encoding exports the rows of its
    table for the task's positions (``position.table``, (S, D)); a rotary one exports W_q and
    W_k (``encoder.query``, ``encoder.key``). The sinusoidal and rotary encodings are computed
    by the script from ``position_base``, the base both formulas use in the model.

    Args:
        trained: a model of [`SignalTask`][attnprimer.tasks.SignalTask].
        held_out: measure its held-out exact match (a second or so) and include it.

    Examples:
        >>> from attnprimer.training.train import TrainConfig, train
        >>> trained = train(SignalTask(hidden=8, pos_enc="learned"), TrainConfig(steps=2))
        >>> exported = export_signal(trained, held_out=False)
        >>> exported["pos_enc"], exported["input_length"], exported["position_base"]
        ('learned', 11, 10000.0)
        >>> exported["weights"]["position.table"]["shape"]             # (S, D): 11 of 64 rows
        [11, 8]
        >>> "encoder.query.weight" in exported["weights"]               # rotary models only
        False
    """
    _check(trained, SignalTask, SignalModel, "signal")
    task, model = trained.task, trained.model
    names = [*_layer("embed"), *_layer("encoder.norm_attention"),
             *_layer("encoder.feed_forward.0"), *_layer("encoder.feed_forward.2"),
             *_layer("encoder.norm_feed_forward"), "query", *_layer("norm"),
             *_layer("classifier")]
    if task.pos_enc == "rotary":
        names += [*_layer("encoder.query"), *_layer("encoder.key")]
    weights = _weights(model, names)
    if task.pos_enc == "learned":
        weights["position.table"] = encode_array(model.position.table[: task.length])  # (S, D)
    return {
        "task": task.name,
        "alphabet": task.alphabet,
        "letters": task.alphabet[1:],
        "pos_enc": task.pos_enc,
        "position_base": position_base(),
        "input_length": task.length,
        "output_labels": task.output_labels(),
        "num_classes": task.num_classes,
        "hidden": task.hidden,
        "held_out": exact_match(trained) if held_out else None,
        "weights": weights,
    }


def _reversal_settings(task: ReversalTask, trained: TrainedModel, held_out: bool) -> dict:
    return {
        "task": task.name,
        "alphabet": task.alphabet,  # token 0 (padding) is never typed
        "letters": task.alphabet[1:],
        "end": task.end,
        "end_symbol": END,
        "start": task.num_classes,  # the decoder's start token: one embedding more
        "num_classes": task.num_classes,
        "trained_lengths": [task.min_len, task.max_len],
        "longest_input": LONGEST_INPUT,
        "held_out": exact_match(trained) if held_out else None,
    }


def export_reversal(trained: TrainedModel, *, held_out: bool = True) -> dict[str, Any]:
    """What the browser needs to run a GRU encoder-decoder of the reversal task.

    Every parameter of the model, by its ``state_dict`` name. The script runs the vanilla,
    peeky and additive-attention decoders with a one-way encoder; other settings are refused.

    Examples:
        >>> from attnprimer.training.train import TrainConfig, train
        >>> trained = train(ReversalTask(hidden=8, decoder="peeky"), TrainConfig(steps=2))
        >>> exported = export_reversal(trained, held_out=False)
        >>> exported["decoder"], exported["letters"], exported["end"], exported["start"]
        ('peeky', 'ABCDEFGH', 9, 10)
        >>> exported["weights"]["encoder.gru.weight_hh_l0"]["shape"]    # (3 H, H): r, z, n
        [24, 8]
    """
    _check(trained, ReversalTask, Seq2Seq, "reversal")
    task = trained.task
    if task.bidirectional or (task.decoder == "attention" and task.score != "additive"):
        raise ValueError("the explorer runs one-way encoders and the additive score only")
    return {**_reversal_settings(task, trained, held_out),
            "decoder": task.decoder,
            "score": task.score if task.decoder == "attention" else None,
            "hidden": task.hidden,
            "weights": _weights(trained.model)}


def export_transformer(trained: TrainedModel, *, held_out: bool = True) -> dict[str, Any]:
    """What the browser needs to run the encoder-decoder Transformer of the reversal task.

    Every parameter, by its ``state_dict`` name; the sinusoidal table is not one (the script
    computes it from ``position_base``).

    Examples:
        >>> from attnprimer.training.train import TrainConfig, train
        >>> task = ReversalTransformerTask(dim=8, heads=2, layers=1, pre_norm=True)
        >>> exported = export_transformer(train(task, TrainConfig(steps=2)), held_out=False)
        >>> exported["dim"], exported["heads"], exported["layers"], exported["pre_norm"]
        (8, 2, 1, True)
        >>> exported["weights"]["encoder.0.attention.query_proj.weight"]["shape"]
        [8, 8]
    """
    _check(trained, ReversalTransformerTask, Transformer, "encoder-decoder Transformer")
    task = trained.task
    if not task.residual:
        raise ValueError("the explorer runs Transformers with their residual connections")
    return {**_reversal_settings(task, trained, held_out),
            "architecture": task.architecture,
            "dim": task.dim,
            "heads": task.heads,
            "layers": task.layers,
            "pre_norm": task.pre_norm,
            "position_base": position_base(),
            "max_positions": trained.model.position.table.shape[0],
            "weights": _weights(trained.model)}


def position_base() -> float:
    """The base the models' sinusoidal and rotary encodings use: their functions' default."""
    bases = {float(inspect.signature(function).parameters["base"].default)
             for function in (sinusoidal_encoding, apply_rotary)}
    if len(bases) != 1:
        raise RuntimeError(f"the sinusoidal and rotary encodings use different bases: {bases}; "
                           f"the explorer's file has room for one")
    return bases.pop()
