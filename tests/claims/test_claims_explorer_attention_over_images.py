"""The digit-reading explorer (``docs/explorer/attention-over-images.md``): its export of the
site's digit reader, and the claims the page makes about that model.

The browser side (that the page computes what PyTorch computes) is tested on the built site, in
``tests/site/test_explorer_attention_over_images.py``; the export's mechanics on tiny models in
``tests/test_explorer_images.py``.
"""

from __future__ import annotations

import pytest
import torch

from attnprimer.site.experiments.attention_over_images import BLANKED_WEIGHT, read, top_patches
from attnprimer.site.explorer.export import decode_array, explorer_json
from attnprimer.site.explorer.families import HELD_OUT_SAMPLES
from attnprimer.site.explorer.images import (
    blank_patches,
    decode_canvas,
    images_data,
    images_model,
)
from attnprimer.site.figures.attention_over_images import example_canvas
from attnprimer.tasks.digit_reading import END
from attnprimer.training.model_cache import cached_evaluation


@pytest.fixture(scope="module")
def trained(site_models):
    return site_models(images_model())


@pytest.fixture(scope="module")
def data(trained):
    data = images_data(trained, held_out=False)
    result = cached_evaluation(trained, samples=HELD_OUT_SAMPLES)  # what the build exports
    data["reader"]["held_out"] = {"exact_match": result.exact_match, "samples": result.samples,
                                  "seed": result.seed}
    return data


def test_the_page_runs_seed_0_of_the_chapters_reader(trained):
    from attnprimer.site.figures.attention_over_images import reader_models

    assert images_model().config.seed == 0
    assert trained.model.state_dict().keys() == reader_models()[0].model.state_dict().keys()
    assert all(torch.equal(value, reader_models()[0].model.state_dict()[name])
               for name, value in trained.model.state_dict().items())


def test_every_parameter_goes_out_exactly(trained, data):
    state = trained.model.state_dict()
    assert set(data["reader"]["weights"]) == set(state)
    for name, entry in data["reader"]["weights"].items():
        assert torch.equal(decode_array(entry), state[name]), name


def test_the_file_is_less_than_half_a_megabyte(data):
    """The page says "less than half a megabyte"; the explorer's budget per page is 1 MB."""
    size = len(explorer_json(data))
    assert 300_000 < size < 500_000, size


def test_the_page_opens_on_the_chapters_canvas_and_reads_it_right(trained, data):
    canvas, _ = example_canvas(trained)
    assert torch.equal(decode_canvas(data["example"]["canvas"], 16, 40), canvas)
    assert data["example"]["digits"] == [7, 7, 2, 1]  # the chapter's figure of the maps
    predictions, _ = read(trained, canvas[None])
    assert predictions[0].tolist() == [7, 7, 2, 1, END]


def test_claim_blanking_where_step_1_looks_drops_the_second_seven(trained):
    """Things to try: the three patches holding 80 % of step 1's weight, blanked, make the
    model write 7 2 1 and end."""
    canvas, layout = example_canvas(trained)
    _, weights = read(trained, canvas[None])  # (1, T, N)
    chosen = top_patches(weights[:, 1])  # (1, N)
    assert int(chosen.sum()) == 3 and BLANKED_WEIGHT == 0.8
    assert weights[0, 1][chosen[0]].sum() >= 0.8
    # the patches lie on the second 7's square (columns 13-20, rows 0-7)
    rows, cols = chosen[0].nonzero()[:, 0] // 10, chosen[0].nonzero()[:, 0] % 10
    x, y = int(layout.x[0, 1]), int(layout.y[0, 1])
    assert ((cols * 4 + 4 > x) & (cols * 4 < x + 8) & (rows * 4 + 4 > y) & (rows * 4 < y + 8)).all()
    blanked, _ = read(trained, blank_patches(canvas[None], chosen, 4))
    assert blanked[0, :4].tolist() == [7, 2, 1, END]


def test_claim_blanking_an_empty_patch_changes_nothing(trained):
    canvas, _ = example_canvas(trained)
    empty = (canvas.reshape(4, 4, 10, 4).amax(dim=(1, 3)) == 0).flatten()  # (N,)
    assert empty.any()
    blanked = blank_patches(canvas[None], empty[None], 4)
    assert torch.equal(blanked[0], canvas)
