"""The commands of ``attnprimer``: train, test, eval and figures (one function each)."""

from __future__ import annotations

import argparse
import json
import os
from dataclasses import asdict
from pathlib import Path

from attnprimer.cli.arguments import (
    Interrupted,
    PathError,
    UsageError,
    _check_cache,
    _check_checkpoint,
    _describe,
    _folder_problem,
    _settings,
    _train_command,
)
from attnprimer.training.checkpoints import CheckpointError, load_checkpoint, save_checkpoint
from attnprimer.training.files import cache_dir
from attnprimer.training.model_cache import cached_path, get_trained, train_missing
from attnprimer.training.train import (
    TrainedModel,
    evaluate,
    held_out_generator,
    predict_one,
    train,
)

__all__: list[str] = []


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
    from attnprimer.site.catalogue import SITE_MODELS

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
    from attnprimer.site.report import attention_report, encoding_norms_report

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
    from attnprimer.site.report import attention_report, head_labels, heads_report

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
    from attnprimer.site.figures import plot_heads

    return plot_heads(attention, labels, decoder_only=_is_decoder_only(trained))


def _save_heatmap(trained, tokens, prediction, attention, path: Path) -> None:
    def draw():
        from attnprimer.site.figures import plot_task_attention

        return plot_task_attention(trained.task, tokens, prediction,
                                   attention["encoder-decoder"],
                                   self_weights=attention.get("self"))

    _save(draw, path)


def _save(draw, path: Path) -> None:
    """Save the figure ``draw()`` makes to ``path``, under the Agg backend."""
    import matplotlib

    matplotlib.use("Agg")
    from attnprimer.site.figures import save_figure

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
    from attnprimer.site.catalogue import SITE_MODELS
    from attnprimer.site.figures import FIGURES, render_all

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
