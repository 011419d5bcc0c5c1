"""The figures and tables of the chapter "Self-attention" where tokens attend to tokens: the
worked example through small integer projections, and the trained partners models.
"""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure

from attnprimer.site.catalogue import PARTNERS_VARIANTS, site_model
from attnprimer.site.experiments.partners import cached_reading, partners_models
from attnprimer.site.experiments.worked_example import self_attention_example
from attnprimer.site.figures.plotting import draw_attention, weight_colorbar
from attnprimer.site.figures.recipes import recipe
from attnprimer.site.figures.tables import markdown_table, mean_range
from attnprimer.site.figures.worked_example import projections_table
from attnprimer.training.train import predict_one

CHAPTER = "self-attention"
PARTNERS_EXAMPLE = "D3 A7 C0 B2 E1 F5 H8 G4"
"""The held-out-style example the heatmap shows: A-B, C-D, E-F and G-H are partners."""


@recipe("worked_projections", "the three tokens through integer W_q, W_k, W_v, every number",
        chapter=CHAPTER)
def worked_projections() -> str:
    return projections_table(self_attention_example(projections=True),
                             self_attention_example(projections=False))


@recipe("partners_table", "accuracy and attention of the partners models, three seeds each",
        chapter=CHAPTER)
def partners_table() -> str:
    rows = []
    for variant in PARTNERS_VARIANTS:
        readings = [cached_reading(trained) for trained in partners_models(variant)]
        rows.append([variant, *(mean_range([getattr(r, name) for r in readings])
                                for name in ("accuracy", "weight_on_partner", "weight_on_self",
                                             "follows_partner"))])
    return markdown_table(
        ["self-attention", "tokens right (%)", "weight on partner (%)", "weight on itself (%)",
         "answer follows a changed partner (%)"],
        rows, align="lrrrr",
        caption="Held-out sequences, 4,000 of them; mean over three seeds, then the lowest and "
                "highest. Chance is 10 %. The last column changes the partner's digit and asks "
                "whether the answer becomes the new digit.")


@recipe("partners_heatmap", "where each token looks, with and without W_q, W_k, W_v",
        chapter=CHAPTER)
def partners_heatmap() -> Figure:
    figure = Figure(figsize=(9.6, 4.4), layout="constrained")
    grid = np.atleast_1d(figure.subplots(1, len(PARTNERS_VARIANTS)))
    image = None
    for axes, (variant, settings) in zip(grid, PARTNERS_VARIANTS.items(), strict=True):
        trained = site_model("partners", **settings).trained()
        tokens = trained.task.encode(PARTNERS_EXAMPLE)
        prediction, attention = predict_one(trained.model, tokens)
        labels = PARTNERS_EXAMPLE.split()
        rows = [f"{label} → {int(answer)}" for label, answer in zip(labels, prediction,
                                                                     strict=True)]
        image = draw_attention(axes, attention["self-attention"], rows, labels)
        axes.set_title(variant, fontsize=10)
        axes.set_xlabel("token looked at (key)")
        axes.set_ylabel("token looking (query) → its answer")
    weight_colorbar(figure, image, list(grid))
    return figure
