"""The ``attnprimer`` command: train, test, evaluate and plot the toy tasks.

Every setting flag comes from a dataclass field
([`TrainConfig`][attnprimer.train.TrainConfig] and the
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
import json
import os
import sys
import tempfile
from dataclasses import asdict, fields
from pathlib import Path

from attnprimer.cache import cached_path, get_trained, train_missing
from attnprimer.checkpoints import CheckpointError, load_checkpoint, save_checkpoint
from attnprimer.files import cache_dir
from attnprimer.tasks import TASKS, Task
from attnprimer.train import (
    HELD_OUT_SEED,
    TrainConfig,
    TrainedModel,
    evaluate,
    held_out_generator,
    predict_one,
    train,
)

__all__ = ["main"]


class UsageError(Exception):
    """Bad flags or input: reported on one line, exit code 2."""


class PathError(Exception):
    """A file or folder the command needs cannot be used: one line, exit code 1."""


class Interrupted(Exception):
    """Ctrl-C, with what was interrupted and what was saved: one line, exit code 130."""


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line on stderr (and exit code 2)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {message}\n")


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

    _, subs = _task_commands(commands, "test", "show a trained model's prediction and attention")
    for name, sub in zip(TASKS, subs, strict=True):
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
}
"""What ``test --input`` takes for each task, and an example of it (the task's ``encode``)."""


def _task_commands(commands, command: str, help: str):
    """``attnprimer COMMAND TASK``: one sub-parser per task, each with its settings flags.

    Returns the task sub-parsers' action (to add more choices) and the sub-parsers.
    """
    parser = commands.add_parser(command, help=help)
    tasks = parser.add_subparsers(dest="task", required=True, metavar="TASK", parser_class=_Parser)
    subs = []
    for name, task_class in TASKS.items():
        sub = tasks.add_parser(name, help=task_class.description)
        _add_setting_flags(sub, task_class)
        subs.append(sub)
    return tasks, subs


def _setting_fields(task_class: type[Task]):
    return [*fields(TrainConfig), *fields(task_class)]


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


def _settings(args: argparse.Namespace) -> tuple[Task, TrainConfig]:
    """Build the task and the training config from the flags, checking the values."""
    task_class = TASKS[args.task]
    given = {field.name: getattr(args, field.name) for field in _setting_fields(task_class)
             if getattr(args, field.name) is not None}
    train_names = {field.name for field in fields(TrainConfig)}
    train_settings = {**task_class.train_defaults,
                      **{name: value for name, value in given.items() if name in train_names}}
    task_settings = {name: value for name, value in given.items() if name not in train_names}
    try:
        return task_class(**task_settings), TrainConfig(**train_settings)
    except ValueError as error:
        raise UsageError(str(error)) from None


def _train_command(task: Task, config: TrainConfig) -> str:
    """The shortest ``attnprimer train`` command line that trains this model."""
    defaults = {field.name: field.default for field in _setting_fields(type(task))}
    defaults.update(type(task).train_defaults)
    words = ["attnprimer", "train", task.name]
    for name, value in {**asdict(config), **asdict(task)}.items():
        flag = "--" + name.replace("_", "-")
        if value == defaults[name]:
            continue
        if isinstance(value, bool):
            words.append(flag if value else "--no-" + flag[2:])
        else:
            words += [flag, str(value)]
    return " ".join(words)


def _load(args: argparse.Namespace) -> TrainedModel:
    if args.checkpoint is not None:
        trained = load_checkpoint(args.checkpoint)
        if trained.task.name != args.task:
            raise UsageError(
                f"{args.checkpoint} holds a {trained.task.name} model, not {args.task}")
        return trained
    task, config = _settings(args)
    path = cached_path(task, config)
    _check_cache(path.parent, writing=False)
    if not path.is_file():
        raise CheckpointError(
            f"no trained {task.name} model with these settings yet; train it with: "
            f"{_train_command(task, config)}"
        )
    return load_checkpoint(path)


# --- the commands -----------------------------------------------------------------------------


def _train(args: argparse.Namespace) -> int:
    task, config = _settings(args)
    cached = cached_path(task, config)
    _check_cache(cached.parent, writing=True, then="nothing was trained")
    if args.checkpoint is not None:
        _check_checkpoint(args.checkpoint)
    stage, saved = "while training", []
    try:
        print(f"training {task.name} ({config.steps} steps)...", flush=True)
        trained = train(task, config, progress=True)
        stage = "after training"
        saved.append(save_checkpoint(trained, cached))
        if args.checkpoint is not None:
            saved.append(save_checkpoint(trained, args.checkpoint))
        result = evaluate(trained, samples=args.samples)
    except KeyboardInterrupt:
        kept = "saved to " + " and ".join(map(str, saved)) if saved else "nothing was saved"
        raise Interrupted(f"interrupted {stage} {task.name}; {kept}") from None
    path = saved[-1]
    print(f"trained {task.name} in {trained.train_seconds:.1f} s ({config.steps} steps)")
    print(_accuracy_line(trained, result))
    print(f"saved to {path}")
    return 0


def _train_site_models(args: argparse.Namespace) -> int:
    from attnprimer.site_models import SITE_MODELS

    specs = [(model.task, model.config) for model in SITE_MODELS]
    for task, config in _train_missing(specs, "the site's models"):
        print(f"trained: {_train_command(task, config)}")
    if args.no_eval:
        print(f"all {len(specs)} of the site's models are cached")
        return 0
    try:
        for model in SITE_MODELS:
            trained = get_trained(model.task, model.config, progress=True)
            print(f"{model.label}: {_accuracy_line(trained, evaluate(trained))}")
    except KeyboardInterrupt:
        raise Interrupted("interrupted while evaluating the site's models; "
                          "the trained ones stay cached") from None
    return 0


def _train_missing(specs, what: str) -> list:
    """``train_missing``, after checking the cache, with one line for Ctrl-C.

    Each model is saved once trained, so an interruption keeps the finished ones.
    """
    specs = list(dict.fromkeys(specs))
    missing = [spec for spec in specs if not cached_path(*spec).is_file()]
    if not missing:
        return []
    _check_cache(cached_path(*missing[0]).parent, writing=True, then="nothing was trained")
    print(f"training {len(missing)} of {what} ({len(specs)} in all)...", flush=True)
    try:
        return train_missing(missing)
    except KeyboardInterrupt:
        cached = sum(cached_path(*spec).is_file() for spec in specs)
        raise Interrupted(f"interrupted while training {what}; {cached} of {len(specs)} are "
                          "cached, nothing else was saved") from None


def _accuracy_line(trained: TrainedModel, result) -> str:
    labels = trained.task.output_labels()
    per_step = ", ".join(f"{label} {accuracy:.2%}"
                         for label, accuracy in zip(labels, result.per_step, strict=True))
    return (f"held-out exact match {result.exact_match:.2%} on {result.samples:,} sequences "
            f"(per step: {per_step})")


def _test(args: argparse.Namespace) -> int:
    from attnprimer.report import attention_report, encoding_norms_report

    trained = _load(args)
    task = trained.task
    if args.input is not None:
        try:
            tokens = task.encode(args.input.upper())
        except ValueError as error:
            raise UsageError(str(error)) from None
    else:
        tokens = task.sample(1, held_out_generator(args.data_seed)).inputs[0]
    if _is_transformer(trained):
        return _test_transformer(trained, tokens, args.plot)
    prediction, attention = predict_one(trained.model, tokens)
    target = task.targets_for(tokens[None])[0]
    print(attention_report(task, tokens, prediction, attention, target))
    norms = encoding_norms_report(trained.model, len(tokens))  # a learned encoding only
    if norms is not None:
        print(f"\n{norms}")
    if args.plot is not None:
        if "encoder-decoder" not in attention:
            raise UsageError(f"this {task.name} model has no attention to plot")
        _save_heatmap(trained, tokens, prediction, attention, args.plot)
        print(f"\nheatmap saved to {args.plot}")
    return 0


def _is_transformer(trained: TrainedModel) -> bool:
    from attnprimer.transformer import Transformer

    return isinstance(trained.model, Transformer) or _is_decoder_only(trained)


def _is_decoder_only(trained: TrainedModel) -> bool:
    """One causal stack over input, separator and output (with a start token first, for
    the length-generalisation chapter's model)."""
    from attnprimer.position_schemes import SchemeDecoder
    from attnprimer.transformer import DecoderOnly

    return isinstance(trained.model, (DecoderOnly, SchemeDecoder))


def _test_transformer(trained: TrainedModel, tokens, plot: Path | None) -> int:
    """A Transformer's answer and every head's weights; the padding, masked, is left out."""
    from attnprimer.position_schemes import SchemeDecoder
    from attnprimer.report import attention_report, head_labels, heads_report

    task = trained.task
    tokens = tokens[tokens != 0]  # (n,): the letters; the model masks padding anyway
    prediction, attention = predict_one(trained.model, tokens)
    target = task.targets_for(tokens[None])[0]
    start = isinstance(trained.model, SchemeDecoder)  # a start token before the letters
    labels = head_labels(task, tokens, prediction, _is_decoder_only(trained),
                         start_token=start)
    print(attention_report(task, tokens, prediction, {}, target))
    print(f"\n{heads_report(attention, labels)}")
    if plot is not None:
        _save(lambda: _plot_heads(trained, attention, labels), plot)
        print(f"\nevery head's heatmap saved to {plot}")
    return 0


def _plot_heads(trained: TrainedModel, attention, labels):
    from attnprimer.figures import plot_heads

    return plot_heads(attention, labels, decoder_only=_is_decoder_only(trained))


def _save_heatmap(trained, tokens, prediction, attention, path: Path) -> None:
    def draw():
        from attnprimer.figures import plot_task_attention

        return plot_task_attention(trained.task, tokens, prediction,
                                   attention["encoder-decoder"],
                                   self_weights=attention.get("self"))

    _save(draw, path)


def _save(draw, path: Path) -> None:
    """Save the figure ``draw()`` makes to ``path``, under the Agg backend."""
    import matplotlib

    matplotlib.use("Agg")
    from attnprimer.figures import save_figure

    figure = draw()
    try:
        save_figure(figure, path)
    except ValueError as error:  # an unsupported format
        raise UsageError(f"cannot save the plot to {path}: {error}") from None
    except OSError as error:
        raise PathError(f"cannot save the plot to {path}: {_describe(error)}") from None


def _eval(args: argparse.Namespace) -> int:
    trained = _load(args)
    result = evaluate(trained, samples=args.samples, seed=args.data_seed)
    if args.json:
        print(json.dumps({
            "task": trained.task.name,
            "exact_match": result.exact_match,
            "per_step": result.per_step,
            "samples": result.samples,
            "data_seed": result.seed,
            "settings": {**asdict(trained.task), **asdict(trained.config)},
        }))
    else:
        print(_accuracy_line(trained, result))
    return 0


def _figures(args: argparse.Namespace) -> int:
    import matplotlib

    matplotlib.use("Agg")
    from attnprimer.figures import FIGURES, render_all
    from attnprimer.site_models import SITE_MODELS

    if args.list:
        width = max(len(recipe.chapter) for recipe in FIGURES.values())
        for recipe in FIGURES.values():
            print(f"{recipe.chapter:<{width}}  {recipe.name:<28}  {recipe.description}")
        return 0
    chapters = {recipe.chapter for recipe in FIGURES.values()}
    unknown = sorted(set(args.names) - set(FIGURES) - chapters)
    if unknown:
        raise UsageError(f"unknown figure {', '.join(unknown)}; "
                         f"`attnprimer figures --list` lists them")
    keys = [key for key, recipe in FIGURES.items()
            if not args.names or key in args.names or recipe.chapter in args.names]
    problem = _folder_problem(args.out, create=True)
    if problem:
        raise PathError(f"cannot write the figures to {args.out}: {problem}")
    if args.names:  # the figures of trained models train theirs when the cache lacks them
        _check_cache(cache_dir(), writing=False)
    else:
        _train_missing([(model.task, model.config) for model in SITE_MODELS],
                       "the site's models for the figures")
    try:
        for path in render_all(args.out, keys, force=True, workers=os.cpu_count() or 1):
            print(path, flush=True)
    except KeyboardInterrupt:
        raise Interrupted(f"interrupted while rendering the figures into {args.out}") from None
    return 0


# --- paths: checked before any training ------------------------------------------------------


def _check_checkpoint(path: Path) -> None:
    """``--checkpoint``: a file in an existing folder we can write in.

    The folder is not created: a mistyped path should fail, not leave new folders behind.
    """
    if path.is_dir():
        problem = f"{path} is a folder, not a file"
    else:
        problem = _folder_problem(path.parent, create=False)
    if problem:
        raise PathError(f"cannot save the checkpoint to {path}: {problem}; nothing was trained")


def _check_cache(folder: Path, *, writing: bool, then: str = "") -> None:
    """A folder of the model cache: usable for reading (or missing), or also for writing."""
    problem = _folder_problem(folder, create=True, probe=writing)
    if problem:
        source = ("ATTNPRIMER_CACHE_DIR" if os.environ.get("ATTNPRIMER_CACHE_DIR")
                  else "set ATTNPRIMER_CACHE_DIR to use another")
        raise PathError(f"cannot use the model cache {cache_dir()} ({source}): {problem}"
                        + (f"; {then}" if then else ""))


def _folder_problem(folder: Path, *, create: bool, probe: bool = True) -> str | None:
    """Why files cannot be written in ``folder``, or None if they can.

    A missing ``folder`` is a problem unless ``create`` (it is made later, with its
    parents). Leaves nothing on disk: no folder is made here, and ``probe`` (a
    temporary file in the nearest existing folder) is removed at once.
    """
    existing = folder
    while not existing.exists():
        if not create:
            return f"folder {existing} does not exist"
        existing = existing.parent
    if not existing.is_dir():
        return f"{existing} is {'a file, ' if existing.is_file() else ''}not a folder"
    if probe:
        try:
            handle, name = tempfile.mkstemp(dir=existing, prefix=".attnprimer-", suffix=".tmp")
        except OSError as error:
            return f"cannot create files in {existing} ({error.strerror})"
        try:
            os.close(handle)
        finally:
            os.unlink(name)
    return None


def _describe(error: OSError) -> str:
    """An OSError in a few words with its path, e.g. ``Not a directory: a/b``."""
    if error.filename is None:
        return str(error)
    paths = " -> ".join(str(name) for name in (error.filename, error.filename2) if name)
    return f"{error.strerror}: {paths}"


# --- argument types --------------------------------------------------------------------------


def _positive_int(text: str) -> int:
    value = _parse(int, text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text}")
    return value


def _non_negative_int(text: str) -> int:
    value = _parse(int, text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be a non-negative integer, got {text}")
    return value


def _positive_float(text: str) -> float:
    value = _parse(float, text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be a positive number, got {text}")
    return value


def _parse(kind, text: str):
    try:
        return kind(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a valid {kind.__name__}: {text!r}") from None
