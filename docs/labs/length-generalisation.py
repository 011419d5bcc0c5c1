# %% [markdown]
# # Lab: train short, test long
#
# This lab goes with the chapter [Train short, test long](../chapters/length-generalisation.md).
# You will write a computation with which, Kazemnejad et al. (2023) prove, a causal
# Transformer with no position encoding can recover where its tokens are (whether the
# chapter's NoPE models do so is not tested), check it against the package, and then test
# the chapter's trained models on inputs longer than any they saw: one of your own
# choosing, and their attention on it.

# %%
# %matplotlib inline
# %config InlineBackend.figure_formats = ["retina"]
import torch
from IPython.display import display

from attnprimer.position_schemes import nope_position_signal
from attnprimer.site import exercises
from attnprimer.site.catalogue import site_model
from attnprimer.site.figures import plot_attention
from attnprimer.training.train import predict

# %% [markdown]
# ## Exercise: the causal average
#
# A head whose scores are all equal gives every key it may see the same weight: it averages
# their values. Under a causal mask, position $i$ may see positions $0, \dots, i$, so it
# returns the mean of the first $i + 1$ values. Write `causal_average(values)` for values
# of shape (L, Dv): row $i$ of the result is the mean of rows $0..i$.

# %% tags=["exercise"]
def causal_average(values):
    """values (L, Dv) -> (L, Dv), row i the mean of values[0..i]."""
    raise NotImplementedError  # your code here


# %% tags=["solution"]
def causal_average(values):
    """values (L, Dv) -> (L, Dv), row i the mean of values[0..i]."""
    counts = torch.arange(1, len(values) + 1, dtype=values.dtype)  # i + 1
    return values.cumsum(dim=0) / counts[:, None]  # (L, Dv)


# %%
exercises.check("causal_average", causal_average)

# %% [markdown]
# Now give the start token the value 1 and every other token 0. The average at position $i$
# is the start token's share, $1/(i+1)$: a different number at every position, made by the
# mask alone. A model with no position encoding (NoPE) can write it into its first layer's
# output and read positions from it in the next, as Kazemnejad et al. (2023) show.

# %%
start = torch.zeros(8, 1)
start[0] = 1.0
print(causal_average(start)[:, 0])
print(nope_position_signal(8))

# %% [markdown]
# Without the mask every position averages all eight values and gets the same $1/8$: the
# signal is gone. The shares also crowd together as $i$ grows ($1/10$ and $1/11$ differ by
# less than $1/100$), which might make long inputs harder for a model that counts this way
# (a hypothesis: the chapter does not test it).

# %% [markdown]
# ## Testing a trained model beyond its training lengths
#
# The chapter's models were trained to reverse inputs of 1 to 8 letters; all but NoPE
# learned them (NoPE gets about three in five 8-letter inputs right). Pick a scheme and an input
# of your own, longer than 8 letters, and see what the model writes. The task is set to the
# input's length, so the input has no padding and the plots below line up; `predict` decodes
# greedily.

# %%
scheme = "relative"  # try "none", "sinusoidal", "alibi", "rotary"
trained = site_model("copy-reverse", operation="reverse",
                     pos_enc=scheme).trained()
letters = "ABCDEFGHACE"
task = trained.task.at_length(len(letters))
_, prediction = predict(trained.model, task.encode(letters)[None])
written = task.decode_output(prediction[0])
print(f"{letters} -> {written}  (right: {letters[::-1]}.)")

# %% [markdown]
# ## Where it looked
#
# Each layer has four heads. This cell draws the second layer's heads while the model writes
# each output letter, over the input letters: the right alignment for reverse is the
# anti-diagonal. Try other schemes and lengths, and compare with a length the model was
# trained on.

# %%
with torch.no_grad():
    output = trained.model(task.encode(letters)[None], prediction)
length = len(letters)
for head in range(1, 5):
    weights = output.attention[f"decoder self 2.{head}"][0]  # (L, L)
    # the output steps' queries, over the letters' columns
    rows = weights[length + 1: 2 * length + 1, 1: length + 1]
    steps = [task.decode_output(token[None])
             for token in prediction[0, :length]]
    display(plot_attention(
        rows.detach(), steps, list(letters), annotate=False,
        title=f"{scheme}, head 2.{head}", xlabel="input letter",
        ylabel="output step (the letter written)"))
