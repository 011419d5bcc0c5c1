# %% [markdown]
# # Lab: the Transformer
#
# This lab goes with the chapter [The Transformer](../chapters/transformer.md). You will
# write the self-attention mask of the decoder-only model, and use your mask to run one of
# the chapter's trained models by hand, one decoding step at a time. Last, you will look at
# where the trained encoder-decoder attends when it writes a word backwards. The encoder
# block's forward pass, pre-LN and post-LN, is in the
# [next lab](training-transformers.py).

# %%
# %matplotlib inline
# %config InlineBackend.figure_formats = ["retina"]
import torch

from attnprimer.site import exercises
from attnprimer.site.catalogue import REVERSAL_EXAMPLE, site_model
from attnprimer.site.figures import plot_task_attention
from attnprimer.training.train import predict_one

# %% [markdown]
# ## Exercise: the decoder-only model's mask
#
# The chapter's decoder-only model reads one sequence: the input (padded with token 0 up
# to its length $S$), a separator, then the output written so far. From the separator
# on, each position predicts the next token (the loss covers the output steps only), so
# query $i$ may read keys $0, \dots, i$ and nothing after them: key $i + 1$ is the answer
# it is being trained to give, and under teacher forcing it sits right there in the
# sequence. The model puts the same causal mask over the input too, though no input
# position is trained to predict anything. The input's padding is no token at all, so no
# query may read it either: mask the padded *keys* (columns) only, and leave a padded
# query's own row causal (what it computes is never read).
#
# Write `decoder_mask(sequence, source_length)`: from tokens (B, L), of which the first
# `source_length` are the input, a boolean (B, L, L) mask, **True = may attend**, row $i$
# for query $i$. Only the input's padding is masked: a 0 there is padding, and the
# tokens after the input are all real. Hint: a causal (L, L) mask, and a (B, L) mask of
# the real keys, combined with `&` after indexing the second with `[:, None, :]`.

# %% tags=["exercise"]
def decoder_mask(sequence, source_length):
    """Bool (B, L, L): True where query i may read key j."""
    raise NotImplementedError  # your code here


# %% tags=["solution"]
def decoder_mask(sequence, source_length):
    """Bool (B, L, L): True where query i may read key j."""
    length = sequence.shape[1]
    causal = torch.ones(length, length, dtype=torch.bool).tril()  # keys 0..i
    real = torch.ones_like(sequence, dtype=torch.bool)  # (B, L)
    real[:, :source_length] = sequence[:, :source_length] != 0  # the input's padding
    return causal & real[:, None, :]  # (B, L, L): a key is read when both allow it


# %%
exercises.check("decoder_mask", decoder_mask)

# %% [markdown]
# ## Decoding by hand with your mask
#
# Now run the trained decoder-only model (on your machine it trains once and is
# cached) with **your** mask instead of its own. `run_with` below is
# the model's forward pass written out: embed the tokens, add the sinusoidal encoding of
# each token's position (counting real tokens only, so padding moves nothing), go
# through the blocks under your mask, and read out the logits of every position.

# %%
decoder_only = site_model("reversal-transformer", architecture="decoder-only",
                          pre_norm=True, steps=800, seed=0).trained()
task, model = decoder_only.task, decoder_only.model


@torch.no_grad()
def run_with(model, sequence, source_length, mask_function):
    """Logits (B, L, C) of every position, under the mask that mask_function makes."""
    mask = mask_function(sequence, source_length)  # (B, L, L)
    real = torch.ones_like(sequence, dtype=torch.bool)  # (B, L): not the input's padding
    real[:, :source_length] = sequence[:, :source_length] != 0
    positions = (real.cumsum(dim=1) - 1).clamp(min=0)  # (B, L)
    x = model.embed(sequence) + model.position.table[positions]  # (B, L, D)
    for block in model.blocks:
        x, _ = block(x, mask)
    return model.out(model.norm(x))  # (B, L, C)


inputs = task.encode(REVERSAL_EXAMPLE)[None]  # (1, S): nine letters and one pad
source_length = inputs.shape[1]
sequence = torch.cat([inputs, torch.tensor([[model.separator]])], dim=1)  # (1, S + 1)
for _ in range(source_length + 1):  # greedy: one step at a time
    logits = run_with(model, sequence, source_length, decoder_mask)
    best = logits[:, -1:].argmax(dim=-1)  # (1, 1): the next token
    sequence = torch.cat([sequence, best], dim=1)

mine = sequence[0, source_length + 1:]  # the output steps
theirs = model(inputs).logits.argmax(dim=-1)[0]  # the model's own greedy decoding
print(f"input {REVERSAL_EXAMPLE}, written back with your mask: {task.decode_output(mine)}")
assert torch.equal(mine, theirs)
print("the same tokens as the model's own decoding")

# %% [markdown]
# Each step ran the whole sequence again, to read off one new token. Causality is what
# makes that wasteful, and what makes training cheap: no position's output depends on
# anything after it, so appending a token changes none of the logits before it.
# Teacher forcing uses exactly that, to train every step of the output in one pass.

# %%
shorter = sequence[:, :-1]  # the same sequence, one token fewer
before = run_with(model, shorter, source_length, decoder_mask)
after = run_with(model, sequence, source_length, decoder_mask)[:, :-1]
print(f"largest change of the earlier logits when a token is appended: "
      f"{(after - before).abs().max():.1e}")

# %% [markdown]
# ## Where the encoder-decoder reads
#
# The encoder-decoder model writes the same word backwards with two kinds of attention
# in each decoder block: causal self-attention over its own output so far, and
# cross-attention to the encoded input. Here are its last block's weights, averaged
# over the four heads. Change `text` (1 to 10 letters from A to H) and run the cell
# again.

# %%
encoder_decoder = site_model("reversal-transformer", architecture="encoder-decoder",
                             pre_norm=True, seed=0).trained()
task, model = encoder_decoder.task, encoder_decoder.model
text = REVERSAL_EXAMPLE
tokens = task.encode(text)
prediction, attention = predict_one(model, tokens)
heads = range(1, model.decoder[-1].cross_attention.num_heads + 1)
layer = len(model.decoder)
cross = torch.stack([attention[f"cross {layer}.{head}"] for head in heads]).mean(0)
own = torch.stack([attention[f"decoder self {layer}.{head}"] for head in heads]).mean(0)
print(f"{text} -> {task.decode_output(prediction)}")
plot_task_attention(task, tokens, prediction, cross, own)

# %% [markdown]
# Output step $t$ has to copy input position $n - 1 - t$ of an input of $n$ letters.
# Averaged over the heads, the cross-attention on the left (seed 0) runs roughly along that
# anti-diagonal, though at some early steps its largest weight is on the last letters
# instead; which head does what is for the chapter's head analysis. On the right, each
# step reads only itself and the steps before it: the upper triangle is empty, because the
# decoder's mask is causal.
#
# ## Going further
#
# * Run `run_with` under teacher forcing (the input, the separator and the whole
#   target in one sequence) with a mask that lets each step see one token ahead,
#   `tril(diagonal=1)`. The model was never shown the answer in training: does it copy
#   it now, or do its predictions just get worse?
