# %% [markdown]
# # Lab: self-attention
#
# This lab goes with the chapter [Self-attention](../chapters/self-attention.md). You
# will write the three small pieces a multi-head self-attention layer is made of besides
# the attention itself: a causal mask, and the split of the model dimension into heads
# and its merge back. Then you will put them together and match PyTorch's
# `nn.MultiheadAttention` to float32 rounding, and look at the trained difference model's
# self-attention.

# %%
# %matplotlib inline
# %config InlineBackend.figure_formats = ["retina"]
import torch
from torch import nn

from attnprimer import scaled_dot_product_attention, to_blocked_mask
from attnprimer.site import exercises
from attnprimer.site.catalogue import DIFFERENCE_EXAMPLE, site_model
from attnprimer.site.figures import plot_task_attention
from attnprimer.training.train import predict_one

# %% [markdown]
# ## Exercise: a causal mask
#
# In a decoder, position $i$ must not read positions after it: they are the future it is
# being trained to predict. Write `causal_mask(length)`: a boolean (L, L) tensor whose
# row $i$ says which keys query $i$ may read. **True means "may attend"**, the
# convention of attnprimer and of `F.scaled_dot_product_attention`.

# %% tags=["exercise"]
def causal_mask(length):
    """Bool (L, L): True where query i may read key j."""
    raise NotImplementedError  # your code here


# %% tags=["solution"]
def causal_mask(length):
    """Bool (L, L): True where query i may read key j."""
    ones = torch.ones(length, length, dtype=torch.bool)
    return torch.tril(ones)  # keys 0..i: on and below the diagonal


# %%
exercises.check("causal_mask", causal_mask)

# %% [markdown]
# Causality you can test: change the inputs from position 6 on, and the outputs at
# positions 0 to 5 of a causal self-attention do not move at all.

# %%
torch.manual_seed(0)
x = torch.randn(1, 10, 16)  # (B, L, D)
changed = x.clone()
changed[:, 6:] = torch.randn(1, 4, 16)  # a different future
mask = causal_mask(10)
before, _ = scaled_dot_product_attention(x, x, x, mask)
after, _ = scaled_dot_product_attention(changed, changed, changed, mask)
moved = (after - before).abs().amax(dim=-1)[0]  # (L,) the largest change
print("largest change of each output:")
print([f"{m:.2g}" for m in moved.tolist()])

# %% [markdown]
# `nn.MultiheadAttention` reads a boolean mask the other way round: True there means
# *blocked*. Handing it our mask unconverted would let each position see only the future,
# and leave the last one nothing to read (its weights come out NaN).
# `attnprimer.to_blocked_mask` converts (it is a logical not):

# %%
print(to_blocked_mask(causal_mask(4)).int())

# %% [markdown]
# ## Exercise: splitting into heads, and merging back
#
# Multi-head attention runs $H$ attentions side by side, each on its own slice of the
# model dimension: head $h$ gets columns $h \cdot d_h$ to $(h+1) \cdot d_h - 1$, with
# $d_h = D / H$. Write `split_heads`, from (B, L, D) to (B, H, L, $d_h$), so that the
# attention can treat (B, H) as batch dimensions, and `merge_heads`, its inverse.
#
# A reshape alone cannot do it: `x.reshape(B, H, L, Dh)` would regroup positions and
# columns together. Reshape to (B, L, H, $d_h$) first, then swap two dimensions.

# %% tags=["exercise"]
def split_heads(x, num_heads):
    """(B, L, D) -> (B, H, L, Dh)."""
    raise NotImplementedError  # your code here


def merge_heads(x):
    """(B, H, L, Dh) -> (B, L, D)."""
    raise NotImplementedError  # your code here


# %% tags=["solution"]
def split_heads(x, num_heads):
    """(B, L, D) -> (B, H, L, Dh)."""
    batch, length, dim = x.shape
    head_dim = dim // num_heads
    x = x.reshape(batch, length, num_heads, head_dim)  # (B, L, H, Dh)
    return x.transpose(1, 2)  # (B, H, L, Dh)


def merge_heads(x):
    """(B, H, L, Dh) -> (B, L, D)."""
    batch, heads, length, head_dim = x.shape
    x = x.transpose(1, 2)  # (B, L, H, Dh)
    return x.reshape(batch, length, heads * head_dim)  # (B, L, D)


# %%
exercises.check("split_heads", split_heads)

# %%
exercises.check("merge_heads", merge_heads)

# %% [markdown]
# ## Your multi-head attention against PyTorch's
#
# With those pieces, multi-head self-attention is four linear maps around the attention
# you already know: project to queries, keys and values, split each into heads, attend
# in every head at once, merge, and project the result. Take the weights of an
# `nn.MultiheadAttention` (it stores the three input projections stacked in one
# `in_proj_weight`) and compare, causal mask included:

# %%
def multi_head_self_attention(x, torch_layer, mask=None):
    """x (B, L, D) through the weights of an nn.MultiheadAttention."""
    heads = torch_layer.num_heads
    w_q, w_k, w_v = torch_layer.in_proj_weight.chunk(3)  # 3 x (D, D)
    b_q, b_k, b_v = torch_layer.in_proj_bias.chunk(3)  # 3 x (D,)
    query = split_heads(x @ w_q.T + b_q, heads)  # (B, H, L, Dh)
    key = split_heads(x @ w_k.T + b_k, heads)
    value = split_heads(x @ w_v.T + b_v, heads)
    context, weights = scaled_dot_product_attention(query, key, value, mask)
    merged = merge_heads(context)  # (B, L, D)
    output = torch_layer.out_proj(merged)  # (B, L, D)
    return output, weights  # weights: (B, H, L, L)


torch.manual_seed(0)
layer = nn.MultiheadAttention(embed_dim=16, num_heads=4, batch_first=True)
x = torch.randn(2, 6, 16)
mask = causal_mask(6)
with torch.no_grad():
    mine, my_weights = multi_head_self_attention(x, layer, mask)
    theirs, their_weights = layer(x, x, x, attn_mask=to_blocked_mask(mask),
                                  average_attn_weights=False)
torch.testing.assert_close(mine, theirs)
torch.testing.assert_close(my_weights, their_weights)
print(f"output {tuple(mine.shape)} and weights {tuple(my_weights.shape)}: "
      f"equal to nn.MultiheadAttention's")

# %% [markdown]
# ## The trained difference model
#
# The difference model counts A, B and C like the counting model, and adds a fourth
# output step, $|\#A - \#B|$. Its output steps attend to each other through one
# self-attention layer. Load it (on your machine it trains once, in about 20 seconds,
# and is cached) and look at both attentions on the chapter's example; change `text`
# (up to 10 letters from A, B, C and spaces) and run the cell again.

# %%
trained = site_model("difference", self_att=True, seed=0).trained()
task, model = trained.task, trained.model
text = DIFFERENCE_EXAMPLE
inputs = task.encode(text)
prediction, attention = predict_one(model, inputs)
plot_task_attention(task, inputs, prediction, attention["encoder-decoder"],
                    attention["self"])

# %% [markdown]
# The count steps attend mostly to themselves. The difference step looks at the step of
# the **larger** of the two counts, and at itself; the chapter shows, by blocking and
# swapping those weights, that it needs the larger count, and that its weight on itself
# matters little.
#
# ## Going further
#
# * Make your mask a *local* one: query $i$ may read keys $j$ with $|i - j| \le w$.
#   Check it against `attnprimer.local_mask(length, window=w)`.
# * In `multi_head_self_attention`, pass `mask` of shape (L, L) while the scores are
#   (B, H, L, L). Why does that work, and what shape would a padding mask need?
