"""Export trained models for the attention explorer, a page that runs them in the browser.

The explorer page (``docs/explorer.md``) lets a reader type a sequence and see, with no Python
behind the page, what the site's trained counting model and signal models predict and where
they attend. A small hand-written script, ``docs/javascripts/explorer.js``, runs their forward
passes; this module gives it the weights.

[`explorer_data`][attnprimer.explorer.explorer_data] collects, for each model, the task's
settings (alphabet, input length, output labels, number of classes), the model's held-out exact
match, and every parameter the forward pass reads, each stored exactly as a float32 array
([`encode_array`][attnprimer.explorer.encode_array]: base64 of the little-endian bytes, with
the shape). Nothing the browser can compute is exported: the sinusoidal and rotary encodings
are formulas (the script evaluates them with the same base), and of the learned encoding's
table only the rows of the positions the task uses are sent.

[`write_explorer_data`][attnprimer.explorer.write_explorer_data] writes all of it as one JSON
file, deterministically (sorted keys, no timestamps: identical weights give identical bytes)
and atomically, and leaves the file alone when it would not change. The docs build hook
``docs/hooks/explorer.py`` calls it.

Shape legend: S input length, T output steps, D hidden size, C classes, V letters (the one-hot
codes have V + 1 entries: the blank, then the letters).
"""

from __future__ import annotations

import base64
import inspect
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import torch

from attnprimer.checkpoints import write_atomically
from attnprimer.models.counting import CountingModel
from attnprimer.models.signal import SignalModel
from attnprimer.positional import POSITIONAL_ENCODINGS, apply_rotary, sinusoidal_encoding
from attnprimer.tasks import BLANK, CountingTask, SignalTask
from attnprimer.site_models import COUNTING_EXAMPLE, SIGNAL_EXAMPLE, SiteModel, site_model
from attnprimer.train import HELD_OUT_SEED, TrainedModel, evaluate

__all__ = [
    "COUNTING_LABEL",
    "EXPLORER_FORMAT",
    "decode_array",
    "encode_array",
    "explorer_data",
    "explorer_json",
    "explorer_labels",
    "explorer_models",
    "export_counting",
    "export_signal",
    "write_explorer_data",
]

EXPLORER_FORMAT = 1
"""The version of the exported file's layout; the script refuses any other."""

COUNTING_LABEL = "counting, seed 0"
"""How the page names the counting model it runs."""

HELD_OUT_SAMPLES = 10_000
"""How many held-out sequences the exported exact match is measured on (as in the chapters)."""


def explorer_models() -> dict[str, SiteModel]:
    """The site models the explorer runs, by its name for each (seed 0 of each).

    Examples:
        >>> explorer_models()["signal/learned"] == site_model("signal", pos_enc="learned")
        True
    """
    models = {"counting": site_model("counting", seed=0)}
    models.update({f"signal/{encoding}": site_model("signal", pos_enc=encoding, seed=0)
                   for encoding in POSITIONAL_ENCODINGS})
    return models


def explorer_labels() -> dict[str, str]:
    """How the page describes each model it runs, by the explorer's name for it.

    Examples:
        >>> explorer_labels()["signal/rotary"]
        'signal, rotary encoding, seed 0'
        >>> list(explorer_labels())
        ['counting', 'signal/none', 'signal/learned', 'signal/sinusoidal', 'signal/rotary']
    """
    labels = {"counting": COUNTING_LABEL}
    labels.update({f"signal/{encoding}": f"signal, {encoding} encoding, seed 0"
                   for encoding in POSITIONAL_ENCODINGS})
    return labels


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
    """The tensor [`encode_array`][attnprimer.explorer.encode_array] encoded, bit for bit.

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


def _weights(model: torch.nn.Module, names: list[str]) -> dict[str, dict[str, Any]]:
    state = model.state_dict()
    return {name: encode_array(state[name]) for name in names}


def _layer(prefix: str) -> list[str]:
    return [f"{prefix}.weight", f"{prefix}.bias"]


def _exact_match(trained: TrainedModel) -> dict[str, Any]:
    result = evaluate(trained, samples=HELD_OUT_SAMPLES, seed=HELD_OUT_SEED)
    return {"exact_match": result.exact_match, "samples": result.samples, "seed": result.seed}


def export_counting(trained: TrainedModel, *, held_out: bool = True) -> dict[str, Any]:
    """What the browser needs to run a trained counting model.

    Args:
        trained: a model of [`CountingTask`][attnprimer.tasks.CountingTask].
        held_out: measure its held-out exact match (a fraction of a second) and include it.

    Returns:
        The task's settings and the weights by their ``state_dict`` names: ``queries`` (T, D),
        ``key_value`` (D, V + 1) and (D,), ``norm`` (D,) twice, ``classifier`` (C, D) and (C,).

    Examples:
        >>> from attnprimer.train import TrainConfig, train
        >>> trained = train(CountingTask(hidden=8), TrainConfig(steps=2))
        >>> exported = export_counting(trained, held_out=False)
        >>> exported["alphabet"], exported["input_length"], exported["num_classes"]
        (' ABC', 10, 11)
        >>> exported["weights"]["key_value.weight"]["shape"]           # (D, V + 1)
        [8, 4]
    """
    task, model = trained.task, trained.model
    if not isinstance(task, CountingTask) or not isinstance(model, CountingModel):
        raise TypeError(f"expected a counting model, got {type(task).__name__} "
                        f"with {type(model).__name__}")
    return {
        "task": task.name,
        "alphabet": task.alphabet,
        "blank": BLANK,
        "input_length": task.max_len,
        "output_labels": task.output_labels(),
        "num_classes": task.num_classes,
        "hidden": task.hidden,
        "held_out": _exact_match(trained) if held_out else None,
        "weights": _weights(model, ["queries", *_layer("key_value"), *_layer("norm"),
                                    *_layer("classifier")]),
    }


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
        >>> from attnprimer.train import TrainConfig, train
        >>> trained = train(SignalTask(hidden=8, pos_enc="learned"), TrainConfig(steps=2))
        >>> exported = export_signal(trained, held_out=False)
        >>> exported["pos_enc"], exported["input_length"], exported["position_base"]
        ('learned', 11, 10000.0)
        >>> exported["weights"]["position.table"]["shape"]             # (S, D): 11 of 64 rows
        [11, 8]
        >>> "encoder.query.weight" in exported["weights"]               # rotary models only
        False
    """
    task, model = trained.task, trained.model
    if not isinstance(task, SignalTask) or not isinstance(model, SignalModel):
        raise TypeError(f"expected a signal model, got {type(task).__name__} "
                        f"with {type(model).__name__}")
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
        "position_base": _position_base(),
        "input_length": task.length,
        "output_labels": task.output_labels(),
        "num_classes": task.num_classes,
        "hidden": task.hidden,
        "held_out": _exact_match(trained) if held_out else None,
        "weights": weights,
    }


def _position_base() -> float:
    """The base the models' sinusoidal and rotary encodings use: their functions' default."""
    bases = {float(inspect.signature(function).parameters["base"].default)
             for function in (sinusoidal_encoding, apply_rotary)}
    if len(bases) != 1:
        raise RuntimeError(f"the sinusoidal and rotary encodings use different bases: {bases}; "
                           f"the explorer's file has room for one")
    return bases.pop()


def explorer_data(
    models: Mapping[str, TrainedModel] | None = None,
    *,
    held_out: bool = True,
    previous: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Everything the explorer page needs, as one JSON-ready dict.

    Args:
        models: the trained models by their [`explorer_labels`][attnprimer.explorer.explorer_labels]
            name; by default the site's, from the cache (trained on a miss).
        held_out: include each model's held-out exact match.
        previous: an earlier result of this function (what the file on disk holds). A model
            exported there exactly as now keeps its held-out exact match from there instead of
            being evaluated again: evaluation is deterministic, and a warm docs build saves the
            few seconds it takes.

    Returns:
        ``{"format": EXPLORER_FORMAT, "counting": {...}, "signal": {encoding: {...}},
        "examples": {...}}``, each model exported by
        [`export_counting`][attnprimer.explorer.export_counting] or
        [`export_signal`][attnprimer.explorer.export_signal], with its ``label``.
    """
    labels = explorer_labels()
    if models is None:
        models = {name: model.trained() for name, model in explorer_models().items()}
    missing = sorted(set(labels) - set(models))
    if missing:
        raise ValueError(f"no model for {', '.join(missing)}; expected {', '.join(labels)}")
    exports = {"counting": export_counting(models["counting"], held_out=False)}
    for encoding in POSITIONAL_ENCODINGS:
        name = f"signal/{encoding}"
        exports[name] = export_signal(models[name], held_out=False)
    for name, exported in exports.items():
        exported["label"] = labels[name]
        if held_out:
            exported["held_out"] = (_reusable_held_out(_entry(previous, name), exported)
                                    or _exact_match(models[name]))
    return {
        "format": EXPLORER_FORMAT,
        "counting": exports["counting"],
        "signal": {encoding: exports[f"signal/{encoding}"] for encoding in POSITIONAL_ENCODINGS},
        "examples": {"counting": COUNTING_EXAMPLE, "signal": SIGNAL_EXAMPLE},
    }


def _entry(data: Any, name: str) -> Any:
    """The entry of model ``name`` in an earlier ``explorer_data``, or None."""
    if not isinstance(data, Mapping) or data.get("format") != EXPLORER_FORMAT:
        return None
    group, _, encoding = name.partition("/")
    entry = data.get(group)
    return entry.get(encoding) if encoding and isinstance(entry, Mapping) else entry


def _reusable_held_out(old: Any, new: Mapping[str, Any]) -> dict[str, Any] | None:
    """``old``'s held-out result, if ``old`` exported the very model ``new`` does, on our data."""
    if not isinstance(old, Mapping):
        return None
    result = old.get("held_out")
    if not (isinstance(result, Mapping) and result.get("samples") == HELD_OUT_SAMPLES
            and result.get("seed") == HELD_OUT_SEED):
        return None
    same = ({key: value for key, value in old.items() if key != "held_out"}
            == {key: value for key, value in new.items() if key != "held_out"})
    return dict(result) if same else None


def _read(path: Path) -> Any:
    """What a file written earlier holds, or None if there is no readable one."""
    try:
        return json.loads(path.read_bytes())
    except (OSError, ValueError):
        return None


def explorer_json(data: Mapping[str, Any]) -> bytes:
    """``data`` as the bytes of the file: sorted keys, compact, UTF-8, one final newline.

    Examples:
        >>> explorer_json({"b": [1, 2], "a": "x"})
        b'{"a":"x","b":[1,2]}\\n'
    """
    text = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      allow_nan=False)
    return (text + "\n").encode("utf-8")


def write_explorer_data(
    path: str | os.PathLike, data: Mapping[str, Any] | None = None
) -> bool:
    """Write the explorer's JSON file to ``path``, unless it already holds exactly that.

    The file is written to a temporary file beside ``path`` and moved into place, so a reader
    (or a crash) never sees half of it.

    Args:
        path: where the file goes; missing folders are made.
        data: what to write; by default [`explorer_data`][attnprimer.explorer.explorer_data]
            of the site's models, reusing the held-out results of the file already at ``path``
            for the models that have not changed.

    Returns:
        Whether the file was (re)written.

    Examples:
        >>> import tempfile
        >>> path = Path(tempfile.mkdtemp()) / "explorer" / "models.json"
        >>> write_explorer_data(path, {"format": EXPLORER_FORMAT}), path.read_text()
        (True, '{"format":1}\\n')
        >>> write_explorer_data(path, {"format": EXPLORER_FORMAT})          # unchanged: kept
        False
    """
    path = Path(path)
    if data is None:
        data = explorer_data(previous=_read(path))
    content = explorer_json(data)
    if path.is_file() and path.read_bytes() == content:
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    # A site asset: mkstemp's 0600 would keep it private.
    write_atomically(path, lambda file: file.write(content), mode=0o644)
    return True
