"""Every figure and table on the site: one module per chapter, and the registry that builds them.

* [`plotting`][attnprimer.figures.plotting]: pure ``plot_*`` helpers shared by the chapters,
  and reproducible saving; [`mechanisms`][attnprimer.figures.mechanisms] and
  [`encodings`][attnprimer.figures.encodings]: pure plots of attention and of position
  encodings on synthetic data; [`tables`][attnprimer.figures.tables]: Markdown tables.
* One module per chapter, named by the chapter's slug (underscores for dashes):
  [`rnn_recap`][attnprimer.figures.rnn_recap], [`bahdanau`][attnprimer.figures.bahdanau],
  [`qkv`][attnprimer.figures.qkv], [`self_attention`][attnprimer.figures.self_attention],
  [`positional_encoding`][attnprimer.figures.positional_encoding],
  [`transformer`][attnprimer.figures.transformer],
  [`length_generalisation`][attnprimer.figures.length_generalisation], and
  [`kv_cache`][attnprimer.figures.kv_cache] (the key/value cache's part of the chapter
  ``attention-at-scale``, its recipes filed under that slug). Each holds its chapter's
  own ``plot_*`` functions and its recipes: functions registered by name that fetch trained
  models from the catalogue ([`attnprimer.site_models`][attnprimer.site_models]) and results
  from [`attnprimer.analysis`][attnprimer.analysis], then draw or tabulate them.
* [`diagrams`][attnprimer.figures.diagrams]: the drawing primitives of the architecture
  diagrams (boxes, arrows, labels, one palette);
  [`rnn_diagrams`][attnprimer.figures.rnn_diagrams],
  [`attention_diagrams`][attnprimer.figures.attention_diagrams],
  [`position_diagrams`][attnprimer.figures.position_diagrams] and
  [`scale_diagrams`][attnprimer.figures.scale_diagrams] draw the architectures and
  register each diagram for the chapter that shows it (``recipe(..., chapter=...)``).
* [`home`][attnprimer.figures.home]: the home page's figures, filed as the chapter ``home``
  (``docs/index.md``).
* [`theme`][attnprimer.figures.theme]: the dark page's twin of every figure.
* [`registry`][attnprimer.figures.registry]: the recipes by ``<chapter>/<name>``, and
  [`render_all`][attnprimer.figures.registry.render_all], which writes
  ``<chapter>/<name>.svg`` or ``.md``. The docs build hook and ``attnprimer figures``
  (``nox -s figures``) are its two callers, so the site and the files on disk are the same.

Importing this package registers every chapter's recipes.
"""

# The chapters' modules, imported in reading order: the registry lists their recipes so.
from attnprimer.figures import rnn_recap  # isort: skip
from attnprimer.figures import bahdanau  # isort: skip
from attnprimer.figures import qkv  # isort: skip
from attnprimer.figures import self_attention  # isort: skip
from attnprimer.figures import positional_encoding  # isort: skip
from attnprimer.figures import transformer  # noqa: F401  # isort: skip
from attnprimer.figures import transformer_lengths  # noqa: F401  # isort: skip
from attnprimer.figures import transformer_training  # noqa: F401  # isort: skip
from attnprimer.figures import length_generalisation  # noqa: F401  # isort: skip
from attnprimer.figures import attention_at_scale  # noqa: F401  # isort: skip
from attnprimer.figures import kv_cache  # noqa: F401  # isort: skip
# The architecture diagrams, registered for the chapters that show them.
from attnprimer.figures import rnn_diagrams  # isort: skip
from attnprimer.figures import attention_diagrams  # isort: skip
from attnprimer.figures import scale_diagrams  # isort: skip
from attnprimer.figures import position_diagrams  # isort: skip
from attnprimer.figures import home  # noqa: F401  # isort: skip  (the home page, as the chapter "home")
from attnprimer.figures.mechanisms import (
                                           plot_attention_cost,
                                           plot_attention_patterns,
                                           plot_causal_demo,
)
from attnprimer.figures.plotting import (
                                           draw_attention,
                                           plot_accuracy_curves,
                                           plot_attention,
                                           plot_attention_grid,
                                           plot_length_generalisation,
                                           plot_task_attention,
                                           plot_training,
                                           save_figure,
)
from attnprimer.figures.positional_encoding import (
                                           plot_learned_norms,
                                           plot_rotary_scores,
                                           plot_signal_attention,
                                           plot_sinusoidal,
)
from attnprimer.figures.qkv import (
                                           plot_cosine_vs_dot,
                                           plot_kernel_regression,
                                           plot_own_letter_mass,
                                           plot_score_functions,
                                           plot_score_scaling,
)
from attnprimer.figures.registry import FIGURES, Recipe, render_all
from attnprimer.figures.self_attention import plot_difference_profile
from attnprimer.figures.transformer_heads import plot_heads

CHAPTERS = (rnn_recap, bahdanau, qkv, self_attention, positional_encoding)
"""The chapters' figure modules, in reading order."""
DIAGRAMS = (rnn_diagrams, attention_diagrams, position_diagrams, scale_diagrams)
"""The modules of architecture diagrams, whose recipes name the chapter they serve."""

__all__ = [
    "CHAPTERS",
    "DIAGRAMS",
    "FIGURES",
    "Recipe",
    "draw_attention",
    "plot_accuracy_curves",
    "plot_attention",
    "plot_attention_cost",
    "plot_attention_grid",
    "plot_attention_patterns",
    "plot_causal_demo",
    "plot_cosine_vs_dot",
    "plot_difference_profile",
    "plot_heads",
    "plot_kernel_regression",
    "plot_learned_norms",
    "plot_length_generalisation",
    "plot_own_letter_mass",
    "plot_rotary_scores",
    "plot_score_functions",
    "plot_score_scaling",
    "plot_signal_attention",
    "plot_sinusoidal",
    "plot_task_attention",
    "plot_training",
    "render_all",
    "save_figure",
]
