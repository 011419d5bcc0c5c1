# %% [markdown]
# # Lab: RNN recap
#
# This lab goes with the chapter [RNN recap](../chapters/rnn-recap.md). There is no
# function to write yet (that starts with the [Bahdanau lab](bahdanau.py)); instead
# you will run experiments on the chapter's encoder-decoders, trained to write their
# input backwards:
#
# * see the bottleneck in the shapes: whatever the input's length, the vanilla decoder
#   gets one vector;
# * measure what that costs as inputs grow, for the vanilla, peeky and attention decoders;
# * compare teacher forcing (how the models were trained) with free running (how they
#   are used), step by step.

# %%
# %matplotlib inline
# %config InlineBackend.figure_formats = ["retina"]
import torch
from matplotlib.figure import Figure

from attnprimer.rnn import Seq2Seq
from attnprimer.site.catalogue import REVERSAL_DECODERS, site_model
from attnprimer.site.experiments.length_curves import accuracy_by_length
from attnprimer.training.train import held_out_generator

# %% [markdown]
# ## The bottleneck, in shapes
#
# The encoder reads the input one token at a time and keeps a state of size $H$. It
# returns the state after every step (the *memory*, one vector per input position) and
# the final state. A vanilla decoder starts from the final state and never sees the
# memory again.

# %%
torch.manual_seed(0)
model = Seq2Seq(num_tokens=9, num_outputs=10, embed_dim=32, hidden=64,
                kind="vanilla")
for length in (3, 10, 50):
    tokens = torch.randint(1, 9, (1, length))  # one sequence of letters
    memory, final = model.encoder(tokens)
    print(f"{length:2} letters -> memory {tuple(memory.shape)}, "
          f"final {tuple(final.shape)}")

# %% [markdown]
# Three letters or fifty, the vanilla decoder gets the same 64 numbers. The peeky
# decoder reads that final state again at every step; only the attention decoder reads
# the memory, all of it, at every step.
#
# ## What the bottleneck costs
#
# Load three of the trained decoders (seed 0 of each; on your machine each trains once
# and is cached) and measure exact match by input length. They were trained on 1 to 10
# letters; lengths 11 to 14 are new to them.

# %%
labels = ["vanilla", "peeky", "attention (additive)"]
models = {label: site_model("reversal", **REVERSAL_DECODERS[label]).trained()
          for label in labels}
lengths = list(range(1, 15))
accuracy = {label: accuracy_by_length(trained, lengths, samples=500)
            for label, trained in models.items()}

figure = Figure(figsize=(6.5, 3.4), layout="constrained")
axes = figure.add_subplot()
for label, scores in accuracy.items():
    percent = [100 * score for score in scores]
    axes.plot(lengths, percent, marker="o", label=label)
axes.axvspan(10.5, 14.5, color="0.92", label="longer than in training")
axes.set_xlabel("input length (letters)")
axes.set_ylabel("exact match (%)")
axes.set_ylim(0, 102)
axes.legend(loc="lower left")
figure

# %% [markdown]
# The vanilla decoder is perfect on short inputs and fades as they grow. Peeky, which
# reads the final state again at every step, fades later. Attention keeps most of its
# accuracy up to the longest training length, and loses it beyond, on lengths it never
# saw in training. Look closely at the medium lengths, though: there the peeky decoder is
# slightly *ahead* of attention (the Bahdanau chapter shows it over three seeds, and does
# not test why). Is the vanilla decoder's fade the size of its one vector? Not only: the
# chapter trains it three times longer, and it fades much later.
#
# ## Teacher forcing against free running
#
# In training, step $t$ of the decoder is fed the *correct* previous letter (teacher
# forcing): one early mistake cannot spoil the steps after it. In use, the decoder is fed
# its *own* previous output (free running), and a mistake can compound. Measure each
# output step's accuracy both ways on 2,000 held-out inputs of 10 letters:

# %%
def step_accuracy(trained, teacher_forcing):
    task = trained.task.at_length(10)
    batch = task.sample(2000, held_out_generator())
    with torch.no_grad():
        if teacher_forcing:
            logits = trained.model(batch.inputs, batch.targets).logits
        else:
            logits = trained.model(batch.inputs).logits  # greedy
    correct = logits.argmax(dim=-1) == batch.targets  # (B, T)
    return correct.float().mean(dim=0)  # (T,)


vanilla = models["vanilla"]
forced = step_accuracy(vanilla, teacher_forcing=True)
free = step_accuracy(vanilla, teacher_forcing=False)
print("step  teacher-forced  free-running")
for step, (a, b) in enumerate(zip(forced, free, strict=True)):
    print(f"{step:4} {100 * a:14.1f}% {100 * b:12.1f}%")

# %% [markdown]
# Teacher-forced, the later steps are about as accurate as the first: each is fed the
# right letters before it, so its only source of error is its memory of the letter it
# must write now. Free running, accuracy falls
# step after step, far below: a wrong letter fed back in throws off the steps after it,
# and the errors compound. (The last step, the end token, only needs the length, which
# the decoder keeps well.) This gap between the histories seen in training and in use
# is called *exposure bias*. A model judged by its teacher-forced accuracy looks better
# than it is in use. Every exact match in the chapters is greedy decoding (or one
# teacher-forced pass proved equal to it); where a chapter gives per-letter accuracy under
# teacher forcing, it says so.
#
# ## Going further
#
# * Run `step_accuracy` on `models["attention (additive)"]`. Which steps are hardest for
#   each model. Is the last step (the end token) easy for all of them?
# * Train a vanilla model with a larger state, e.g.
#   `attnprimer train reversal --decoder vanilla --hidden 128` on the command line.
#   How much of the gap to attention does a wider bottleneck close at the same budget?
#   And with `--steps 3600`? (The chapter's answer for 32 and 64 floats is in its
#   section "Bottleneck or budget?".)
