"""The explorer's export: exact weights, only what the forward pass needs, deterministic bytes.

The parts that need no trained site model are tested here; the export of the site's models and
the claims ``docs/explorer.md`` makes about them are in ``tests/claims/test_claims_explorer.py``,
and the browser side (that the page computes what PyTorch computes) in
``tests/site/test_explorer.py``.
"""

from __future__ import annotations

import pytest
import torch

from attnprimer.site.explorer.export import (
    decode_array,
    encode_array,
    export_reversal,
    export_transformer,
)


def test_encode_array_is_exact_and_little_endian():
    values = torch.tensor([[1.0, -0.0, 3.4028234663852886e38], [1e-45, 1e-7, -2.5]])
    entry = encode_array(values)
    assert entry["shape"] == [2, 3]
    assert torch.equal(decode_array(entry), values)
    assert decode_array(entry).view(torch.int32).tolist() == values.view(torch.int32).tolist()
    assert encode_array(torch.tensor([1.0]))["float32"] == "AACAPw=="  # 0x3f800000, low byte first


def test_settings_the_script_cannot_run_are_refused():
    from attnprimer.tasks import ReversalTask
    from attnprimer.tasks.reversal_transformer import ReversalTransformerTask
    from attnprimer.training.train import TrainConfig, train

    for task in (ReversalTask(hidden=4, bidirectional=True), ReversalTask(hidden=4, score="dot")):
        with pytest.raises(ValueError, match="one-way encoders and the additive score"):
            export_reversal(train(task, TrainConfig(steps=1)), held_out=False)
    ablated = ReversalTransformerTask(dim=8, heads=2, layers=1, residual=False)
    with pytest.raises(ValueError, match="residual connections"):
        export_transformer(train(ablated, TrainConfig(steps=1)), held_out=False)


# --- the claims of docs/explorer.md -------------------------------------------------------------


