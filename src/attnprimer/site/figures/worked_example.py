"""The worked examples' tables: one query's attention over a few keys, every number shown.

The chapter on queries, keys and values prints ``qkv_example()`` (from
``attnprimer.site.experiments.worked_example``) with ``worked_table``: a row per key, from the
key and its value through the score, the scaled score and its exponential to the weight, then
the context. The numbers are the package's own, computed when the site is built. A helper of
the chapter's figure module, with no recipes of its own.
"""

from __future__ import annotations

from attnprimer.site.experiments.worked_example import (
    QUERY,
    TOKENS,
    WorkedAttention,
    qkv_example,  # noqa: F401 (the doctest's)
)
from attnprimer.site.figures.tables import markdown_table

__all__ = ["worked_table"]


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
