"""The partners models of the self-attention chapter: where each token looks, and what it uses.

Every function takes a trained [`PartnersTask`][attnprimer.tasks.partners.PartnersTask] model
and scores it on held-out sequences (a fixed seed), so that the page and its claims tests read
the same numbers through [`cached_result`][attnprimer.training.model_cache.cached_result].
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import torch

from attnprimer.site.catalogue import PARTNERS_VARIANTS, site_seeds
from attnprimer.tasks.partners import PartnersTask
from attnprimer.training.model_cache import cached_result
from attnprimer.training.train import TrainedModel, held_out_generator

__all__ = ["PartnersReading", "cached_reading", "partners_models", "reading"]

SAMPLES = 4000


def partners_models(variant: str) -> list[TrainedModel]:
    """The trained partners models of one of ``PARTNERS_VARIANTS``, in seed order."""
    return [model.trained() for model in site_seeds("partners", **PARTNERS_VARIANTS[variant])]


@dataclass(frozen=True)
class PartnersReading:
    """One model on held-out sequences.

    Attributes:
        accuracy: the share of tokens given their partner's digit.
        weight_on_self: a token's mean attention weight on itself.
        weight_on_partner: its mean weight on its partner.
        both_prefer_partner: the share of pairs in which each token weighs its partner above
            itself. Without projections this is 0 by Cauchy-Schwarz (see the chapter).
        follows_partner: after the partner's digit is changed (to the next digit, modulo C),
            the share of tokens whose answer becomes the new digit.
        ignores_others: after the digit of one token that is neither the token nor its partner
            is changed, the share of answers that stay what they were.
    """

    accuracy: float
    weight_on_self: float
    weight_on_partner: float
    both_prefer_partner: float
    follows_partner: float
    ignores_others: float


def reading(trained: TrainedModel, samples: int = SAMPLES) -> PartnersReading:
    """Score one partners model, and intervene on the digits it may read."""
    task: PartnersTask = trained.task
    inputs = task.sample(samples, held_out_generator()).inputs
    letters, digits = (inputs - 1) // task.digits, (inputs - 1) % task.digits
    partner = letters.argsort(dim=1).gather(1, letters ^ 1)   # (B, S) the partner's position
    with torch.no_grad():
        output = trained.model(inputs)
    weights = output.attention["self-attention"]                # (B, S, S)
    answers = output.logits.argmax(-1)
    on_self = weights.diagonal(dim1=1, dim2=2)
    on_partner = weights.gather(2, partner[..., None]).squeeze(-1)
    prefers = on_partner > on_self
    both = prefers & prefers.gather(1, partner)

    def answers_after(position: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Change the digit at ``position`` (B, S) of each token's copy of the sequence."""
        changed = digits[..., None].expand(-1, -1, task.max_len).transpose(1, 2).clone()
        rows = torch.arange(task.max_len).expand(samples, -1)
        new = (digits.gather(1, position) + 1) % task.digits
        changed[torch.arange(samples)[:, None], rows, position] = new
        copies = 1 + letters[:, None, :] * task.digits + changed  # (B, S copies, S)
        with torch.no_grad():
            logits = trained.model(copies.flatten(0, 1)).logits.unflatten(0, (samples, -1))
        own = logits[torch.arange(samples)[:, None], rows, rows].argmax(-1)  # (B, S)
        return own, new

    followed, new_digit = answers_after(partner)
    # Another token: the one after the partner (cyclically), unless that is the token itself.
    other = (partner + 1) % task.max_len
    rows = torch.arange(task.max_len).expand(samples, -1)
    other = torch.where(other == rows, (other + 1) % task.max_len, other)
    unmoved, _ = answers_after(other)
    return PartnersReading(
        accuracy=(answers == trained.task.targets_for(inputs)).float().mean().item(),
        weight_on_self=on_self.mean().item(),
        weight_on_partner=on_partner.mean().item(),
        both_prefer_partner=both.float().mean().item(),
        follows_partner=(followed == new_digit).float().mean().item(),
        ignores_others=(unmoved == answers).float().mean().item())


def cached_reading(trained: TrainedModel) -> PartnersReading:
    """:func:`reading`, computed once per model and code version."""
    return cached_result(reading, trained, encode=asdict,
                         decode=lambda data: PartnersReading(**data))
