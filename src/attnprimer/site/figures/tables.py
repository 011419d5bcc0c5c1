"""Markdown for the site's tables and command-line samples.

Recipes that return text build it from these few helpers, so that every table on the site
writes percentages, cells and captions the same way.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

__all__ = ["by_seed", "cell", "cli_sample", "markdown_table", "mean_range", "percent"]


def percent(value: float, digits: int = 2) -> str:
    """A fraction as a percentage with a non-breaking space before the sign.

    Examples:
        >>> percent(0.99751)
        '99.75&nbsp;%'
    """
    return f"{value:.{digits}%}".replace("%", "&nbsp;%")


def by_seed(cells: Iterable[str]) -> str:
    """One cell per seed, in seed order, "a / b / c" (narrow no-break spaces: never broken).

    Examples:
        >>> by_seed(["1", "2", "3"])
        '1&#8239;/&#8239;2&#8239;/&#8239;3'
    """
    return "&#8239;/&#8239;".join(cells)


def mean_range(values: Iterable[float], digits: int = 1, *, percent: bool = True) -> str:
    """Fractions (one per seed) as a percentage: the mean, then the range in brackets
    (a narrow no-break space and a word joiner after the dash, so that a cell never breaks
    inside it; the header says %). With ``percent=False`` the values are written as they are
    (a loss, a weight).

    Examples:
        >>> mean_range([0.5, 0.625, 0.53])
        '55.2&#8239;(50.0–&#8288;62.5)'
        >>> mean_range([1.0, 1.0, 1.0])
        '100.0'
        >>> mean_range([1.5821, 1.5917], 4, percent=False)
        '1.5869&#8239;(1.5821–&#8288;1.5917)'
    """
    values = [100 * value if percent else value for value in values]
    mean = f"{sum(values) / len(values):.{digits}f}"
    low, high = f"{min(values):.{digits}f}", f"{max(values):.{digits}f}"
    return mean if low == high else f"{mean}&#8239;({low}–&#8288;{high})"


def cell(text: str) -> str:
    """Text safe inside a Markdown table cell (``|A-B|`` would end the cell).

    Examples:
        >>> cell("|A-B|")
        '\\\\|A-B\\\\|'
    """
    return text.replace("|", "\\|")


def markdown_table(header: Sequence[str], rows: Iterable[Sequence[object]],
                   align: str = "", caption: str = "") -> str:
    """A Markdown table, then an optional caption paragraph.

    Args:
        header: the column titles.
        rows: one sequence of cells per row (converted with ``str``).
        align: one letter per column, ``l`` (left) or ``r`` (right); default: the first
            column left, the others right.
        caption: a paragraph under the table.

    Examples:
        >>> print(markdown_table(["model", "accuracy"], [["a", "99&nbsp;%"]], caption="Note."))
        | model | accuracy |
        |---|--:|
        | a | 99&nbsp;% |
        <BLANKLINE>
        Note.
        <BLANKLINE>
    """
    align = align or "l" + "r" * (len(header) - 1)
    if len(align) != len(header):
        raise ValueError(f"align has {len(align)} letters for {len(header)} columns")
    lines = ["| " + " | ".join(header) + " |",
             "|" + "".join("--:|" if letter == "r" else "---|" for letter in align)]
    for row in rows:
        if len(row) != len(header):
            raise ValueError(f"a row has {len(row)} cells for {len(header)} columns: {row!r}")
        lines.append("| " + " | ".join(str(value) for value in row) + " |")
    if caption:
        lines += ["", caption]
    return "\n".join(lines) + "\n"


def cli_sample(command: str, output: str) -> str:
    """A fenced block showing ``$ command`` and what it printed.

    Examples:
        >>> print(cli_sample("attnprimer test counting", "A=2"), end="")
        ```text
        $ attnprimer test counting
        A=2
        ```
    """
    return f"```text\n$ {command}\n{output}\n```\n"
