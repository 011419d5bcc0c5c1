# %% [markdown]
# # Lab: positional encoding
#
# This lab goes with the chapter [Positional encoding](../chapters/positional-encoding.md).
# You will write the sinusoidal encoding of Vaswani et al. (2017), check it, verify the
# property that makes it useful (the dot product of two positions depends only on how
# far apart they are), and then shuffle inputs under two trained signal models: one
# that has no position information and one that learned its own.

# %%
# %matplotlib inline
# %config InlineBackend.figure_formats = ["retina"]
import torch
from matplotlib.figure import Figure

from attnprimer.site import exercises
from attnprimer.site.catalogue import SIGNAL_EXAMPLE, site_model
from attnprimer.training.train import predict_one

# %% [markdown]
# ## Exercise: the sinusoidal encoding
#
# Position $p$ gets a vector of $D$ numbers ($D$ even). Dimensions $2i$ and $2i + 1$
# hold the sine and the cosine of the same angle,
#
# $$PE_{p,\,2i} = \sin\left(\frac{p}{10000^{2i/D}}\right), \qquad
# PE_{p,\,2i+1} = \cos\left(\frac{p}{10000^{2i/D}}\right),$$
#
# for $i = 0, \dots, D/2 - 1$: a pair of clock hands per $i$, the first turning one
# radian per position and each next one slower. Write `sinusoidal_encoding(length, dim)`,
# returning a float32 tensor (L, D) with one row per position. Hint: compute the
# angles as an (L, D/2) table, then interleave sines and cosines with `torch.stack`
# on a new last dimension and `.flatten(-2)`.

# %% tags=["exercise"]
def sinusoidal_encoding(length, dim):
    """(L, D): row p is the encoding of position p."""
    raise NotImplementedError  # your code here


# %% tags=["solution"]
def sinusoidal_encoding(length, dim):
    """(L, D): row p is the encoding of position p."""
    positions = torch.arange(length, dtype=torch.float64)[:, None]  # (L, 1)
    pairs = torch.arange(0, dim, 2, dtype=torch.float64)  # 2i: (D/2,)
    speeds = 10_000.0 ** (-pairs / dim)  # radians per position
    angles = positions * speeds  # (L, D/2)
    pairs = [angles.sin(), angles.cos()]
    encoding = torch.stack(pairs, dim=-1)  # (L, D/2, 2)
    return encoding.flatten(-2).float()  # (L, D): sin, cos, sin, cos, ...


# %%
exercises.check("sinusoidal_encoding", sinusoidal_encoding)

# %% [markdown]
# Here is your encoding for 64 positions and 64 dimensions. The first pairs change
# quickly from one position to the next; the last ones barely move, so together they
# tell apart positions near and far.

# %%
encoding = sinusoidal_encoding(64, 64)
figure = Figure(figsize=(6.5, 3.6), layout="constrained")
axes = figure.add_subplot()
image = axes.imshow(encoding.T.numpy(), cmap="RdBu_r", vmin=-1, vmax=1,
                    aspect="auto", origin="lower")
axes.set_xlabel("position p")
axes.set_ylabel("dimension")
figure.colorbar(image, ax=axes, label="value")
figure

# %% [markdown]
# ## Dot products depend on the offset only
#
# For one pair, $\sin a \sin b + \cos a \cos b = \cos(a - b)$: the dot product of two
# positions' encodings is a sum of cosines of their *difference*. So position 3 against
# position 8 scores exactly like position 40 against position 45. Check it on the whole
# table: along every diagonal of the (L, L) matrix of dot products, the value is constant.

# %%
gram = encoding @ encoding.T  # (L, L): every position against every other
worst = max((gram.diagonal(offset) - gram.diagonal(offset)[0]).abs().max()
            for offset in range(-63, 64))
print(f"largest departure from the start of its diagonal: {worst:.1e}")
print(f"position 3 . position 8 = {gram[3, 8]:.4f}; "
      f"position 40 . position 45 = {gram[40, 45]:.4f}")

# %% [markdown]
# ## A layout the check rejects
#
# Some libraries put all the sines in the first half of the row and all the cosines in
# the second. That is the same information in another order, and it has the same offset
# property. The check still rejects it: the reference, and the models in this primer, use
# the interleaved layout (the check's message names it), and a model trained with one
# layout would read the other as a different encoding (not tested here).

# %%
def halves_encoding(length, dim):
    positions = torch.arange(length, dtype=torch.float64)[:, None]
    pairs = torch.arange(0, dim, 2, dtype=torch.float64)
    speeds = 10_000.0 ** (-pairs / dim)
    angles = positions * speeds  # (L, D/2)
    return torch.cat([angles.sin(), angles.cos()], dim=-1).float()  # (L, D)


print(exercises.diagnose("sinusoidal_encoding", halves_encoding))

# %% [markdown]
# ## Shuffling under trained models
#
# The signal task asks how many more times the *first* letter occurs in the 10 letters
# after it. Take the chapter's example and rearrange its letters so that each of A, B
# and C comes first in turn: the letters are the same, the answers are not all the same.
# Ask the model without any position encoding and the model with a learned one (on your
# machine each trains once, in about 20 seconds, and is cached).

# %%
none = site_model("signal", pos_enc="none", seed=0).trained()
learned = site_model("signal", pos_enc="learned", seed=0).trained()
task = none.task

generator = torch.Generator().manual_seed(0)
print(f"{'input':<13} {'answer':>6} {'no encoding':>12} {'learned':>8}")
blind_answers = set()
for first in "ABC":
    rest = list(SIGNAL_EXAMPLE)
    rest.remove(first)
    order = torch.randperm(len(rest), generator=generator).tolist()
    # the same letters, with `first` first
    text = first + "".join(rest[i] for i in order)
    answer = text[1:].count(first)
    blind, _ = predict_one(none.model, task.encode(text))
    seeing, _ = predict_one(learned.model, task.encode(text))
    blind_answers.add(int(blind))
    print(f"{text:<13} {answer:>6} {int(blind):>12} {int(seeing):>8}")
    assert int(seeing) == answer  # the learned encoding tells them apart
# Without positions the model sees only the multiset of letters: one answer for all.
assert len(blind_answers) == 1

# %% [markdown]
# The model without an encoding gives the same answer to all three inputs: it sees a
# bag of letters and cannot know which came first, so it can only guess (the chapter
# computes the best any such model can do). The model with a learned encoding tells them
# apart and answers each one right (seed 0; the chapter tests every seed on 10,000 inputs).
#
# ## Going further
#
# * Add your encoding to random token embeddings of a length-10 sequence and pass them
#   through `attnprimer.scaled_dot_product_attention` before and after shuffling the
#   positions. Is the output still just shuffled?
# * Rotary encoding rotates queries and keys instead of adding a vector. Use
#   `attnprimer.positional.apply_rotary` to check that the score of a query at position
#   $m$ and a key at $n$ depends only on $n - m$.
