"""The worked example of the Bahdanau chapter: one additive score, small enough to check by hand.

A decoder state ``s`` and three encoder states ``h_0``, ``h_1``, ``h_2``, all 2-D, go through
Bahdanau's alignment model ``e_j = v^T tanh(W_q s + W_k h_j)`` with small integer weights, then
a softmax over the three scores and the weighted average of the ``h_j``. The scores come from
the package's own [`additive_scores`][attnprimer.additive.additive_scores] and the weights and
context from [`attend`][attnprimer.attention.attend]; the intermediates (``W_q s``, ``W_k h_j``,
their sum and its ``tanh``) are kept for the page to print.

Vectors are columns, as in the chapter's formula: ``W_q`` is (A, D) and maps ``s`` to
``W_q s``, the convention of [`additive_scores`][attnprimer.additive.additive_scores]. The
numbers are chosen so that every ``tanh`` is of -1, 0, 1 or 2 and that adding the rounded
values gives the rounded score.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from attnprimer.additive import additive_scores
from attnprimer.attention import attend

__all__ = ["MEMORY", "STATE", "W_K", "W_Q", "V", "WorkedAdditive", "additive_example",
           "score_lines",
           "softmax_rows", "vector_text"]

STATE = (1.0, 2.0)
"""The decoder state ``s``, the query."""
MEMORY = ((1.0, 0.0), (0.0, 1.0), (1.0, 1.0))
"""The encoder states ``h_0``, ``h_1``, ``h_2``: the keys, and the values averaged."""
W_Q = ((1.0, 0.0), (1.0, -1.0))
"""``W_q`` (A, D): maps ``s`` = (1, 2) to (1, -1)."""
W_K = ((0.0, 1.0), (1.0, 1.0))
"""``W_k`` (A, H): maps the encoder states to (0, 1), (1, 1) and (1, 2)."""
V = (1.0, 1.0)
"""``v`` (A,): the score is the sum of the two ``tanh`` values."""


@dataclass(frozen=True)
class WorkedAdditive:
    """Every intermediate of additive attention for one decoder state over S encoder states."""

    state: torch.Tensor            # s, (D,)
    memory: torch.Tensor           # h_j, one a row, (S, H)
    query_weight: torch.Tensor     # W_q, (A, D)
    key_weight: torch.Tensor       # W_k, (A, H)
    v: torch.Tensor                # v, (A,)
    projected_state: torch.Tensor  # W_q s, (A,)
    projected_memory: torch.Tensor  # W_k h_j, one a row, (S, A)
    summed: torch.Tensor           # W_q s + W_k h_j, (S, A)
    hidden: torch.Tensor           # tanh of the sum, (S, A)
    scores: torch.Tensor           # e_j = v . tanh(...), (S,)
    weights: torch.Tensor          # softmax over j, (S,)
    context: torch.Tensor          # sum_j weights_j h_j, (H,)


def additive_example() -> WorkedAdditive:
    """The chapter's example: :data:`STATE` over :data:`MEMORY` with :data:`W_Q`, :data:`W_K`
    and :data:`V`.

    Examples:
        >>> worked = additive_example()
        >>> worked.summed
        tensor([[1., 0.],
                [2., 0.],
                [2., 1.]])
        >>> worked.scores
        tensor([0.7616, 0.9640, 1.7256])
        >>> worked.weights
        tensor([0.2063, 0.2526, 0.5410])
    """
    state, memory = torch.tensor(STATE), torch.tensor(MEMORY)
    query_weight, key_weight, v = torch.tensor(W_Q), torch.tensor(W_K), torch.tensor(V)
    projected_state = query_weight @ state
    projected_memory = memory @ key_weight.T
    summed = projected_state + projected_memory
    hidden = torch.tanh(summed)
    scores = additive_scores(state[None], memory, query_weight, key_weight, v)  # (1, S)
    context, weights = attend(scores, memory)
    return WorkedAdditive(state, memory, query_weight, key_weight, v, projected_state,
                          projected_memory, summed, hidden, scores[0], weights[0], context[0])


def _number(value: float) -> str:
    """An integer as one ("2", "-1"), anything else to three decimals."""
    return f"{value:.0f}" if float(value).is_integer() else f"{value:.3f}"


def vector_text(values) -> str:
    """A vector as the page prints it.

    Examples:
        >>> vector_text(torch.tensor([2.0, 0.76159]))
        '(2, 0.762)'
    """
    return "(" + ", ".join(_number(float(value)) for value in values) + ")"


def _products(matrix: torch.Tensor, vector: torch.Tensor) -> str:
    """``W x`` written out row by row: "(1·1 + 0·2, 1·1 + (-1)·2)"."""
    def term(weight, value):
        weight = _number(float(weight))
        return f"({weight})·{_number(float(value))}" if weight.startswith("-") else (
            f"{weight}·{_number(float(value))}")
    return "(" + ", ".join(" + ".join(term(w, x) for w, x in zip(row, vector, strict=True))
                           for row in matrix) + ")"


def _matrix_lines(name: str, matrix: torch.Tensor) -> list[str]:
    rows = [", ".join(f"{_number(float(value)):>2}" for value in row) for row in matrix]
    return [f"{name} = [[{rows[0]}],"] + [f"{' ' * len(name)}    [{row}]]" for row in rows[1:]]


def score_lines(worked: WorkedAdditive) -> list[str]:
    """One score worked step by step, for the last encoder state (the one that scores highest),
    narrow enough for a phone.

    Examples:
        >>> score_lines(additive_example())[-1]
        '    = 1·0.964 + 1·0.762 = 1.726'
    """
    j = len(worked.memory) - 1
    h, summed, hidden = worked.memory[j], worked.summed[j], worked.hidden[j]
    products = " + ".join(f"{_number(float(a))}·{_number(float(b))}"
                          for a, b in zip(worked.v, hidden, strict=True))
    return [f"s   = {vector_text(worked.state)}    the decoder state",
            f"h_{j} = {vector_text(h)}    one encoder state", "",
            *_matrix_lines("W_q", worked.query_weight), "",
            *_matrix_lines("W_k", worked.key_weight), "",
            f"v   = {vector_text(worked.v)}", "",
            f"W_q s = {_products(worked.query_weight, worked.state)}",
            f"      = {vector_text(worked.projected_state)}",
            f"W_k h_{j} = {_products(worked.key_weight, h)}",
            f"        = {vector_text(worked.projected_memory[j])}",
            f"W_q s + W_k h_{j} = {vector_text(summed)}",
            f"tanh(W_q s + W_k h_{j}) = {vector_text(hidden)}",
            f"e_{j} = v · tanh(W_q s + W_k h_{j})",
            f"    = {products} = {float(worked.scores[j]):.3f}"]


def softmax_rows(worked: WorkedAdditive) -> list[list[str]]:
    """One row per encoder state: j, h_j, W_k h_j, the sum, its tanh, the score, the weight."""
    return [[str(j), vector_text(h), vector_text(key), vector_text(total), vector_text(hidden),
             f"{float(score):.3f}", f"{float(weight):.3f}"]
            for j, (h, key, total, hidden, score, weight) in enumerate(zip(
                worked.memory, worked.projected_memory, worked.summed, worked.hidden,
                worked.scores, worked.weights, strict=True))]
