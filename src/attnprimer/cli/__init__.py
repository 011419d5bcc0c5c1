"""The ``attnprimer`` command: train, test, evaluate and plot the toy tasks.

This module builds the parser and runs a command; the commands are in
[`commands`][attnprimer.cli.commands], the errors, argument types and the checks of paths and
settings in [`arguments`][attnprimer.cli.arguments].

Every setting flag comes from a dataclass field
([`TrainConfig`][attnprimer.training.train.TrainConfig] and the
task's own fields), so the flags, the checkpoints and the cache keys cannot
disagree. The same flags pick a trained model out of the cache for ``test``
and ``eval``.

Every failure is one line on stderr. Checkpoints are written atomically, so a
failed or interrupted command never leaves half a model on disk, and paths are
checked before training: a bad one fails at once, not after minutes of training.

Exit codes:

- 0: success.
- 1: the command could not be carried out: no usable model (missing or
  unreadable checkpoint), or a file or folder that cannot be used (the
  ``--checkpoint`` or ``--plot`` path, the ``--out`` folder, the model cache).
- 2: bad usage (unknown task or flag, bad value, bad input).
- 130: interrupted (Ctrl-C); the line says what was saved, if anything.
"""


from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from attnprimer.cli.arguments import (
    Interrupted,
    PathError,
    UsageError,
    _describe,
    _non_negative_int,
    _Parser,
    _positive_float,
    _positive_int,
    _setting_fields,
)
from attnprimer.cli.commands import _eval, _figures, _test, _train, _train_site_models
from attnprimer.tasks import TASKS, Task
from attnprimer.training.checkpoints import CheckpointError
from attnprimer.training.train import HELD_OUT_SEED

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    """Run the CLI with ``argv`` (default: the command line); returns the exit code.

    Errors are one line on stderr: exit code 2 for bad usage, 1 for a missing
    or unreadable model or an unusable path, 130 for Ctrl-C.

    Examples:
        >>> main(["figures", "no_such_figure"])   # stderr: attnprimer: error: unknown figure ...
        2
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.handler(args)
    except UsageError as error:
        print(f"attnprimer: error: {error}", file=sys.stderr)
        return 2
    except (CheckpointError, PathError) as error:
        print(f"attnprimer: error: {error}", file=sys.stderr)
        return 1
    except BrokenPipeError:  # the reader went away (`attnprimer figures --list | head`)
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no error at exit
        return 0
    except OSError as error:  # a path that passed the checks and failed all the same
        print(f"attnprimer: error: {_describe(error)}", file=sys.stderr)
        return 1
    except Interrupted as interrupted:
        print(f"attnprimer: {interrupted}", file=sys.stderr)
        return 130
    except KeyboardInterrupt:  # a command that writes nothing (test, eval), or while loading
        print(f"attnprimer: interrupted while running {args.command}", file=sys.stderr)
        return 130


def build_parser() -> argparse.ArgumentParser:
    """The parser: ``attnprimer {train,test,eval,figures} TASK [flags]``."""
    parser = _Parser(prog="attnprimer", description="An executable primer on attention: toy tasks.")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    tasks, subs = _task_commands(commands, "train", "train a task's model (and cache it)")
    for sub in subs:
        sub.add_argument("--checkpoint", type=Path, help="also save the trained model to this file")
        sub.add_argument("--samples", type=_positive_int, default=10_000,
                         help="held-out sequences to score once trained (default: 10000)")
        sub.set_defaults(handler=_train)
    every = tasks.add_parser("all", help="train (or load from the cache) every model the site uses")
    every.add_argument("--no-eval", action="store_true",
                       help="train what the cache lacks, then stop: no held-out scores")
    every.set_defaults(handler=_train_site_models)

    # test: the tasks whose input can be typed (the images chapter's canvases cannot)
    _, subs = _task_commands(commands, "test", "show a trained model's prediction and attention "
                             "(tasks whose input is text)", names=tuple(INPUT_FORMATS))
    for name, sub in zip(INPUT_FORMATS, subs, strict=True):
        _add_checkpoint_flag(sub)
        form, example = INPUT_FORMATS[name]
        sub.add_argument(
            "--input",
            help=f'{form}, e.g. "{example}". Default: a random held-out sequence',
        )
        sub.add_argument("--data-seed", type=_non_negative_int, default=0,
                         help="seed of the random input when --input is not given (default: 0)")
        sub.add_argument("--plot", type=Path, metavar="FILE",
                         help="save the attention heatmap (a Transformer: every head) to FILE "
                              "(.png, .svg or .pdf)")
        sub.set_defaults(handler=_test)

    _, subs = _task_commands(commands, "eval", "held-out accuracy of a trained model")
    for sub in subs:
        _add_checkpoint_flag(sub)
        sub.add_argument("--samples", type=_positive_int, default=10_000,
                         help="held-out sequences to score (default: 10000)")
        sub.add_argument("--data-seed", type=_non_negative_int, default=HELD_OUT_SEED,
                         help=f"seed of the held-out sequences (default: {HELD_OUT_SEED})")
        sub.add_argument("--json", action="store_true", help="print one JSON object")
        sub.set_defaults(handler=_eval)

    figures_parser = commands.add_parser("figures",
                                         help="render every figure and table of the site")
    figures_parser.add_argument("names", nargs="*", metavar="CHAPTER/NAME",
                                help="only these artifacts (see --list), or every artifact of a "
                                     "chapter given as CHAPTER")
    figures_parser.add_argument("--list", action="store_true",
                                help="list every artifact: chapter, name and what it shows")
    figures_parser.add_argument("--out", type=Path, default=Path("build/figures"),
                                help="output folder (default: build/figures)")
    figures_parser.set_defaults(handler=_figures)
    return parser


# --- flags from dataclass fields -------------------------------------------------------------


INPUT_FORMATS: dict[str, tuple[str, str]] = {
    "counting": ("letters and spaces (blanks), padded with blanks to --max-len", "AAC CB"),
    "difference": ("letters and spaces (blanks), padded with blanks to --max-len", "BBBA ACABB"),
    "signal": ("exactly --max-len + 1 letters, no blanks; the first is the signal", "BCACABBAACB"),
    "reversal": ("1 to --max-len letters, no blanks", "HEADBADGE"),
    "reversal-transformer": ("1 to --max-len letters, no blanks", "HEADBADGE"),
    "copy-reverse": ("letters, no blanks; longer than --max-len is allowed", "ABCDEFGHAC"),
    "partners": ("each letter once, each with a digit", "D3 A7 C0 B2 E1 F5 H8 G4"),
    "induction": ("1 to --max-len letters A-T, no blanks; repeat a part of it",
                  "JQCMAETHSGCMAEKPL"),
}
"""What ``test --input`` takes for each task, and an example of it (the task's ``encode``).
The tasks of the images chapter are not here: their input is a canvas, not text, and ``test``
does not offer them (``train`` and ``eval`` do)."""


def _task_commands(commands, command: str, help: str, names: tuple[str, ...] = tuple(TASKS)):
    """``attnprimer COMMAND TASK``: one sub-parser per task of ``names``, each with its
    settings flags.

    Returns the task sub-parsers' action (to add more choices) and the sub-parsers.
    """
    parser = commands.add_parser(command, help=help)
    tasks = parser.add_subparsers(dest="task", required=True, metavar="TASK", parser_class=_Parser)
    subs = []
    for name in names:
        task_class = TASKS[name]
        sub = tasks.add_parser(name, help=task_class.description)
        _add_setting_flags(sub, task_class)
        subs.append(sub)
    return tasks, subs


def _add_setting_flags(parser: argparse.ArgumentParser, task_class: type[Task]) -> None:
    group = parser.add_argument_group("settings (they also select the model for test and eval)")
    for field in _setting_fields(task_class):
        default = task_class.train_defaults.get(field.name, field.default)
        if isinstance(field.default, bool):  # --self-att / --no-self-att
            group.add_argument("--" + field.name.replace("_", "-"), default=None,
                               action=argparse.BooleanOptionalAction,
                               help=f"{field.metadata.get('help', '')} (default: "
                                    f"{'on' if default else 'off'})")
            continue
        kind = {int: _non_negative_int if field.name == "seed" else _positive_int,
                float: _positive_float, str: str}[type(field.default)]
        choices = field.metadata.get("choices")
        group.add_argument(
            "--" + field.name.replace("_", "-"),
            type=kind,
            default=None,
            choices=choices,
            metavar="{" + ",".join(choices) + "}" if choices else field.name.upper(),
            help=f"{field.metadata.get('help', '')} (default: {default})".strip(),
        )


def _add_checkpoint_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--checkpoint", type=Path,
        help="load the model from this file instead of the cache (settings flags are then ignored)",
    )
