"""The worked examples' tables: one query's attention over a few keys, every number shown.

The chapter on queries, keys and values prints ``qkv_example()`` (from
``attnprimer.site.experiments.worked_example``) with ``worked_table``: a row per key, from the
key and its value through the score, the scaled score and its exponential to the weight, then
the context. The chapter on self-attention prints the same three tokens through integer
projections with ``projections_table``. The numbers are the package's own, computed when the
site is built. A helper of the two chapters' figure modules, with no recipes of its own.
"""

from __future__ import annotations

from attnprimer.site.experiments.worked_example import (
    KEYS,
    QUERY,
    SELF_PROJECTIONS,
    TOKENS,
    WorkedAttention,
    qkv_example,  # noqa: F401 (the doctest's)
    self_attention_example,  # noqa: F401 (the doctest's)
)
from attnprimer.site.figures.tables import markdown_table

__all__ = ["projections_table", "worked_table"]


def _vector(values, digits: int = 0) -> str:
    return "(" + ", ".join(f"{value:.{digits}f}" for value in values) + ")"


def worked_table(worked: WorkedAttention) -> str:
    """One query's attention over a few keys as a table: a row per key with every step, then
    the context and the sums of the exponentials and the weights.

    Examples:
        >>> print(worked_table(qkv_example()).splitlines()[2])
        | a | (1, 0) | (10, 0) | 2 | 1.414 | 4.113 | 0.284 |
    """
    (scores,), (scaled,), (weights,) = worked.scores, worked.scaled, worked.weights
    exps = scaled.exp()
    rows = [[token, _vector(key), _vector(value), f"{score:g}", f"{scale:.3f}", f"{exp:.3f}",
             f"{weight:.3f}"] for token, key, value, score, scale, exp, weight in zip(
                TOKENS, worked.keys.tolist(), worked.values.tolist(), scores.tolist(),
                scaled.tolist(), exps.tolist(), weights.tolist(), strict=True)]
    context = _vector(worked.context[0].tolist(), 2).replace(" ", "\u00a0")  # one line
    rows.append(["**context**", "", f"**{context}**", "", "", f"{exps.sum().item():.3f}",
                 f"{weights.sum().item():.3f}"])
    dim = worked.keys.shape[-1]
    return markdown_table(
        ["token", "key $k$", "value $v$", "$q \\cdot k$", f"$s = q \\cdot k / \\sqrt{{{dim}}}$",
         "$e^{s}$", "weight"], rows, align="lllrrrr",
        caption=f"The query is $q = {_vector(QUERY)}$ and $D_k = {dim}$. Each weight is its $e^s$ "
                "divided by the sum of the three. The last row holds the context, the values "
                "each times its weight and summed, and the sums of the last two columns. "
                "Rounded to the places shown.")


def _weights(row) -> str:
    return " ".join(f"{weight:.2f}" for weight in row)


def _matrix(name: str) -> str:
    rows = SELF_PROJECTIONS[name]
    return "[" + "; ".join(" ".join(f"{value:g}" for value in row) for row in rows) + "]"


def projections_table(worked: WorkedAttention, plain: WorkedAttention) -> str:
    """The tokens attending to one another through ``SELF_PROJECTIONS``: a row per token with
    its query, key, value, weights and output, then its weights without the projections.

    Examples:
        >>> table = projections_table(self_attention_example(),
        ...                           self_attention_example(projections=False))
        >>> print(table.splitlines()[2])
        | **a** | (0, 1) | (1, 0) | (2, 0) | 0.20 0.40 0.40 | (1.20, 0.80) | 0.40 0.20 0.40 |
    """
    rows = [[f"**{token}**", _vector(q), _vector(k), _vector(v), _weights(weights),
             _vector(context, 2), _weights(plain_weights)]
            for token, q, k, v, weights, context, plain_weights in zip(
                TOKENS, worked.queries.tolist(), worked.keys.tolist(), worked.values.tolist(),
                worked.weights.tolist(), worked.context.tolist(), plain.weights.tolist(),
                strict=True)]
    tokens = ", ".join(f"{token} = {_vector(key)}" for token, key in zip(TOKENS, KEYS,
                                                                          strict=True))
    return markdown_table(
        ["token", "q = x W_q", "k = x W_k", "v = x W_v", "weights on a, b, c", "output",
         "weights, no W's"],
        rows, align="l" + "c" * 6,
        caption=f"The tokens x are {tokens}. W_q = {_matrix('W_q')} "
                f"swaps the two coordinates, W_k = {_matrix('W_k')} keeps them, "
                f"W_v = {_matrix('W_v')} doubles the first. The weights are softmax(q·k / √2) "
                "over a, b, c, and the output is the weighted average of the v's. The last "
                "column drops the three matrices: q = k = v = x.")
