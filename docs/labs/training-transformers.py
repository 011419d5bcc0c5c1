# %% [markdown]
# # Lab: training the Transformer
#
# This lab goes with the chapter [Training the Transformer](../chapters/training-transformers.md).
# You will write the forward pass of a pre-LN encoder block from its four modules, see
# what the check says of the post-LN block and of a block without residual connections,
# and compute, by sampling, the loss at which the chapter's stuck models sit.

# %%
import torch

from attnprimer.site import exercises
from attnprimer.site.experiments.transformer_training import step_blind_loss
from attnprimer.tasks import ReversalTransformerTask
from attnprimer.transformer import EncoderBlock

# %% [markdown]
# ## Exercise: a pre-LN encoder block
#
# An encoder block has two sublayers, self-attention and a position-wise feed-forward
# network. In a **pre-LN** block each sublayer reads a normalised copy of $x$ and adds
# what it computes to $x$ itself:
#
# $$x \leftarrow x + \mathrm{Attention}(\mathrm{LN}_1(x)), \qquad
# x \leftarrow x + \mathrm{FFN}(\mathrm{LN}_2(x)).$$
#
# The sum is the *residual connection*: $x$ travels through the block unchanged, and
# each sublayer only adds a correction to it. Write `encoder_block(x, block)` for an
# `EncoderBlock(..., pre_norm=True)`, using its four modules:
#
# * `block.attention(q)`, self-attention: returns the context (B, L, D) **and** the
#   weights, so keep the first of the two;
# * `block.norm_attention`, $\mathrm{LN}_1$;
# * `block.feed_forward`, the network;
# * `block.norm_feed_forward`, $\mathrm{LN}_2$.
#
# Leave out the mask: every position may read every other.

# %% tags=["exercise"]
def encoder_block(x, block):
    """x (B, L, D) through a pre-LN encoder block -> (B, L, D)."""
    raise NotImplementedError  # your code here


# %% tags=["solution"]
def encoder_block(x, block):
    """x (B, L, D) through a pre-LN encoder block -> (B, L, D)."""
    context, _ = block.attention(block.norm_attention(x))  # (B, L, D)
    x = x + context  # the residual: x itself, plus the correction
    return x + block.feed_forward(block.norm_feed_forward(x))  # (B, L, D)


# %%
exercises.check("encoder_block", encoder_block)

# %% [markdown]
# The original Transformer placed the norm the other way, **post-LN**:
# $x \leftarrow \mathrm{LN}(x + \mathrm{sublayer}(x))$. It is a valid block, the original
# paper's, but it is not this one, and the check says so. In post-LN the sum itself is
# normalised, so nothing reaches the next block untouched. Xiong et al. (2020) show that at
# initialisation post-LN's gradients near the output are large, against pre-LN's, which
# shrink with depth, and argue that this is why post-LN can need a learning-rate warm-up.
# On the chapter's task, at a peak learning rate of 0.01 and 500 steps, post-LN without
# warm-up fails at 6 blocks per stack in every seed and not at 2, but the chapter finds that
# the first gradients alone do not explain it.

# %%
def post_ln_block(x, block):
    context, _ = block.attention(x)
    x = block.norm_attention(x + context)
    return block.norm_feed_forward(x + block.feed_forward(x))


print(exercises.diagnose("encoder_block", post_ln_block))

# %% [markdown]
# Your function uses the block's own modules, so it is the block: check it against
# `EncoderBlock` on a fresh one.

# %%
torch.manual_seed(0)
block = EncoderBlock(dim=16, heads=4, hidden=64, pre_norm=True)
x = torch.randn(2, 7, 16)
with torch.no_grad():
    torch.testing.assert_close(encoder_block(x, block), block(x)[0])
print("equal to EncoderBlock(pre_norm=True) on a (2, 7, 16) input")


# %% [markdown]
# Without its residual connections the block is its sublayers composed: each one's output
# replaces $x$ instead of being added to it. The check recognises that mistake too.

# %%
def no_residual_block(x, block):
    context, _ = block.attention(block.norm_attention(x))
    return block.feed_forward(block.norm_feed_forward(context))


print(exercises.diagnose("encoder_block", no_residual_block))

# %% [markdown]
# ## The step-blind loss, by sampling
#
# The chapter's stuck models end near a loss of about 1.6. A predictor that knows which
# letters the input holds but not which step it is writing can do no better than to give
# each letter its count over $n + 1$ and the end $1 / (n + 1)$ at every step. Sample
# inputs of the chapter's task, score that predictor on their targets, and compare with
# the exact value the chapter computes.

# %%
task = ReversalTransformerTask()
batch = task.sample(20_000, torch.Generator().manual_seed(0))
counts = torch.zeros(len(batch.inputs), task.num_classes)
counts.scatter_add_(1, batch.inputs, torch.ones_like(batch.inputs, dtype=torch.float))
counts[:, 0], counts[:, task.end] = 0.0, 1.0  # no padding; the end once
q = counts / counts.sum(dim=1, keepdim=True)  # (B, C), the same at every step
scored = batch.targets != 0
losses = -q.gather(1, batch.targets.clamp(min=0)).log()  # (B, T)
print(f"sampled {float(losses[scored].mean()):.4f}, exact {step_blind_loss():.4f}")

# %% [markdown]
# ## Going further
#
# * `EncoderBlock(..., pre_norm=False)` is the post-LN block. Write its forward pass as
#   you wrote `encoder_block`, and check it against the block with
#   `torch.testing.assert_close`.
# * Score the step-blind predictor on inputs of 1 to 20 letters
#   (`ReversalTransformerTask(max_len=20)`): does the loss grow or shrink, and why?
