"""The interventions the explorer offers are the chapters' interventions, as forward passes.

Each function must equal the model's own forward pass when it intervenes on nothing, agree
with the chapters' batch experiments where they overlap, and change exactly what it says. Here
on untrained models; on the site's trained ones in ``tests/claims/test_claims_interventions.py``.
"""

from __future__ import annotations

import pytest
import torch

from attnprimer.site.explorer.interventions import difference_intervened, reversal_forced
from attnprimer.tasks import DifferenceTask, ReversalTask


@pytest.mark.parametrize("projections", [False, True])
def test_without_an_intervention_the_difference_model_is_itself(projections):
    torch.manual_seed(0)
    model = DifferenceTask(hidden=8, self_att=True, projections=projections).build_model()
    tokens = torch.randint(0, 4, (50, 10))
    plain, ours = model(tokens), difference_intervened(model, tokens)
    torch.testing.assert_close(ours.logits, plain.logits)
    for name in ("encoder-decoder", "self"):
        torch.testing.assert_close(ours.attention[name], plain.attention[name])


def test_only_the_attention_decoder_can_be_forced():
    model = ReversalTask(hidden=8, decoder="peeky").build_model()
    with pytest.raises(ValueError, match="only the attention decoder"):
        reversal_forced(model, torch.tensor([[1, 2]]), {0: 0})
    assert reversal_forced(model, torch.tensor([[1, 2]])).attention == {}


def test_the_difference_intervention_needs_self_attention():
    with pytest.raises(ValueError, match="no self-attention"):
        difference_intervened(DifferenceTask(hidden=8).build_model(), torch.tensor([[1, 2]]))
