"""The worked example's table on the QKV page: every number it prints is the package's."""

from __future__ import annotations

import math

from attnprimer.site.experiments.worked_example import KEYS, QUERY, TOKENS, VALUES, qkv_example
from attnprimer.site.figures import FIGURES
from attnprimer.site.figures.worked_example import worked_table


def _cells(table: str) -> list[list[str]]:
    rows = [line for line in table.splitlines() if line.startswith("| ")]
    return [[cell.strip() for cell in row.strip("|").split("|")] for row in rows[1:]]


def test_the_page_includes_the_table_of_the_worked_example():
    assert FIGURES["qkv/worked_example"].build() == worked_table(qkv_example())


def test_the_table_prints_every_number_the_attention_computed():
    worked = qkv_example()
    *keys, total = _cells(worked_table(worked))
    assert len(keys) == len(TOKENS) == 3
    exps = worked.scaled[0].exp()
    for index, row in enumerate(keys):
        token, key, value, score, scaled, exp, weight = row
        assert token == TOKENS[index]
        assert key == "({:g}, {:g})".format(*KEYS[index])
        assert value == "({:g}, {:g})".format(*VALUES[index])
        assert float(score) == worked.scores[0, index].item()
        assert math.isclose(float(scaled), worked.scaled[0, index].item(), abs_tol=5e-4)
        assert math.isclose(float(exp), exps[index].item(), abs_tol=5e-4)
        assert math.isclose(float(weight), worked.weights[0, index].item(), abs_tol=5e-4)
    assert total[0] == "**context**"
    context = [float(x) for x in total[2].strip("*()").split(",")]
    for printed, computed in zip(context, worked.context[0].tolist(), strict=True):
        assert math.isclose(printed, computed, abs_tol=5e-3)
    assert math.isclose(float(total[5]), exps.sum().item(), abs_tol=5e-4)
    assert float(total[6]) == 1.0


def test_the_table_checks_by_hand():
    # The numbers a reader checks with a pencil: q = (2, 1) against each key, divided by √2.
    *keys, _ = _cells(worked_table(qkv_example()))
    for row, key in zip(keys, KEYS, strict=True):
        dot = QUERY[0] * key[0] + QUERY[1] * key[1]
        assert float(row[3]) == dot
        assert math.isclose(float(row[4]), dot / math.sqrt(2), abs_tol=5e-4)
    assert f"$q = ({QUERY[0]:g}, {QUERY[1]:g})$" in worked_table(qkv_example())
