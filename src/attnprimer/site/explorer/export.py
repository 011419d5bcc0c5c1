"""Export trained models for the attention explorer, a page that runs them in the browser.

The explorer page (``docs/explorer.md``) lets a reader type a sequence and see, with no Python
behind the page, what the site's trained models predict, where they attend, and what happens
when a step's attention is blocked, swapped or forced, or a head is switched off. Small
hand-written scripts run their forward passes (``docs/javascripts/explorer-models.js``, on the
layers of ``explorer-nn.js``; ``explorer.js`` reads the controls and draws); this module gives
them the weights.

[`explorer_data`][attnprimer.site.explorer.export.explorer_data] collects, for each model the page
runs ([`explorer_models`][attnprimer.site.explorer.export.explorer_models]), what
[`attnprimer.site.explorer.families`][attnprimer.site.explorer.families] exports for its family (the
task's settings and every parameter the forward pass reads, exactly), its label, and its held-out
exact match.

[`write_explorer_data`][attnprimer.site.explorer.export.write_explorer_data] writes all of it as one
JSON file, deterministically (sorted keys, no timestamps: identical weights give identical bytes)
and atomically, and leaves the file alone when it would not change. The docs build hook
``docs/hooks/explorer.py`` runs [`export_site`][attnprimer.site.explorer.export.export_site], which
calls it, in a fresh process.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from attnprimer.positional import POSITIONAL_ENCODINGS
from attnprimer.site.catalogue import (
    COUNTING_EXAMPLE,
    DIFFERENCE_EXAMPLE,
    REVERSAL_EXAMPLE,
    SIGNAL_EXAMPLE,
    TRANSFORMERS,
    SiteModel,
    site_model,
)
from attnprimer.site.explorer import families as explorer_exports
from attnprimer.site.explorer.families import (
    HELD_OUT_SAMPLES,
    LONGEST_INPUT,
    decode_array,
    encode_array,
    export_counting,
    export_difference,
    export_reversal,
    export_signal,
    export_transformer,
)
from attnprimer.training.files import write_atomically
from attnprimer.training.model_cache import cached_path
from attnprimer.training.train import HELD_OUT_SEED, TrainedModel

__all__ = [
    "EXPLORER_FORMAT",
    "FAMILIES",
    "LONGEST_INPUT",
    "decode_array",
    "encode_array",
    "explorer_data",
    "explorer_json",
    "explorer_labels",
    "explorer_models",
    "export_counting",
    "export_difference",
    "export_reversal",
    "export_signal",
    "export_site",
    "export_transformer",
    "write_explorer_data",
]

EXPLORER_FORMAT = 2
"""The version of the exported file's layout; the script refuses any other."""

FAMILIES: dict[str, Callable[..., dict[str, Any]]] = {
    "counting": export_counting,
    "signal": export_signal,
    "difference": export_difference,
    "reversal": export_reversal,
    "transformer": export_transformer,
}
"""The model families the page runs, each with its exporter. A model's explorer name is its
family, then ``/`` and its variant if the family has several (``"signal/rotary"``)."""

_LABELS = {
    "counting": "counting, seed 0",
    **{f"signal/{encoding}": f"signal, {encoding} encoding, seed 0"
       for encoding in POSITIONAL_ENCODINGS},
    "difference/plain": "difference, no self-attention, seed 0",
    "difference/self-attention": "difference, self-attention over the outputs, seed 0",
    "reversal/vanilla": "reversal, vanilla decoder, seed 0",
    "reversal/peeky": "reversal, peeky decoder, seed 0",
    "reversal/attention": "reversal, attention decoder (additive score), seed 0",
    "transformer/encoder-decoder": "Transformer, encoder-decoder, pre-LN, seed 0",
}


def explorer_models() -> dict[str, SiteModel]:
    """The site models the explorer runs, by its name for each (seed 0 of each).

    Examples:
        >>> explorer_models()["signal/learned"] == site_model("signal", pos_enc="learned")
        True
        >>> [name for name in explorer_models() if name.startswith("reversal")]
        ['reversal/vanilla', 'reversal/peeky', 'reversal/attention']
    """
    models = {"counting": site_model("counting", seed=0)}
    models.update({f"signal/{encoding}": site_model("signal", pos_enc=encoding, seed=0)
                   for encoding in POSITIONAL_ENCODINGS})
    models["difference/plain"] = site_model("difference")
    models["difference/self-attention"] = site_model("difference", self_att=True)
    for decoder in ("vanilla", "peeky", "attention"):
        models[f"reversal/{decoder}"] = site_model("reversal", decoder=decoder)
    models["transformer/encoder-decoder"] = site_model(
        "reversal-transformer", **TRANSFORMERS["Transformer (encoder-decoder)"])
    return models


def explorer_labels() -> dict[str, str]:
    """How the page describes each model it runs, by the explorer's name for it.

    Examples:
        >>> explorer_labels()["signal/rotary"]
        'signal, rotary encoding, seed 0'
        >>> list(explorer_labels()) == list(explorer_models())
        True
    """
    return dict(_LABELS)


def explorer_data(
    models: Mapping[str, TrainedModel] | None = None,
    *,
    held_out: bool = True,
    previous: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Everything the explorer page needs, as one JSON-ready dict.

    Args:
        models: the trained models by their
            [`explorer_labels`][attnprimer.site.explorer.export.explorer_labels]
            name; by default the site's, from the cache (trained on a miss).
        held_out: include each model's held-out exact match.
        previous: an earlier result of this function (what the file on disk holds). A model
            exported there exactly as now keeps its held-out exact match from there instead of
            being evaluated again: evaluation is deterministic, and a warm docs build saves the
            few seconds it takes.

    Returns:
        ``{"format": EXPLORER_FORMAT, "counting": {...}, "signal": {variant: {...}}, ...,
        "examples": {...}}``: each model exported by its family's exporter
        ([`FAMILIES`][attnprimer.site.explorer.export.FAMILIES]), with its ``label``; a family with
        variants holds them by variant name.
    """
    labels = explorer_labels()
    if models is None:
        models = {name: model.trained() for name, model in explorer_models().items()}
    missing = [name for name in labels if name not in models]
    if missing:
        raise ValueError(f"no model for {', '.join(missing)}; expected {', '.join(labels)}")
    data: dict[str, Any] = {"format": EXPLORER_FORMAT}
    for name, label in labels.items():
        family, _, variant = name.partition("/")
        exported = FAMILIES[family](models[name], held_out=False)
        exported["label"] = label
        if held_out:
            exported["held_out"] = (_reusable_held_out(_entry(previous, name), exported)
                                    or explorer_exports.exact_match(models[name]))
        if variant:
            data.setdefault(family, {})[variant] = exported
        else:
            data[family] = exported
    data["examples"] = {"counting": COUNTING_EXAMPLE, "signal": SIGNAL_EXAMPLE,
                        "difference": DIFFERENCE_EXAMPLE, "reversal": REVERSAL_EXAMPLE,
                        "transformer": REVERSAL_EXAMPLE}
    return data


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
        data: what to write; by default
            [`explorer_data`][attnprimer.site.explorer.export.explorer_data]
            of the site's models, reusing the held-out results of the file already at ``path``
            for the models that have not changed.

    Returns:
        Whether the file was (re)written.

    Examples:
        >>> import tempfile
        >>> path = Path(tempfile.mkdtemp()) / "explorer" / "models.json"
        >>> write_explorer_data(path, {"format": EXPLORER_FORMAT}), path.read_text()
        (True, '{"format":2}\\n')
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


def export_site(path: str | os.PathLike) -> tuple[bool, list[Path]]:
    """The docs build's step:
    [`write_explorer_data`][attnprimer.site.explorer.export.write_explorer_data]
    of the site's models to ``path``, and the checkpoint file of every model it exported.

    The hook runs it in a fresh process
    ([`run_in_processes`][attnprimer.training.workers.run_in_processes]):
    under ``mkdocs serve`` the hook's process keeps the modules an earlier build imported, so
    the export, and the list of models its stamp records, come from the code as it is now.

    Returns:
        Whether the file was (re)written, and the checkpoint files, in the cache, of
        [`explorer_models`][attnprimer.site.explorer.export.explorer_models].
    """
    written = write_explorer_data(path)
    return written, [cached_path(model.task, model.config) for model in explorer_models().values()]
