"""Plain-text reports of what a trained model did on one input.

The CLI's ``attnprimer test`` prints these, and the site shows the same text,
so a reader can compare their terminal with the page.
"""

from __future__ import annotations

import torch

from attnprimer.tasks import BLANK, Task

__all__ = ["attended_mainly", "attention_report", "encoding_norms_report", "head_labels",
           "heads_report"]

WIDTH = 80
"""The widest line of a report: a terminal's and the site's code column (at 1280 px)."""


def attended_mainly(weights: torch.Tensor) -> list[int]:
    """The steps a row of attention weights (S,) mainly looks at.

    "Mainly" means a weight at least half the row's largest one: ties and
    near-ties all count, the background does not.

    Examples:
        >>> attended_mainly(torch.tensor([0.23, 0.23, 0.06, 0.10, 0.38]))
        [0, 1, 4]
    """
    return torch.nonzero(weights >= weights.max() / 2).flatten().tolist()


def attention_report(
    task: Task,
    tokens: torch.Tensor,
    prediction: torch.Tensor,
    attention: dict[str, torch.Tensor],
    target: torch.Tensor | None = None,
) -> str:
    """Describe one example: the input, the prediction and, per output step, its attention.

    Args:
        task: the task the model solves.
        tokens: (S,) the input token ids.
        prediction: (T,) the predicted class of each output step.
        attention: weights by name, each (T, S') for one example.
        target: (T,) the correct classes, if known.

    Returns:
        A multi-line report; weights to 3 decimals.

    Examples:
        >>> from attnprimer.tasks import CountingTask
        >>> task = CountingTask(max_len=4, vocab_size=2)
        >>> weights = torch.tensor([[0.4, 0.4, 0.1, 0.1], [0.1, 0.1, 0.4, 0.4]])
        >>> print(attention_report(task, task.encode("AABB"), torch.tensor([2, 2]),
        ...                        {"encoder-decoder": weights}))
        Input:       A A B B
                     0 1 2 3   (step)
        Prediction:  A=2  B=2
        <BLANKLINE>
        Encoder-decoder attention:
        Output step 0 (A) attended mainly to input steps [0, 1]
          [0.4, 0.4, 0.1, 0.1]
        Output step 1 (B) attended mainly to input steps [2, 3]
          [0.1, 0.1, 0.4, 0.4]
    """
    labels = task.output_labels()
    # One label per token: a letter, or a letter and its digit (the partners task).
    shown = ["_" if char == BLANK else char for char in map(task.decode, tokens[:, None])]
    width = max(len(str(len(shown) - 1)), *map(len, shown))
    lines = [
        "Input:       " + " ".join(char.rjust(width) for char in shown),
        "             " + " ".join(str(step).rjust(width) for step in range(len(shown)))
        + "   (step)",
        "Prediction:  " + task.describe_output(prediction),
    ]
    if target is not None:
        right = bool(task.correct(prediction[None], target[None]).all())
        verdict = "all correct" if right else "WRONG"
        lines.append("Target:      " + task.describe_output(target) + f"   ({verdict})")
    for name, weights in attention.items():
        heading, rows, keys = _KINDS.get(name,
                                         (f"{name.capitalize()} attention", "output", "steps"))
        row_labels = labels if rows == "output" else shown
        lines += ["", f"{heading}:"]
        for step, row in enumerate(weights):
            header = (f"{rows.capitalize()} step {step} ({row_labels[step]}) "
                      f"attended mainly to {keys} ")
            lines.append(header + _steps(attended_mainly(row), WIDTH - len(header)))
            lines.append("  " + str([round(float(weight), 3) for weight in row]))
    return "\n".join(lines)


def _steps(steps: list[int], room: int) -> str:
    """``steps`` as a list; if longer than ``room``, runs of 3+ shortened to "a, ..., b".

    Examples:
        >>> _steps([0, 1, 2, 3, 5, 7, 8, 9], room=80)
        '[0, 1, 2, 3, 5, 7, 8, 9]'
        >>> _steps([0, 1, 2, 3, 5, 7, 8, 9], room=20)
        '[0, ..., 3, 5, 7, ..., 9]'
    """
    if len(str(steps)) <= room:
        return str(steps)
    runs: list[list[int]] = []
    for step in steps:
        if runs and step == runs[-1][-1] + 1:
            runs[-1].append(step)
        else:
            runs.append([step])
    parts = [f"{run[0]}, ..., {run[-1]}" if len(run) >= 3 else ", ".join(map(str, run))
             for run in runs]
    return "[" + ", ".join(parts) + "]"


# How each kind of attention is introduced, whose steps its rows are, and what its keys are.
_KINDS = {
    "encoder-decoder": ("Encoder-decoder attention", "output", "input steps"),
    "self": ("Self-attention over the output steps", "output", "output steps"),
    "encoder self": ("Encoder self-attention over the input", "input", "input steps"),
}


def head_labels(task: Task, tokens: torch.Tensor, prediction: torch.Tensor,
                decoder_only: bool, *, start_token: bool = False
                ) -> dict[str, tuple[list[str], list[str]]]:
    """Row and column labels of a Transformer's weights on one input, by kind of attention.

    ``tokens`` (n,) are the input's letters (no padding), ``prediction`` (n + 1,) what the
    model wrote, greedy. The encoder-decoder's decoder steps are labelled by the letter each
    writes (``.`` the end); the decoder-only model's positions by the token they hold:
    the input, the separator ``|``, then the letters written so far (after the start token
    ``^`` when ``start_token``: the length-generalisation chapter's model).

    Examples:
        >>> from attnprimer.tasks import ReversalTransformerTask
        >>> task = ReversalTransformerTask()
        >>> labels = head_labels(task, task.encode("AB")[:2], torch.tensor([2, 1, 9]), False)
        >>> labels["cross"]
        (['B', 'A', '.'], ['A', 'B'])
        >>> head_labels(task, task.encode("AB")[:2], torch.tensor([2, 1, 9]), True)
        {'decoder self': (['A', 'B', '|', 'B', 'A'], ['A', 'B', '|', 'B', 'A'])}
    """
    letters = [task.alphabet[int(token)] for token in tokens]
    written = ["." if int(token) == task.end else
               task.alphabet[int(token)] if 0 < int(token) <= task.vocab_size else "?"
               for token in prediction]
    if decoder_only:
        sequence = [*(["^"] if start_token else []), *letters, "|", *written[:-1]]
        return {"decoder self": (sequence, sequence)}
    return {"encoder self": (letters, letters), "decoder self": (written, written),
            "cross": (written, letters)}


def heads_report(attention: dict[str, torch.Tensor],
                 labels: dict[str, tuple[list[str], list[str]]]) -> str:
    """Every head's weights (L, S) as a small matrix in percent, side by side where they fit.

    ``labels`` gives the rows' and the columns' labels by kind, the name up to its layer
    (``"cross"`` for ``"cross 1.2"``), as
    [`head_labels`][attnprimer.site.report.head_labels] makes them.

    Examples:
        >>> weights = torch.tensor([[0.004, 0.996], [0.75, 0.25]])
        >>> print(heads_report({"cross 1.1": weights}, {"cross": (["B", "A"], ["A", "B"])}))
        Every head's weights in %, rounded; rows: queries, columns: keys.
        <BLANKLINE>
        cross 1.1
             A   B
        B    0 100
        A   75  25
    """
    blocks = []
    for name, weights in attention.items():
        rows, columns = labels[name.rpartition(" ")[0]]
        percents = [[round(100 * float(weight)) for weight in row] for row in weights]
        cell = 4 if any(100 in row for row in percents) else 3
        side = max(len(label) for label in rows) + 1
        lines = [name, " " * side + "".join(label.rjust(cell) for label in columns)]
        lines += [label.ljust(side) + "".join(str(p).rjust(cell) for p in row)
                  for label, row in zip(rows, percents, strict=True)]
        width = max(len(line) for line in lines)
        blocks.append([line.ljust(width) for line in lines])
    lines = ["Every head's weights in %, rounded; rows: queries, columns: keys."]
    row: list[list[str]] = []
    for block in [*blocks, None]:  # None: flush the last row of blocks
        if row and (block is None or sum(len(b[0]) + 3 for b in row) + len(block[0]) > WIDTH
                    or len(block) != len(row[0])):
            lines.append("")
            lines += ["   ".join(b[i] for b in row).rstrip() for i in range(len(row[0]))]
            row = []
        if block is not None:
            row.append(block)
    return "\n".join(lines)


def encoding_norms_report(model, length: int) -> str | None:
    """The L2 norm of a model's learned positional encoding at each of ``length`` input steps.

    Returns None for a model without a learned encoding (nothing was learned to show).

    Examples:
        >>> from attnprimer.tasks import SignalTask
        >>> print(encoding_norms_report(SignalTask(pos_enc="learned").build_model(), 3))
        L2 norm of the learned positional encoding at each input step:
          [0.0, 0.0, 0.0]
        >>> encoding_norms_report(SignalTask().build_model(), 3) is None
        True
    """
    encoding = getattr(model, "position", None)
    if not hasattr(encoding, "norms"):
        return None
    norms = [round(float(norm), 3) for norm in encoding.norms()[:length]]
    return f"L2 norm of the learned positional encoding at each input step:\n  {norms}"
