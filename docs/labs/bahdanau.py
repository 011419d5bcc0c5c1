# %% [markdown]
# # Lab: Bahdanau attention
#
# This lab goes with the chapter [Bahdanau attention](../chapters/bahdanau.md). You will
# write additive attention, the score Bahdanau, Cho and Bengio used to let a decoder
# look back at every encoder state, check it, find out why its `tanh` cannot be left out,
# and then read the alignment that the trained reversal model learned.

# %%
# %matplotlib inline
# %config InlineBackend.figure_formats = ["retina"]
import torch

from attnprimer import AdditiveAttention
from attnprimer.site import exercises
from attnprimer.site.catalogue import site_model
from attnprimer.site.figures import plot_task_attention
from attnprimer.training.train import predict_one

# %% [markdown]
# ## Exercise: additive attention
#
# A decoder state $q$ (the *query*, size $D_q$) is scored against each encoder state
# $k_j$ (a *key*, size $D_k$) by a small network with one hidden layer of size $A$:
#
# $$\mathrm{score}(q, k_j) = v^\top \tanh(W_q\, q + W_k\, k_j),$$
#
# with $W_q$ of shape ($A$, $D_q$), $W_k$ ($A$, $D_k$) and $v$ ($A$,). A softmax over the
# keys turns the scores into weights, and the context is the weighted sum of the values.
#
# Write `additive_attention` for queries (..., L, $D_q$), keys (..., S, $D_k$) and values
# (..., S, $d_v$): every query against every key at once. Broadcasting does it without a
# loop: `a.unsqueeze(-2) + b.unsqueeze(-3)` adds (..., L, 1, A) to (..., 1, S, A). The
# `mask` (True = may attend) broadcasts to (..., L, S).

# %% tags=["exercise"]
def additive_attention(query, key, value, W_q, W_k, v, mask=None):
    """Returns context (..., L, Dv) and weights (..., L, S)."""
    raise NotImplementedError  # your code here


# %% tags=["solution"]
def additive_attention(query, key, value, W_q, W_k, v, mask=None):
    """Returns context (..., L, Dv) and weights (..., L, S)."""
    projected_query = query @ W_q.T  # (..., L, A)
    projected_key = key @ W_k.T  # (..., S, A)
    # every query plus every key: (..., L, 1, A) + (..., 1, S, A)
    hidden = torch.tanh(projected_query.unsqueeze(-2)
                        + projected_key.unsqueeze(-3))  # (..., L, S, A)
    scores = hidden @ v  # (..., L, S)
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)  # over the keys
    return weights @ value, weights  # (..., L, Dv), (..., L, S)


# %%
exercises.check("additive_attention", additive_attention)

# %% [markdown]
# The same computation is packaged as a module, `attnprimer.AdditiveAttention`, whose
# $W_q$, $W_k$ and $v$ are learned. Give your function its weights and the two agree:

# %%
torch.manual_seed(0)
module = AdditiveAttention(query_dim=4, key_dim=6, hidden_dim=8)
query, key = torch.randn(2, 3, 4), torch.randn(2, 5, 6)
with torch.no_grad():
    expected = module(query, key, key)
    score = module.score  # holds W_q, W_k and v
    mine = additive_attention(query, key, key, score.query_proj.weight,
                              score.key_proj.weight, score.v)
for name, a, b in zip(("context", "weights"), mine, expected, strict=True):
    torch.testing.assert_close(a, b)
    print(f"{name} {tuple(a.shape)}: equal to the module's")

# %% [markdown]
# ## Why the tanh?
#
# Take the `tanh` out and the score becomes $v^\top W_q\, q + v^\top W_k\, k_j$. The first
# term is the same for every key, and a softmax does not change when the same number is
# added to all its inputs: **the query no longer has any effect on the weights**. Two
# very different decoder states would read exactly the same context. Check it:

# %%
def no_tanh_attention(query, key, value, W_q, W_k, v, mask=None):
    hidden = (query @ W_q.T).unsqueeze(-2) + (key @ W_k.T).unsqueeze(-3)
    scores = hidden @ v  # no tanh
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    return weights @ value, weights


W_q, W_k, v = torch.randn(8, 4), torch.randn(8, 6), torch.randn(8)
two_queries = torch.stack([torch.randn(4), 10 * torch.randn(4)])  # (2, 4)
keys = torch.randn(5, 6)
_, weights = no_tanh_attention(two_queries, keys, keys, W_q, W_k, v)
print("without tanh, the two queries' weights:\n", weights)
_, weights = additive_attention(two_queries, keys, keys, W_q, W_k, v)
print("with tanh:\n", weights)

# %% [markdown]
# The check knows this mistake too:

# %%
print(exercises.diagnose("additive_attention", no_tanh_attention))

# %% [markdown]
# ## The trained reversal model's alignment
#
# The chapter's attention decoder learned to write its input backwards. Load it (on
# your machine it trains once, in about half a minute, and is cached) and watch which
# input position each output step reads. Change `text` to any 1 to 10 letters from
# A to H.

# %%
trained = site_model("reversal", decoder="attention", score="additive").trained()
task, model = trained.task, trained.model

text = "ABCDEFG"
inputs = task.encode(text)
prediction, attention = predict_one(model, inputs)
print(f"input   {text}")
print(f"output  {task.decode_output(prediction)}")
n = len(text)
steps = n + 1  # the letters, then the end token
weights = attention["encoder-decoder"][:steps, :n]
plot_task_attention(task, inputs[:n], prediction[:steps], weights)

# %% [markdown]
# The weights form an anti-diagonal, as reversal needs, but look closely: most output
# steps put their weight **one position to the right** of the letter they write. A GRU
# state at position $j$ still remembers the letter at $j - 1$, so reading state $j$ is
# enough to write letter $j - 1$; the chapter forces the attention onto one state or
# another to show that this is what the decoder uses, and compares the bidirectional
# encoder of Bahdanau et al.
#
# ## Beyond the training lengths
#
# The model saw inputs of 1 to 10 letters. Try 14: the task is rebuilt at that length
# (the model is unchanged). Which output steps lose the diagonal, and which input
# positions should they have read? In training no input had a position 10 or beyond:
# are the steps that go wrong the ones that read those positions?

# %%
longer = task.at_length(14)
text = "ABCDEFGHABCDEF"
inputs = longer.encode(text)
prediction, attention = predict_one(model, inputs)
print(f"input   {text}")
print(f"output  {longer.decode_output(prediction)}")
print(f"answer  {text[::-1]}.")
weights = attention["encoder-decoder"]
plot_task_attention(longer, inputs, prediction, weights)

# %% [markdown]
# ## Going further
#
# * Replace the additive score by a dot product, $q \cdot k_j$, in your function. Which
#   weights disappear, and what does the dot product require of $D_q$ and $D_k$?
# * The keys' projection $W_k\, k_j$ does not depend on the decoder step. In
#   `attnprimer.rnn.Decoder` it is computed once per input (`Decoder.keys`): how much work
#   does that save for an output of $T$ steps?
