"""Every figure and table on the site: one module per chapter, and the registry that builds them.

* [`plotting`][attnprimer.site.figures.plotting]: pure ``plot_*`` helpers shared by the chapters,
  and reproducible saving; [`mechanisms`][attnprimer.site.figures.mechanisms] and
  [`encodings`][attnprimer.site.figures.encodings]: pure plots of attention and of position
  encodings on synthetic data; [`tables`][attnprimer.site.figures.tables]: Markdown tables.
* One module per chapter, named by the chapter's slug (underscores for dashes):
  [`rnn_recap`][attnprimer.site.figures.rnn_recap], [`bahdanau`][attnprimer.site.figures.bahdanau],
  [`qkv`][attnprimer.site.figures.qkv], [`self_attention`][attnprimer.site.figures.self_attention],
  [`positional_encoding`][attnprimer.site.figures.positional_encoding],
  [`transformer`][attnprimer.site.figures.transformer],
  [`length_generalisation`][attnprimer.site.figures.length_generalisation],
  [`attention_at_scale`][attnprimer.site.figures.attention_at_scale], and
  [`kv_cache`][attnprimer.site.figures.kv_cache] and
  [`scale_measured`][attnprimer.site.figures.scale_measured] (the key/value cache's and the
  measured parts of the chapter ``attention-at-scale``, their recipes filed under that slug).
  Each holds its chapter's own ``plot_*`` functions and its recipes: functions registered by
  name that fetch trained models from the catalogue
  ([`attnprimer.site.catalogue`][attnprimer.site.catalogue]) and results from the experiments
  ([`attnprimer.site.experiments`][attnprimer.site.experiments]), then draw or tabulate them.
* [`diagrams`][attnprimer.site.figures.diagrams]: the drawing primitives of the architecture
  diagrams (boxes, arrows, labels, one palette);
  [`rnn_diagrams`][attnprimer.site.figures.rnn_diagrams],
  [`attention_diagrams`][attnprimer.site.figures.attention_diagrams],
  [`position_diagrams`][attnprimer.site.figures.position_diagrams] and
  [`scale_diagrams`][attnprimer.site.figures.scale_diagrams] draw the architectures and
  register each diagram for the chapter that shows it (``recipe(..., chapter=...)``).
* [`home`][attnprimer.site.figures.home]: the home page's figures, filed as the chapter ``home``
  (``docs/index.md``).
* [`theme`][attnprimer.site.figures.theme]: the dark page's twin of every figure.
* [`recipes`][attnprimer.site.figures.recipes]: how a module marks a function as an artifact;
  [`registry`][attnprimer.site.figures.registry]: the recipes of the modules it lists, by
  ``<chapter>/<name>``, and [`render_all`][attnprimer.site.figures.registry.render_all], which
  writes ``<chapter>/<name>.svg`` or ``.md``. The docs build hook and ``attnprimer figures``
  (``nox -s figures``) are its two callers, so the site and the files on disk are the same.
"""

from attnprimer.site.figures.curves import (
    plot_accuracy_curves,
    plot_length_generalisation,
    plot_training,
)
from attnprimer.site.figures.mechanisms import (
    plot_attention_cost,
    plot_attention_patterns,
    plot_causal_demo,
)
from attnprimer.site.figures.plotting import (
    draw_attention,
    plot_attention,
    plot_attention_grid,
    plot_task_attention,
    save_figure,
)
from attnprimer.site.figures.positional_encoding import (
    plot_learned_norms,
    plot_rotary_scores,
    plot_signal_attention,
    plot_sinusoidal,
)
from attnprimer.site.figures.qkv import (
    plot_cosine_vs_dot,
    plot_kernel_regression,
    plot_own_letter_mass,
    plot_score_functions,
    plot_score_scaling,
)
from attnprimer.site.figures.recipes import Recipe
from attnprimer.site.figures.registry import FIGURES, render_all
from attnprimer.site.figures.self_attention import plot_difference_profile
from attnprimer.site.figures.transformer_heads import plot_heads

__all__ = [
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
