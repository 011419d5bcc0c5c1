# %% [markdown]
# # Lab: induction heads
#
# This lab goes with the chapter [Induction heads](../chapters/induction-heads.md). You will
# write the **induction score** of an attention head from its weights, check it, and then use
# it on the trained two-layer models: which head is the induction head, and when did it form?

# %%
# %matplotlib inline
# %config InlineBackend.figure_formats = ["retina"]
import torch

from attnprimer.site import exercises
from attnprimer.site.catalogue import site_model
from attnprimer.training.train import held_out_generator

# %% [markdown]
# ## Exercise: the induction score
#
# A sequence holds a segment of $m$ letters (`length`) twice: from position $a$ (`first`),
# and again from position $b$ (`repeat`). The query at $b + j$ holds letter $j$ of the
# segment, which stood before at $a + j$. An induction head, at that query, looks at the
# letter that came *next* the first time, at $a + j + 1$, and copies it.
#
# Write `induction_score(weights, first, repeat, length)`: `weights` is one head's attention,
# (B, L, L), with query positions down and key positions across; `first`, `repeat` and
# `length` are (B,), one number per sequence. Return the mean, over every sequence and over
# j = 0 .. length - 2, of the weight the query at `repeat + j` puts on the letter after its
# earlier occurrence, as a tensor of no dimensions. (The repeat's last letter is left out:
# the letter after it is not part of the segment.) A loop over the sequences is fine.

# %% tags=["exercise"]
def induction_score(weights, first, repeat, length):
    """The mean weight on the letter after the earlier occurrence: a tensor ()."""
    raise NotImplementedError  # your code here


# %% tags=["solution"]
def induction_score(weights, first, repeat, length):
    """The mean weight on the letter after the earlier occurrence: a tensor ()."""
    on_target = []
    for b in range(weights.shape[0]):
        for j in range(int(length[b]) - 1):  # the last letter has no next one in the segment
            query = int(repeat[b]) + j
            key = int(first[b]) + j + 1  # the letter after the earlier occurrence
            on_target.append(weights[b, query, key])
    return torch.stack(on_target).mean()


# %%
exercises.check("induction_score", induction_score)

# %% [markdown]
# The mistake almost everyone makes once is the offset: look at `first + j`, where the
# query's own letter stood, instead of `first + j + 1`, the letter to copy. That is what a
# head that *finds* the letter does; an induction head looks one further. The check
# recognises it:

# %%
def found_not_copied(weights, first, repeat, length):
    on_target = [weights[b, int(repeat[b]) + j, int(first[b]) + j]
                 for b in range(weights.shape[0]) for j in range(int(length[b]) - 1)]
    return torch.stack(on_target).mean()


print(exercises.diagnose("induction_score", found_not_copied))

# %% [markdown]
# ## Which head is the induction head?
#
# Now score every head of a trained two-layer model, on fresh sequences with a repeat. The
# model reads every letter but the last; its weights come back by head name, `"layer 1.2"`
# for layer 1, head 2.

# %%
trained = site_model("induction", layers=2, seed=0).trained()
task, snapshots = trained.task, trained.model
repeats = task.repeats(500, held_out_generator())
with torch.no_grad():
    output = snapshots.model(repeats.tokens[:, :-1])
for head, weights in output.attention.items():
    score = induction_score(weights, repeats.first, repeats.repeat, repeats.length)
    print(f"{head}: induction score {float(score):.2f}")

# %% [markdown]
# Both heads of layer 2 should score well above the rest: the chapter found two induction
# heads in every run. A head of layer 1 cannot be one. Its keys know only their own letter
# and position, so it cannot find "the position after my letter".
#
# ## When did it form?
#
# The model kept a copy of its parameters every 50 training steps. Score the best layer-2
# head at each one, and find the first copy where it passes 0.3:

# %%
steps = snapshots.steps_of_snapshots()
curve = []
for index in range(len(steps)):
    with torch.no_grad():
        attention = snapshots.snapshot(index)(repeats.tokens[:, :-1]).attention
    best = max(float(induction_score(attention[head], repeats.first, repeats.repeat,
                                     repeats.length))
               for head in ("layer 2.1", "layer 2.2"))
    curve.append(best)
formed = next(step for step, score in zip(steps, curve, strict=True) if score > 0.3)
print("induction score every 200 steps:", [round(score, 2) for score in curve[::4]])
print("first above 0.3 at step", formed)

# %% [markdown]
# Compare with the step of the drop in the chapter's table. To go further: write the
# previous-token score (the mean of `weights.diagonal(offset=-1, dim1=1, dim2=2)`) and check
# that a layer-1 head's rises at the same time.
