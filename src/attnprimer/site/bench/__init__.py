"""Measurements of this machine, run by ``nox -s bench`` and by the chapter "Attention at scale".

* [`attention_cost`][attnprimer.site.bench.attention_cost]: time and peak memory of attention
  against the sequence length (forward);
* [`training_attention_cost`][attnprimer.site.bench.training_attention_cost]: forward and
  backward, materialised, tiled and fused;
* [`training_step_cost`][attnprimer.site.bench.training_step_cost]: a training step of each
  kind of site model, at its batch size and at three times it;
* [`machine`][attnprimer.site.bench.machine]: the CPU, its cores and its load average, which
  every timing table of the chapter states.

Each can run on its own: ``python -m attnprimer.site.bench.<module>``.
"""
