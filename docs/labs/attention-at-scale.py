# %% [markdown]
# # Lab: attention at scale
#
# This lab goes with the chapter [Attention at scale](../chapters/attention-at-scale.md).
# You will write one step of the **online softmax**, the update that lets attention read
# its keys a block at a time, fold a row of scores through it, and then use the
# package's tiled attention to see what a mask that removes whole blocks saves.

# %%
# %matplotlib inline
# %config InlineBackend.figure_formats = ["retina"]
import time

import torch
from torch.nn import functional as F

from attnprimer.block_mask import BlockMask
from attnprimer.site import exercises
from attnprimer.tiled import tiled_attention

# %% [markdown]
# ## Exercise: one step of the online softmax
#
# Attention averages the values $v_j$ with the weights $\mathrm{softmax}(x)_j$. Reading
# the scores $x_j$ a block at a time, keep three things per row (per query):
#
# * `maximum`, $m$: the largest score read so far (shape (R, 1), $-\infty$ before the
#   first block);
# * `normaliser`, $s = \sum_j e^{x_j - m}$ over the keys read (R, 1);
# * `total`, $t = \sum_j e^{x_j - m}\, v_j$ over the keys read (R, Dv).
#
# When a block of scores (R, block) and its values (block, Dv) arrive, the maximum may
# grow to $m_{new}$. Everything kept so far was shifted by the old maximum, so it must be
# multiplied by $e^{m_{old} - m_{new}}$ (at most 1) before the block's own terms, shifted
# by $m_{new}$, are added. After the last block, $t / s$ is the softmax-weighted average.
#
# Write `online_step(maximum, normaliser, total, scores, values)` returning the new
# `(maximum, normaliser, total)`. `torch.maximum` takes the elementwise larger of two
# tensors; `scores.amax(-1, keepdim=True)` is each row's largest score.

# %% tags=["exercise"]
def online_step(maximum, normaliser, total, scores, values):
    """The running (maximum, normaliser, total) after one more block."""
    raise NotImplementedError  # your code here


# %% tags=["solution"]
def online_step(maximum, normaliser, total, scores, values):
    """The running (maximum, normaliser, total) after one more block."""
    block_max = scores.amax(-1, keepdim=True)  # (R, 1)
    new_maximum = torch.maximum(maximum, block_max)  # (R, 1)
    rescale = (maximum - new_maximum).exp()  # (R, 1), at most 1
    exponentials = (scores - new_maximum).exp()  # (R, block)
    block_sum = exponentials.sum(-1, keepdim=True)  # (R, 1)
    normaliser = normaliser * rescale + block_sum
    total = total * rescale + exponentials @ values  # (R, Dv)
    return new_maximum, normaliser, total


# %%
exercises.check("online_step", online_step)

# %% [markdown]
# The mistake everyone makes once is to forget the rescale: add the new block's terms to
# sums that were shifted by a different maximum. The check recognises it:

# %%
def forgetful_step(maximum, normaliser, total, scores, values):
    new_maximum = torch.maximum(maximum, scores.amax(-1, keepdim=True))
    exponentials = (scores - new_maximum).exp()
    block_sum = exponentials.sum(-1, keepdim=True)
    return (new_maximum, normaliser + block_sum,
            total + exponentials @ values)


print(exercises.diagnose("online_step", forgetful_step))

# %% [markdown]
# Now fold a whole row through your step, four keys at a time, and compare with the
# softmax of the whole row. The scores are large on purpose: $e^{1000}$ overflows, but
# nothing here ever exponentiates a positive number.

# %%
generator = torch.Generator().manual_seed(0)
scores = 1000 + 5 * torch.randn(3, 22, generator=generator)  # (R, S)
values = torch.randn(22, 2, generator=generator)  # (S, Dv)
state = (torch.full((3, 1), -torch.inf), torch.zeros(3, 1),
         torch.zeros(3, 2))  # nothing read yet
for begin in range(0, 22, 4):
    end = begin + 4
    state = online_step(*state, scores[:, begin:end], values[begin:end])
maximum, normaliser, total = state
print("online:", total / normaliser)
print("whole row:", torch.softmax(scores, -1) @ values)

# %% [markdown]
# ## What skipping blocks saves
#
# The package's [`tiled_attention`](../reference/tiled.md) runs the same step (the
# package's own `online_step`) over blocks of queries and keys, and skips the blocks that a
# mask removes entirely. It gives the same outputs as PyTorch's fused kernel (the test suite
# checks the gradients too):

# %%
query, key, value = (torch.randn(1, 2, 300, 16, generator=generator)
                     for _ in range(3))  # (B, H, L, Dh)
window = 32
ones = torch.ones(300, 300, dtype=torch.bool)
mask = ones.tril() & ~ones.tril(-window - 1)  # causal, i - j <= 32
tiled = tiled_attention(query, key, value, causal=True, window=window,
                        block_size=32)
fused = F.scaled_dot_product_attention(query, key, value, attn_mask=mask)
print("largest difference:", float((tiled - fused).abs().max()))

# %% [markdown]
# How many blocks does it compute? With a causal window reaching $w$ keys back and blocks
# of $w$, each query block needs its own diagonal block and the one before: the count grows
# linearly with the length, where the full square grows with its square.

# %%
sliding = BlockMask(causal=True, window=256)
for length in (1024, 2048, 4096, 8192):
    visited = len(sliding.visited(length, length, 256))
    print(f"L = {length:5}: {visited:3} blocks of {(length // 256) ** 2:5}")

# %% [markdown]
# And the time should follow the blocks. (Your numbers depend on your machine; these two runs
# are short on purpose. One thread, as in the chapter: the tiled pass is a Python loop of
# small operations, and threads that wait for each other at every one of them blur the
# picture.)

# %%
torch.set_num_threads(1)
tiled_attention(query, key, value, causal=True, window=window)  # warm-up
for length in (1024, 4096):
    q, k, v = (torch.randn(1, 2, length, 64, generator=generator)
               for _ in range(3))
    started = time.perf_counter()
    tiled_attention(q, k, v, causal=True, window=256, block_size=256)
    elapsed = time.perf_counter() - started
    print(f"L = {length}: {1e3 * elapsed:.0f} ms")

# %% [markdown]
# Try it: time the same calls without the window (`tiled_attention(q, k, v, causal=True,
# block_size=256)`), and guess the ratio between the two lengths before you run it.
