# %% [markdown]
# # Lab: attention over images
#
# This lab goes with the chapter [Attention over images](../chapters/attention-over-images.md).
# You will write `patchify`, which turns an image into the sequence of patches attention
# reads, check it, put a canvas of real handwritten digits back together from its patches,
# and then blank the patches the trained patch reader looks at, to see its answer change.

# %%
# %matplotlib inline
# %config InlineBackend.figure_formats = ["retina"]
import torch

from attnprimer.patches import unpatchify
from attnprimer.site import exercises
from attnprimer.site.catalogue import site_model
from attnprimer.site.experiments.attention_over_images import read, top_patches
from attnprimer.training.train import held_out_generator

# %% [markdown]
# ## Exercise: patchify
#
# An image of $H_i \times W_i$ pixels, cut into $P \times P$ patches, has
# $R = H_i / P$ rows and $Q = W_i / P$ columns of patches. Number them in *row-major*
# order: along the top row of patches first, so patch $r Q + q$ is the one in row $r$,
# column $q$. Flatten each patch row by row.
#
# Write `patchify(images, patch)`: images (B, Hi, Wi) to patches (B, N, P*P), N = R Q.
# One way: `reshape` the image to (B, R, P, Q, P), which splits each axis into "which
# patch" and "where inside it", `permute` the axes so that the two "which patch" axes come
# first, then `reshape` to (B, N, P*P).

# %% tags=["exercise"]
def patchify(images, patch):
    """Images (B, Hi, Wi) -> patches (B, N, P*P), row-major, each flattened row by row."""
    raise NotImplementedError  # your code here


# %% tags=["solution"]
def patchify(images, patch):
    """Images (B, Hi, Wi) -> patches (B, N, P*P), row-major, each flattened row by row."""
    B, height, width = images.shape
    rows, cols = height // patch, width // patch
    grid = images.reshape(B, rows, patch, cols, patch)  # (B, R, P, Q, P)
    grid = grid.permute(0, 1, 3, 2, 4)  # (B, R, Q, P, P)
    return grid.reshape(B, rows * cols, patch * patch)  # (B, N, P*P)


# %%
exercises.check("patchify", patchify)

# %% [markdown]
# The tempting shortcut is one reshape, straight to (B, N, P*P). It runs, and it is wrong:
# it takes P*P pixels in a row of the image, which run across several patches. The check
# recognises it:

# %%
def one_reshape(images, patch):
    return images.reshape(images.shape[0], -1, patch * patch)


print(exercises.diagnose("patchify", one_reshape))

# %% [markdown]
# ## A canvas, cut and put back
#
# The chapter's canvases are 16 x 40 pixels with two to four digits. Your `patchify` turns
# one into 40 patches of 16 pixels; the package's `unpatchify` puts them back.

# %%
trained = site_model("digit-reading", seed=0).trained()
task = trained.task
layout = task.layout(8, held_out_generator(7))
canvases = task.paint(layout)  # (8, 16, 40), held-out images only
patches = patchify(canvases, task.patch)
print("patches:", tuple(patches.shape))
print("back to the canvas exactly:", torch.equal(unpatchify(patches, 16, 40), canvases))

# %% [markdown]
# ## Blank what the reader looks at
#
# Read the canvases, then blank (set to 0, the background) the patches that hold 80 % of the
# first step's weight, and read again. Compare the first digit before and after, and with a
# control that blanks the same number of patches chosen at random.

# %%
predictions, maps = read(trained, canvases)
attended = top_patches(maps[:, 0])  # (B, N): the patches holding 80 % of step 0's weight
blanked = patchify(canvases, task.patch).masked_fill(attended[..., None], 0.0)
after, _ = read(trained, unpatchify(blanked, 16, 40))

generator = torch.Generator().manual_seed(0)
random_pick = torch.rand(attended.shape, generator=generator).argsort(-1).argsort(-1)
control = random_pick < attended.sum(-1, keepdim=True)  # as many patches, at random
controlled = patchify(canvases, task.patch).masked_fill(control[..., None], 0.0)
after_control, _ = read(trained, unpatchify(controlled, 16, 40))

for row in range(len(canvases)):
    print(f"digits {layout.label[row, :int(layout.count[row])].tolist()}: "
          f"read {task.describe_output(predictions[row]):6}  first digit after blanking "
          f"{int(attended[row].sum())} attended patches: {int(after[row, 0])}; "
          f"after {int(control[row].sum())} random ones: {int(after_control[row, 0])}")

# %% [markdown]
# Try blanking a smaller share of the weight (`top_patches(maps[:, 0], 0.5)`), or the
# patches the *last* digit step looks at. The chapter's table does this on 2,000 canvases
# for each trained model.
