"""The catalogue: every trained model the site's pages, labs, explorer and claims tests use.

Each entry is a [`SiteModel`][attnprimer.site.catalogue.SiteModel], a task (with its model
settings) and a training config. Code that needs one asks for it by its settings:

    >>> site_model("signal", pos_enc="learned", seed=0).task.pos_enc
    'learned'

Settings left out take the task's defaults (and its ``train_defaults``), so a lookup names
exactly one model, and a lookup of a model the site does not train is an error rather than a
silent training run. ``attnprimer train all``, ``nox -s train`` and ``nox -s bench`` read
[`SITE_MODELS`][attnprimer.site.catalogue.SITE_MODELS]; the docs build trains whatever of it the
cache lacks before rendering a figure. Importing this module does not import matplotlib.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any

from attnprimer.position_schemes import POSITION_SCHEMES
from attnprimer.positional import POSITIONAL_ENCODINGS
from attnprimer.tasks import (
    TASKS,
    CopyReverseTask,
    CountingTask,
    DifferenceTask,
    DigitPairTask,
    DigitReadingTask,
    InductionTask,
    PartnersTask,
    ReversalTask,
    ReversalTransformerTask,
    SignalTask,
    Task,
)
from attnprimer.training.model_cache import get_trained
from attnprimer.training.progress import describe
from attnprimer.training.train import TrainConfig, TrainedModel

__all__ = [
    "COUNTING_EXAMPLE", "COUNTING_LENGTH_VARIANTS", "COUNTING_RECIPES", "DEEP_LAYERS", "DEEP_LR",
    "DEEP_NORM_CELLS", "DEEP_RADAM", "DIFFERENCE_EXAMPLE", "DIFFERENCE_VARIANTS",
    "INDUCTION_LAYERS", "LENGTH_OPERATIONS", "LENGTH_SCHEMES", "NOPE_LONGER_STEPS",
    "NORM_GRID_LRS", "NORM_GRID_SCHEDULES", "NORM_PLACEMENTS", "NO_RESIDUALS",
    "ORIGINAL_COUNTING_RECIPE", "PAIR_VARIANTS", "PARTNERS_VARIANTS", "PROJECTION_SWEEP_LRS",
    "REVERSAL_BIDIRECTIONAL", "REVERSAL_DECODERS", "REVERSAL_EXAMPLE", "ROTARY_SEEDS", "SEEDS",
    "SIGNAL_EXAMPLE", "SIGNAL_VARIANTS", "SITE_MODELS", "TRANSFORMERS", "TRANSFORMER_STEPS",
    "VANILLA_BOTTLENECK", "VANILLA_BOTTLENECK_STEPS", "SiteModel", "reversal_seeds", "site_model",
    "site_seeds",
]

SEEDS = (0, 1, 2)
"""The training seeds of every model the site compares across seeds."""


@dataclass(frozen=True)
class SiteModel:
    """One trained model of the site: what to learn and how.

    Attributes:
        task: the task, with the model's settings.
        config: the training settings, seed included.
    """

    task: Task
    config: TrainConfig

    @classmethod
    def default(cls, task: Task, seed: int) -> SiteModel:
        """``task`` trained with its ``train_defaults`` and ``seed``."""
        return cls(task, TrainConfig(**{**type(task).train_defaults, "seed": seed}))

    @property
    def label(self) -> str:
        """A short description: the task and every setting that is not its default.

        Examples:
            >>> site_model("reversal", decoder="vanilla").label
            'reversal decoder=vanilla seed=0'
        """
        return describe(self.task, self.config)

    def trained(self) -> TrainedModel:
        """The trained model: from the cache, or trained (and cached) now."""
        return get_trained(self.task, self.config)


ORIGINAL_COUNTING_RECIPE: dict[str, Any] = {"steps": 2000, "lr": 1e-2, "schedule": "constant"}
"""The original primer's counting recipe: the QKV page compares it with ours."""

COUNTING_RECIPES: dict[str, dict[str, Any]] = {
    "original": ORIGINAL_COUNTING_RECIPE,
    "original, lr 0.03": {**ORIGINAL_COUNTING_RECIPE, "lr": 3e-2},
    "original, cosine": {**ORIGINAL_COUNTING_RECIPE, "schedule": "cosine"},
    "original, 6,000 steps": {**ORIGINAL_COUNTING_RECIPE, "steps": 6000},
    "ours, 2,000 steps": {"steps": 2000},
    "ours, constant": {"schedule": "constant"},
    "ours": {},
}
"""The counting recipes the QKV page compares, by name: training settings over the task's
defaults (``CountingTask.train_defaults``, cosine). From the original recipe (2,000 steps, lr
0.01, constant) to ours (6,000 steps, lr 0.03, cosine) three things change; each "original,
..." recipe changes one of them alone, each "ours, ..." recipe takes one back alone. The
eighth combination (ours at lr 0.01) is left out to keep the site's training budget."""

DIFFERENCE_VARIANTS: dict[str, dict[str, bool]] = {
    "no self-attention": {},
    "self-attention": {"self_att": True},
    "self-attention with W_q, W_k, W_v": {"self_att": True, "projections": True},
}
"""The difference models the self-attention chapter compares, by name: their task settings."""

REVERSAL_DECODERS: dict[str, dict[str, str]] = {
    "vanilla": {"decoder": "vanilla"},
    "peeky": {"decoder": "peeky"},
    "attention (additive)": {"decoder": "attention", "score": "additive"},
    "attention (dot)": {"decoder": "attention", "score": "dot"},
}
"""The encoder-decoders of the RNN chapters, by name: their task settings (each in every seed)."""

REVERSAL_BIDIRECTIONAL: dict[str, Any] = {"decoder": "attention", "score": "additive",
                                          "bidirectional": True, "hidden": 32}
"""Bahdanau et al.'s encoder: the additive attention model with a bidirectional GRU of 32 units
per direction, so that its annotations [forward; backward] have the 64 numbers of the
unidirectional model's states and the decoder is the same size (the Bahdanau page)."""

VANILLA_BOTTLENECK: dict[str, dict[str, Any]] = {
    "32 floats": {"decoder": "vanilla", "hidden": 32},
    "64 floats": {"decoder": "vanilla"},
}
"""The vanilla decoders the RNN recap also trains for ``VANILLA_BOTTLENECK_STEPS``, by the size
of their state: their task settings. With ``REVERSAL_DECODERS["vanilla"]`` (64 floats, the
default 1,200 steps) they separate what the training budget does from what the state's size
does (and with it the width of both GRUs)."""

VANILLA_BOTTLENECK_STEPS = 3600
"""Three times the reversal models' default budget."""

PARTNERS_VARIANTS: dict[str, dict[str, bool]] = {
    "with W_q, W_k, W_v": {"projections": True},
    "without projections": {"projections": False},
}
"""The partners models the self-attention chapter compares, by name: their task settings. The
same model, embedding and readout; only whether a token's query, key and value are learned
maps of it or the token itself."""
PROJECTION_SWEEP_LRS: tuple[float, ...] = (1e-2, 3e-3)
"""The peak learning rates the self-attention chapter also tries for the difference variant with
learned W_q, W_k, W_v (its default, 3e-2, was tuned for the models without them)."""

SIGNAL_VARIANTS: dict[str, dict[str, Any]] = {
    "learned, with W_q, W_k": {"pos_enc": "learned", "projections": True},
    "sinusoidal, with W_q, W_k": {"pos_enc": "sinusoidal", "projections": True},
    "learned, balanced loss": {"pos_enc": "learned", "balanced_loss": True},
}
"""Signal models the positional-encoding page adds to its four encodings, by name: their task
settings. Projections for the absolute encodings (rotary has them), and a loss that weighs every
count alike (the rare large counts)."""

COUNTING_LENGTH_VARIANTS: dict[str, dict[str, Any]] = {
    "one length": {},
    "one length, start token": {"start_token": True},
    "mixed lengths": {"max_len": 20, "mixed_lengths": True},
    "mixed lengths, start token": {"max_len": 20, "mixed_lengths": True, "start_token": True},
}
"""The counting models the positional-encoding page tests at other lengths, by name: trained at
10 tokens, or on batches of every length from 5 to 20; with or without a start token. The first
is the site's counting model."""

TRANSFORMERS: dict[str, dict[str, Any]] = {
    "Transformer (encoder-decoder)": {"architecture": "encoder-decoder", "pre_norm": True},
    "Transformer (decoder-only)": {"architecture": "decoder-only", "pre_norm": True},
}
"""The Transformers of the Transformer chapter, by name: their task settings over
``ReversalTransformerTask``'s defaults (D = 32, 4 heads, 2 layers, peak learning rate 0.003).
Pre-LN, because they train without a warm-up (cosine decay from the peak), which Xiong et al.
(2020) say post-LN needs; at two blocks the chapter finds post-LN trains without one too."""

TRANSFORMER_STEPS: dict[str, int] = {"encoder-decoder": 500, "decoder-only": 800}
"""Training steps of each Transformer, by architecture, set by trying a few: enough for every seed
to end at 99 % held-out exact match or more on lengths 1-10, with some margin. The decoder-only
model, which must find the reversal inside one sequence, needs more."""

NORM_PLACEMENTS: dict[str, dict[str, Any]] = {
    "pre-LN": {"architecture": "encoder-decoder", "pre_norm": True},
    "post-LN": {"architecture": "encoder-decoder", "pre_norm": False},
}
"""Where the encoder-decoder Transformer's layer norms go, by name: its task settings. The
Transformer chapter trains both in a grid of peak learning rates and schedules
(``NORM_GRID_LRS`` x ``NORM_GRID_SCHEDULES``), to test Xiong et al. (2020): post-LN needs a
learning-rate warm-up, pre-LN trains without one."""

NORM_GRID_LRS: tuple[float, ...] = (3e-3, 1e-2)
"""The chapter's peak learning rate, and one three times higher."""

NORM_GRID_SCHEDULES: tuple[str, ...] = ("cosine", "warmup-cosine")
"""Without and with a linear warm-up over the first tenth of the steps (``train.WARMUP``)."""

DEEP_NORM_CELLS: tuple[tuple[str, str], ...] = (
    ("post-LN", "cosine"), ("post-LN", "warmup-cosine"), ("pre-LN", "cosine"))
"""The same comparison at ``DEEP_LAYERS`` blocks per stack and the peak learning rate
``DEEP_LR``, fewer cells: post-LN without and with warm-up, pre-LN without (norm, schedule)."""

DEEP_RADAM: dict[str, Any] = {"norm": "post-LN", "schedule": "cosine", "optimizer": "radam"}
"""One more deep cell, to tell two explanations of the warm-up apart (Liu, Jiang et al. 2020,
RAdam; Liu, Liu et al. 2020): post-LN without warm-up, trained with RAdam instead of Adam."""

DEEP_LAYERS = 6
"""Blocks per stack of the deeper norm comparison (the chapter's models have 2)."""

DEEP_LR = 1e-2
"""The peak learning rate of the deeper norm comparison."""

NO_RESIDUALS: dict[str, Any] = {"architecture": "encoder-decoder", "pre_norm": True,
                                "residual": False}
"""The chapter's encoder-decoder without its residual connections: the ablation."""


LENGTH_OPERATIONS: tuple[str, ...] = ("copy", "reverse")
"""The length-generalisation chapter's tasks (``CopyReverseTask.operation``)."""

LENGTH_SCHEMES: tuple[str, ...] = POSITION_SCHEMES
"""The position schemes that chapter compares, each on every task in every seed, trained with
``CopyReverseTask``'s defaults: inputs of 1-8 letters, 1,500 steps."""

ROTARY_SEEDS = (0, 1, 2, 3, 4, 5, 6, 7)
"""Rotary is trained in eight seeds, not three: its first three were far apart beyond the
training lengths, and three draws of so wide a spread cannot estimate its mean."""

INDUCTION_LAYERS: tuple[int, ...] = (2, 1)
"""Layers of the induction-heads chapter's attention-only models; one is the control."""

PAIR_VARIANTS: dict[str, dict] = {"with": {"position": True}, "without": {"position": False}}
"""The patch encoders of the images chapter, by their 2-D positions: their task settings."""

NOPE_LONGER_STEPS = 3000
"""NoPE on reversal is also trained for twice the default steps: does the scheme that learns
its training lengths last catch up with more training?"""


def _norm_grid() -> list[SiteModel]:
    """The grid of ``NORM_PLACEMENTS``, less the chapter's own model (pre-LN, 0.003,
    cosine), which ``TRANSFORMERS`` already has; then the deeper cells."""
    steps = TRANSFORMER_STEPS["encoder-decoder"]
    return [SiteModel(ReversalTransformerTask(**settings),
                      TrainConfig(steps=steps, lr=lr, schedule=schedule, seed=seed))
            for settings in NORM_PLACEMENTS.values() for lr in NORM_GRID_LRS
            for schedule in NORM_GRID_SCHEDULES for seed in SEEDS
            if (settings["pre_norm"], lr, schedule) != (True, 3e-3, "cosine")] + [
        SiteModel(ReversalTransformerTask(**NORM_PLACEMENTS[norm], layers=DEEP_LAYERS),
                  TrainConfig(steps=steps, lr=DEEP_LR, schedule=schedule, seed=seed))
        for norm, schedule in DEEP_NORM_CELLS for seed in SEEDS] + [
        SiteModel(ReversalTransformerTask(**NORM_PLACEMENTS[DEEP_RADAM["norm"]],
                                          layers=DEEP_LAYERS),
                  TrainConfig(steps=steps, lr=DEEP_LR, schedule=DEEP_RADAM["schedule"],
                              optimizer=DEEP_RADAM["optimizer"], seed=seed))
        for seed in SEEDS]


SITE_MODELS: tuple[SiteModel, ...] = (
    *(SiteModel.default(CountingTask(), seed) for seed in SEEDS),
    *(SiteModel.default(DifferenceTask(**settings), seed)
      for settings in DIFFERENCE_VARIANTS.values() for seed in SEEDS),
    *(SiteModel.default(SignalTask(pos_enc=encoding), seed)
      for encoding in POSITIONAL_ENCODINGS for seed in SEEDS),
    *(SiteModel.default(ReversalTask(**settings), seed)
      for settings in REVERSAL_DECODERS.values() for seed in SEEDS),
    # bahdanau: the bidirectional encoder of Bahdanau et al., next to the unidirectional one
    *(SiteModel.default(ReversalTask(**REVERSAL_BIDIRECTIONAL), seed) for seed in SEEDS),
    # rnn-recap: the vanilla decoder trained longer, at two state sizes (budget or capacity?)
    *(SiteModel(ReversalTask(**settings),
                TrainConfig(**{**ReversalTask.train_defaults, "seed": seed,
                               "steps": VANILLA_BOTTLENECK_STEPS}))
      for settings in VANILLA_BOTTLENECK.values() for seed in SEEDS),
    # qkv: the counting recipe ablation, one change at a time, in every seed (ours is above)
    *(SiteModel(CountingTask(), TrainConfig(**{**CountingTask.train_defaults, **settings},
                                            seed=seed))
      for settings in COUNTING_RECIPES.values() if settings for seed in SEEDS),
    # self-attention: tokens that look for their partner, with and without projections
    *(SiteModel.default(PartnersTask(**settings), seed)
      for settings in PARTNERS_VARIANTS.values() for seed in SEEDS),
    # self-attention: the W_q, W_k, W_v difference variant at lower peak learning rates
    *(SiteModel(DifferenceTask(self_att=True, projections=True),
                TrainConfig(**{**DifferenceTask.train_defaults, "lr": lr, "seed": seed}))
      for lr in PROJECTION_SWEEP_LRS for seed in SEEDS),
    # positional-encoding: W_q, W_k, a balanced loss; counting at other lengths, start token
    *(SiteModel.default(SignalTask(**settings), seed)
      for settings in SIGNAL_VARIANTS.values() for seed in SEEDS),
    *(SiteModel.default(CountingTask(**settings), seed)
      for settings in COUNTING_LENGTH_VARIANTS.values() if settings for seed in SEEDS),
    # transformer: the reversal task's Transformers, encoder-decoder and decoder-only
    *(SiteModel(ReversalTransformerTask(**settings),
                TrainConfig(**{**ReversalTransformerTask.train_defaults, "seed": seed,
                               "steps": TRANSFORMER_STEPS[settings["architecture"]]}))
      for settings in TRANSFORMERS.values() for seed in SEEDS),
    # transformer, "Training it": the norm grid (``_norm_grid``); no residual connections
    *_norm_grid(),
    *(SiteModel(ReversalTransformerTask(**NO_RESIDUALS),
                TrainConfig(**{**ReversalTransformerTask.train_defaults, "seed": seed,
                               "steps": TRANSFORMER_STEPS["encoder-decoder"]}))
      for seed in SEEDS),
    # length-generalisation: every position scheme on copy and reverse; NoPE on reverse longer
    *(SiteModel.default(CopyReverseTask(operation=operation, pos_enc=scheme), seed)
      for operation in LENGTH_OPERATIONS for scheme in LENGTH_SCHEMES
      for seed in (ROTARY_SEEDS if scheme == "rotary" else SEEDS)),
    *(SiteModel(CopyReverseTask(operation="reverse", pos_enc="none"),
                TrainConfig(**{**CopyReverseTask.train_defaults, "seed": seed,
                               "steps": NOPE_LONGER_STEPS}))
      for seed in SEEDS),
    # attention-over-images: the patch reader; the patch encoder with and without positions
    *(SiteModel.default(DigitReadingTask(), seed) for seed in SEEDS),
    *(SiteModel.default(DigitPairTask(**settings), seed)
      for settings in PAIR_VARIANTS.values() for seed in SEEDS),
    # induction-heads: attention-only models on repeated segments, two layers and one
    *(SiteModel.default(InductionTask(layers=layers), seed)
      for layers in INDUCTION_LAYERS for seed in SEEDS),
)
"""Every trained model the site uses."""


COUNTING_EXAMPLE = "AACCB CCCB"
"""The counting example of the original primer's README (the QKV page, the explorer)."""

DIFFERENCE_EXAMPLE = "BBBA ACABB"
"""The example of the original primer's difference README (the self-attention page)."""

SIGNAL_EXAMPLE = "BCACABBAACB"
"""The signal example of the original primer's README: signal B, three more Bs."""

REVERSAL_EXAMPLE = "HEADBADGE"
"""The reversal example the Bahdanau page decodes and aligns."""


def site_model(task: str, *, seed: int = 0, **settings: Any) -> SiteModel:
    """The site's model of ``task`` with these settings (task or training ones) and ``seed``.

    Raises:
        LookupError: the site trains no such model (the message lists the ones it has).

    Examples:
        >>> site_model("counting", seed=2).config.seed
        2
        >>> site_model("counting", **ORIGINAL_COUNTING_RECIPE).config.schedule
        'constant'
        >>> site_model("signal", pos_enc="learned", seed=7)
        Traceback (most recent call last):
        ...
        LookupError: the site has no model signal pos_enc=learned seed=7; ...
    """
    wanted = _build(task, seed, settings)
    if wanted not in SITE_MODELS:
        known = ", ".join(model.label for model in SITE_MODELS if model.task.name == task)
        raise LookupError(f"the site has no model {wanted.label}; its {task} models: "
                          f"{known or 'none'}")
    return wanted


def site_seeds(task: str, **settings: Any) -> list[SiteModel]:
    """Every seed the site trains of the model with these settings, in seed order.

    Examples:
        >>> [model.config.seed for model in site_seeds("difference", self_att=True)]
        [0, 1, 2]
    """
    first = _build(task, 0, settings)
    models = [model for model in SITE_MODELS if model.task == first.task
              and model.config == TrainConfig(**{**asdict(first.config),
                                                 "seed": model.config.seed})]
    if not models:
        raise LookupError(f"the site has no model {first.label} (any seed)")
    return sorted(models, key=lambda model: model.config.seed)


def _build(task: str, seed: int, settings: dict[str, Any]) -> SiteModel:
    if task not in TASKS:
        raise LookupError(f"unknown task {task!r}; known tasks: {', '.join(sorted(TASKS))}")
    task_class = TASKS[task]
    train_names = {field.name for field in fields(TrainConfig)}
    task_names = {field.name for field in fields(task_class)}
    unknown = sorted(set(settings) - train_names - task_names)
    if unknown:
        raise LookupError(f"{task} has no setting {', '.join(unknown)}")
    task_settings = {name: value for name, value in settings.items() if name in task_names}
    train_settings = {name: value for name, value in settings.items() if name in train_names}
    config = TrainConfig(**{**task_class.train_defaults, **train_settings, "seed": seed})
    return SiteModel(task_class(**task_settings), config)


def reversal_seeds(name: str) -> list[TrainedModel]:
    """Every trained seed of the reversal model called ``name``: an encoder-decoder of
    [`REVERSAL_DECODERS`][attnprimer.site.catalogue.REVERSAL_DECODERS] or a Transformer of
    [`TRANSFORMERS`][attnprimer.site.catalogue.TRANSFORMERS] (the Transformer and KV-cache
    pages compare them), in seed order."""
    if name in TRANSFORMERS:
        settings = TRANSFORMERS[name]
        models = site_seeds("reversal-transformer", **settings,
                            steps=TRANSFORMER_STEPS[settings["architecture"]])
    else:
        models = site_seeds("reversal", **REVERSAL_DECODERS[name])
    return [model.trained() for model in models]
