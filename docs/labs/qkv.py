# %% [markdown]
# # Lab: queries, keys and values
#
# This lab goes with the chapter [Queries, keys and values](../chapters/qkv.md). You will
# write scaled dot-product attention yourself, check it against attnprimer's and PyTorch's,
# see for yourself why the scores are divided by $\sqrt{D_k}$, and then look inside the
# trained counting model, whose queries learned to ask for one letter each.
#
# Every exercise has the same shape: a cell with a stub for you to fill in, a folded
# solution, and a cell that checks your function. The check runs it on a few small cases
# and compares every output with the reference; when they disagree it tells you which
# case, which output, which entries and by how much.

# %%
# %matplotlib inline
# %config InlineBackend.figure_formats = ["retina"]
import math

import torch
from torch.nn import functional as F

from attnprimer.site import exercises
from attnprimer.site.catalogue import COUNTING_EXAMPLE, site_model
from attnprimer.site.figures import plot_task_attention
from attnprimer.training.train import predict_one

# %% [markdown]
# ## Exercise: scaled dot-product attention
#
# Given queries $Q$ of shape (..., L, $D_k$), keys $K$ (..., S, $D_k$) and values $V$
# (..., S, $d_v$), return the context and the weights
#
# $$\mathrm{weights} = \mathrm{softmax}\left(\frac{Q K^\top}{\sqrt{D_k}}\right), \qquad
# \mathrm{context} = \mathrm{weights}\; V .$$
#
# The `...` stands for any leading batch dimensions (a batch, heads), so transpose
# only the last two dimensions of the keys. `mask` is boolean, broadcastable to
# (..., L, S), and **True means "may attend"** (the convention of
# `F.scaled_dot_product_attention`): a score where the mask is False must get weight
# exactly 0. The checks never mask a whole row.

# %% tags=["exercise"]
def scaled_dot_product_attention(query, key, value, mask=None):
    """Returns context (..., L, Dv) and weights (..., L, S)."""
    raise NotImplementedError  # your code here


# %% tags=["solution"]
def scaled_dot_product_attention(query, key, value, mask=None):
    """Returns context (..., L, Dv) and weights (..., L, S)."""
    scale = 1 / math.sqrt(query.shape[-1])
    scores = query @ key.transpose(-2, -1) * scale  # (..., L, S)
    if mask is not None:
        # False = may not attend: -inf there, so its weight is exactly 0
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)  # over the keys (rows sum to 1)
    return weights @ value, weights  # (..., L, Dv), (..., L, S)


# %%
exercises.check("scaled_dot_product_attention",
                scaled_dot_product_attention)

# %% [markdown]
# The check compared your function with `attnprimer.scaled_dot_product_attention`. It
# should also agree with PyTorch's fused kernel, which returns the context only:

# %%
torch.manual_seed(0)
query, key = torch.randn(2, 4, 8), torch.randn(2, 6, 8)
value = torch.randn(2, 6, 3)
mask = torch.rand(4, 6) > 0.3
mask[:, 0] = True  # every query may read at least one key
context, weights = scaled_dot_product_attention(query, key, value, mask)
fused = F.scaled_dot_product_attention(query, key, value, mask)
torch.testing.assert_close(context, fused)
print("matches F.scaled_dot_product_attention")
print("largest weight where the mask is False:",
      weights[..., ~mask].max().item())

# %% [markdown]
# ## What a mistake looks like
#
# Here is the most common slip, forgetting the scale, and what the check says about it
# (`diagnose` returns the message that `check` would raise):

# %%
def unscaled_attention(query, key, value, mask=None):
    scores = query @ key.transpose(-2, -1)  # no division by sqrt(Dk)
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    return weights @ value, weights


print(exercises.diagnose("scaled_dot_product_attention",
                         unscaled_attention))

# %% [markdown]
# ## Why divide by the square root of D_k?
#
# If the entries of a query and a key are independent with mean 0 and variance 1, their
# dot product is a sum of $D_k$ such products: its variance is $D_k$. The wider the
# vectors, the further apart the scores, and a softmax of scores far apart puts nearly all
# the weight on one key, where the softmax's gradient shrinks (the chapter measures the
# gradient; this cell measures the weights): the average largest weight of a query over 16
# random keys, with and without the scale.

# %%
def mean_max_weight(scores):
    """The average, over queries, of the largest weight."""
    return torch.softmax(scores, dim=-1).max(dim=-1).values.mean()


print("   D_k   score std   max weight: unscaled   scaled")
for dim in (4, 16, 64, 256, 1024):
    q, k = torch.randn(1000, 1, dim), torch.randn(1000, 16, dim)
    scores = (q @ k.transpose(-2, -1)).squeeze(1)  # (1000, 16)
    unscaled = mean_max_weight(scores)
    scaled = mean_max_weight(scores / math.sqrt(dim))
    print(f"{dim:6} {scores.std():11.1f} {unscaled:22.3f} {scaled:8.3f}")

# %% [markdown]
# Without the scale the largest weight heads for 1 as $D_k$ grows: attention becomes a
# nearly hard lookup. The scores' spread grows as $\sqrt{D_k}$
# (the second column); divided by $\sqrt{D_k}$ it stays near 1 whatever the width, and
# the weights stay soft.
#
# ## Inside the trained counting model
#
# The counting model has one learned query per letter; each input token becomes a key
# (and its value). Load the trained model (on your machine this trains it once, in
# about 15 seconds, and caches it) and score every query against every token's key:

# %%
trained = site_model("counting", seed=0).trained()
task, model = trained.task, trained.model
tokens = torch.arange(len(task.alphabet))  # the blank, then A, B, C
one_hot = F.one_hot(tokens, model.num_tokens).float()  # (V+1, V+1)
with torch.no_grad():
    keys = model.key_value(one_hot)  # (V+1, D)
    dim = keys.shape[-1]
    scores = model.queries @ keys.T / math.sqrt(dim)  # (T, V+1)
print("q . k / sqrt(D): a row per query, a column per token")
names = ["blank" if char == " " else char for char in task.alphabet]
print(" " * 8 + "".join(f"{name:>8}" for name in names))
for letter, row in zip(task.output_labels(), scores, strict=True):
    print(f"query {letter}" + "".join(f"{value:8.2f}" for value in row))

# %% [markdown]
# Each query scores its own letter above every other token, so its softmax gives every
# position holding that letter more weight than any other position; how much of the total
# they get together grows with their number, and the context it reads says how many there
# were. Here is the attention on the example of the chapter; change `text` (up to 10
# letters from A, B, C and spaces) and run the cell again.

# %%
text = COUNTING_EXAMPLE
inputs = task.encode(text)
prediction, attention = predict_one(model, inputs)
plot_task_attention(task, inputs, prediction, attention["encoder-decoder"])

# %% [markdown]
# ## Going further
#
# * Give your function a `scale` argument and check that `scale=1 / D_k` makes the weights
#   *less* peaked than the default: which would you choose for very wide heads?
# * In the counting model, a letter that occurs once gets only part of its query's weight,
#   and a letter that occurs five times gets more of it, shared five ways. How can the
#   classifier still read a count from an average? (The chapter answers this; try a few
#   inputs first.)
