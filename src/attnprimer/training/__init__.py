"""Training: the layer between the mechanisms and the site.

* [`train`][attnprimer.training.train]: the training loop, its settings
  ([`TrainConfig`][attnprimer.training.train.TrainConfig]) and held-out evaluation;
* [`checkpoints`][attnprimer.training.checkpoints]: a trained model on disk, written atomically;
* [`model_cache`][attnprimer.training.model_cache]: trained models (and results computed on
  them) cached on disk, keyed by task, settings, seed and the code that shapes them;
* [`fingerprints`][attnprimer.training.fingerprints]: what those keys are made of;
* [`workers`][attnprimer.training.workers] and [`progress`][attnprimer.training.progress]:
  training missing models in parallel, with a line as each finishes;
* [`files`][attnprimer.training.files]: the cache folder and atomic writes.

It imports the mechanisms (tasks and models); it never imports [`attnprimer.site`][attnprimer.site].
"""
