"""The cache of trained models: where it lives, its keys per model, and filling it."""

from __future__ import annotations

import pytest

import attnprimer.training.fingerprints as fingerprints
import attnprimer.training.model_cache as cache_module
from attnprimer.site.catalogue import SITE_MODELS
from attnprimer.tasks import CountingTask
from attnprimer.training.checkpoints import load_checkpoint
from attnprimer.training.files import cache_dir
from attnprimer.training.fingerprints import dependencies
from attnprimer.training.model_cache import cached_path, cached_result, get_trained, train_missing
from attnprimer.training.train import TrainConfig
from tiny_models import (
    TINY_CONFIG,
    TINY_TASK,
    _empty,
    _other_format,
    _random_bytes,
    _truncated,
    states_equal,
)

# --- the cache ---------------------------------------------------------------------------------

pytestmark = pytest.mark.usefixtures("temporary_cache")


def test_cache_dir_follows_the_environment(temporary_cache, monkeypatch, tmp_path):
    assert cache_dir() == temporary_cache
    monkeypatch.delenv("ATTNPRIMER_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_dir() == tmp_path / "xdg" / "attnprimer"


def test_cached_path_lives_in_the_cache_dir(temporary_cache):
    path = cached_path(TINY_TASK, TINY_CONFIG)
    assert path.parent == temporary_cache / "models"
    assert path.name.startswith("counting-") and path.suffix == ".pt"
    assert cached_path(TINY_TASK, TINY_CONFIG) == path
    assert cached_path(CountingTask(hidden=8), TrainConfig(steps=30, seed=0)) == path


@pytest.mark.parametrize(
    "task, config",
    [(TINY_TASK, TrainConfig(steps=30, seed=1)),
     (TINY_TASK, TrainConfig(steps=31, seed=0)),
     (TINY_TASK, TrainConfig(steps=30, seed=0, lr=2e-2)),
     (TINY_TASK, TrainConfig(steps=30, seed=0, batch_size=50)),
     (TINY_TASK, TrainConfig(steps=30, seed=0, schedule="constant")),
     (CountingTask(hidden=9), TINY_CONFIG),
     (CountingTask(hidden=8, max_len=9), TINY_CONFIG),
     (CountingTask(hidden=8, vocab_size=4), TINY_CONFIG)],
)
def test_cached_path_changes_with_the_settings(task, config):
    assert cached_path(task, config) != cached_path(TINY_TASK, TINY_CONFIG)


# --- keys per model: what an edit retrains -------------------------------------------------------


def _site_keys() -> dict:
    return {model: cached_path(model.task, model.config) for model in SITE_MODELS}


def _retrained_by(package_copy, edit) -> set[str]:
    """The tasks whose site models get a new cache key when ``edit`` changes the copy."""
    before = _site_keys()
    edit(package_copy)
    after = _site_keys()
    return {model.task.name for model in SITE_MODELS if after[model] != before[model]}


def _add_code(relative: str):
    def edit(root):
        path = root / relative
        path.write_text(path.read_text(encoding="utf-8") + "\n_EDITED = 1\n", encoding="utf-8")
    return edit


def test_the_site_has_models_of_every_task():
    assert {model.task.name for model in SITE_MODELS} == {
        "counting", "difference", "signal", "reversal", "reversal-transformer", "copy-reverse",
        "partners", "digit-reading", "digit-pair", "induction"}


@pytest.mark.parametrize("module, retrained", [
    # The Transformers' task extends the reversal task: its sampling is theirs too; the
    # copy-reverse task borrows its scoring and decoding
    ("tasks/reversal.py", {"reversal", "reversal-transformer", "copy-reverse"}),
    ("transformer.py", {"reversal-transformer", "copy-reverse", "digit-reading",  # its blocks
                        "digit-pair"}),
    ("position_schemes.py", {"copy-reverse"}),
    ("tasks/copy_reverse.py", {"copy-reverse"}),
    ("tasks/signal.py", {"signal"}),
    # the reversal task, and the patch reader's decoder
    ("rnn.py", {"reversal", "reversal-transformer", "copy-reverse", "digit-reading"}),
    ("positional.py", {"signal", "reversal-transformer", "copy-reverse", "digit-reading",
                       "digit-pair"}),  # through transformer.py
    ("models/signal.py", {"signal"}),
    ("models/difference.py", {"difference"}),
    ("models/partners.py", {"partners"}),
    ("tasks/partners.py", {"partners"}),
    ("patches.py", {"digit-reading", "digit-pair"}),
    ("tasks/digit_canvas.py", {"digit-reading", "digit-pair"}),
    ("models/patch_reader.py", {"digit-reading"}),
    ("tasks/digit_pair.py", {"digit-pair"}),
    ("models/patch_encoder.py", {"digit-pair"}),
    ("tasks/induction.py", {"induction"}),
    ("models/attention_only.py", {"induction"}),
    ("models/counting.py", {"counting", "difference"}),  # the difference model extends it
    ("tasks/counting.py", {"counting", "difference"}),  # and its task extends the counting task
    ("dot_product.py", {"counting", "difference", "signal", "reversal", "reversal-transformer",
                        "copy-reverse", "partners", "digit-reading", "digit-pair",
                        "induction"}),
    ("training/train.py", {"counting", "difference", "signal", "reversal",  # the training loop
                  "reversal-transformer", "copy-reverse", "partners", "digit-reading",
                  "digit-pair", "induction"}),
])
def test_an_edit_retrains_exactly_the_models_built_from_it(package_copy, module, retrained):
    assert _retrained_by(package_copy, _add_code(module)) == retrained


@pytest.mark.parametrize("module", [
    "cli/__init__.py", "site/experiments/difference_model.py", "site/explorer/export.py",
    "site/explorer/families.py", "site/explorer/interventions.py", "site/exercises/checker.py",
    "site/report.py", "site/catalogue.py", "site/figures/qkv.py", "site/figures/plotting.py",
    "training/model_cache.py", "training/checkpoints.py"])
def test_editing_code_no_model_is_built_from_retrains_nothing(package_copy, module):
    assert _retrained_by(package_copy, _add_code(module)) == set()


def test_editing_a_docstring_or_a_comment_retrains_nothing(package_copy):
    def edit(root):
        path = root / "positional.py"
        source = path.read_text(encoding="utf-8")
        source = source.replace('"""Sinusoidal', '"""Edited. Sinusoidal', 1) + "\n# a comment\n"
        path.write_text(source, encoding="utf-8")

    assert _retrained_by(package_copy, edit) == set()


def test_editing_an_attribute_docstring_retrains_nothing(package_copy):
    """The docstring after an assignment (``WARMUP = 0.1`` then a string), which the API
    reference publishes: train.py is in every model's key."""
    def edit(root):
        path = root / "training" / "train.py"
        source = path.read_text(encoding="utf-8")
        assert '"""The share of the steps' in source
        path.write_text(source.replace('"""The share of the steps', '"""Edited. The share', 1),
                        encoding="utf-8")

    assert _retrained_by(package_copy, edit) == set()


def test_the_dependencies_come_from_the_imports(package_copy):
    def edit(root):  # the counting model starts to use the positional module
        path = root / "models" / "counting.py"
        path.write_text(path.read_text(encoding="utf-8")
                        + "\nfrom attnprimer.positional import sinusoidal_encoding\n",
                        encoding="utf-8")

    assert "attnprimer.positional" not in dependencies("attnprimer.tasks.counting")
    edit(package_copy)
    assert "attnprimer.positional" in dependencies("attnprimer.tasks.counting")
    assert _retrained_by(package_copy, _add_code("positional.py")) >= {"counting", "signal"}


def _forget_parses_in_this_process(monkeypatch) -> None:
    """As a new process starts: nothing parsed, nothing read from the cache folder yet."""
    fingerprints._parsed.cache_clear()
    fingerprints._kept_parses.cache_clear()
    monkeypatch.setattr(fingerprints, "_unsaved", set())


def test_a_new_process_reads_the_parses_an_earlier_one_kept(monkeypatch, temporary_cache):
    _forget_parses_in_this_process(monkeypatch)
    first = fingerprints.fingerprint("attnprimer.tasks.counting")
    kept = temporary_cache / fingerprints.PARSES_FILE
    assert "attnprimer.models.counting" in kept.read_text(encoding="utf-8")

    _forget_parses_in_this_process(monkeypatch)
    parsed = []
    real_parse = fingerprints._parse
    monkeypatch.setattr(fingerprints, "_parse", lambda *args: parsed.append(args[1])
                        or real_parse(*args))
    assert fingerprints.fingerprint("attnprimer.tasks.counting") == first
    assert parsed == []  # every module came from the file


def test_an_edited_module_is_parsed_again_despite_the_kept_parse(package_copy, monkeypatch,
                                                                   temporary_cache):
    _forget_parses_in_this_process(monkeypatch)
    before = fingerprints.fingerprint("attnprimer.tasks.counting")
    _add_code("models/counting.py")(package_copy)
    _forget_parses_in_this_process(monkeypatch)
    assert fingerprints.fingerprint("attnprimer.tasks.counting") != before


def test_parses_kept_by_another_version_of_the_parser_are_not_reused(monkeypatch,
                                                                    temporary_cache):
    """A change in how a fingerprint is taken parses every module again: parses kept by an
    earlier version would mix old fingerprints with new ones, and two processes would then
    disagree about a model's key."""
    _forget_parses_in_this_process(monkeypatch)
    first = fingerprints.fingerprint("attnprimer.tasks.counting")
    _forget_parses_in_this_process(monkeypatch)
    monkeypatch.setattr(fingerprints, "_PARSER", fingerprints._PARSER + b"# another version")
    parsed = []
    real_parse = fingerprints._parse
    monkeypatch.setattr(fingerprints, "_parse", lambda *args: parsed.append(args[1])
                        or real_parse(*args))
    assert fingerprints.fingerprint("attnprimer.tasks.counting") == first
    assert "attnprimer.models.counting" in parsed  # parsed again, not read from the file


def test_a_cache_folder_that_cannot_be_written_costs_only_the_parse(monkeypatch, tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("ATTNPRIMER_CACHE_DIR", str(blocker))
    _forget_parses_in_this_process(monkeypatch)
    assert fingerprints.fingerprint("attnprimer.masks") == fingerprints.fingerprint(
        "attnprimer.masks")
    assert blocker.read_text() == "not a folder"


def test_dependencies_refuse_a_module_outside_the_package():
    with pytest.raises(ValueError, match="not a module"):
        dependencies("attnprimer.no_such_module")


@pytest.fixture
def train_calls(monkeypatch):
    """Record every call get_trained makes to train (and still train)."""
    calls = []
    real_train = cache_module.train

    def counting_train(*args, **kwargs):
        calls.append(args)
        return real_train(*args, **kwargs)

    monkeypatch.setattr(cache_module, "train", counting_train)
    return calls


def _refuse_to_train(*args, **kwargs):
    raise AssertionError("train() was called although the model is cached")


def test_get_trained_caches(monkeypatch, train_calls):
    first = get_trained(TINY_TASK, TINY_CONFIG)
    assert len(train_calls) == 1
    assert cached_path(TINY_TASK, TINY_CONFIG).is_file()

    monkeypatch.setattr(cache_module, "train", _refuse_to_train)
    second = get_trained(TINY_TASK, TINY_CONFIG)
    assert second.task == first.task and second.config == first.config
    assert second.history == first.history
    assert states_equal(second.model.state_dict(), first.model.state_dict())
    # And the cache only holds the one model.
    assert [path.name for path in cached_path(TINY_TASK, TINY_CONFIG).parent.iterdir()] == [
        cached_path(TINY_TASK, TINY_CONFIG).name
    ]


def test_get_trained_trains_what_train_trains(tiny):
    cached = get_trained(TINY_TASK, TINY_CONFIG)
    # tiny was trained with a different monitor, which never affects the weights.
    assert states_equal(cached.model.state_dict(), tiny.model.state_dict())
    assert cached.history["loss"] == tiny.history["loss"]


def test_get_trained_with_other_settings_trains_again(monkeypatch):
    get_trained(TINY_TASK, TINY_CONFIG)
    monkeypatch.setattr(cache_module, "train", _refuse_to_train)
    with pytest.raises(AssertionError, match="cached"):
        get_trained(TINY_TASK, TrainConfig(steps=30, seed=1))


@pytest.mark.parametrize("damage", [_random_bytes, _truncated, _empty, _other_format])
def test_a_corrupt_cache_entry_is_replaced_by_retraining(tiny, monkeypatch, train_calls, damage):
    path = cached_path(TINY_TASK, TINY_CONFIG)
    path.parent.mkdir(parents=True)
    damage(tiny, path)
    trained = get_trained(TINY_TASK, TINY_CONFIG)
    assert len(train_calls) == 1
    assert states_equal(trained.model.state_dict(), tiny.model.state_dict())
    # The entry on disk is now a good checkpoint, and the next call uses it.
    assert states_equal(load_checkpoint(path).model.state_dict(), tiny.model.state_dict())
    monkeypatch.setattr(cache_module, "train", _refuse_to_train)
    get_trained(TINY_TASK, TINY_CONFIG)


# --- training what the cache lacks, in parallel ----------------------------------------------


def test_train_missing_trains_only_what_is_missing(monkeypatch, train_calls):
    other = TrainConfig(steps=30, seed=1)
    get_trained(TINY_TASK, TINY_CONFIG)
    train_calls.clear()
    trained = train_missing([(TINY_TASK, TINY_CONFIG), (TINY_TASK, other), (TINY_TASK, other)],
                            workers=1)
    assert trained == [(TINY_TASK, other)]  # duplicates once, cached ones not at all
    assert len(train_calls) == 1
    assert cached_path(TINY_TASK, other).is_file()
    assert train_missing([(TINY_TASK, TINY_CONFIG), (TINY_TASK, other)]) == []


def test_train_missing_in_parallel_makes_the_same_models(tiny):
    configs, lines = [TINY_CONFIG, TrainConfig(steps=30, seed=1)], []
    trained = train_missing([(TINY_TASK, config) for config in configs], workers=2,
                            report=lines.append)
    assert len(trained) == 2
    # the parent reports each model as its worker finishes it
    assert sorted(line.split(" (")[0] for line in lines[1:]) == ["trained 1/2", "trained 2/2"]
    parallel = load_checkpoint(cached_path(TINY_TASK, TINY_CONFIG))
    assert states_equal(parallel.model.state_dict(), tiny.model.state_dict())
    assert parallel.history["loss"] == tiny.history["loss"]
    assert cached_path(TINY_TASK, configs[1]).is_file()


# --- results of experiments on cached models ---------------------------------------------------


def test_a_cached_result_is_computed_once_per_model_and_arguments(tiny):
    calls = []

    def experiment(trained, samples):
        calls.append(samples)
        return {"samples": samples, "steps": len(trained.history["loss"])}

    assert cache_module.cached_result(experiment, tiny, samples=5) == {"samples": 5, "steps": 30}
    assert cache_module.cached_result(experiment, tiny, samples=5) == {"samples": 5, "steps": 30}
    assert calls == [5]
    cache_module.cached_result(experiment, tiny, samples=6)  # other arguments: computed
    assert calls == [5, 6]


def test_a_cached_result_read_back_keeps_the_order_of_its_keys(tiny):
    def experiment(trained):  # a page's table lists the conditions in this order
        return {"as trained": 1.0, "blocked": 0.5, "all off": 0.0}

    computed = cache_module.cached_result(experiment, tiny)
    read_back = cache_module.cached_result(experiment, tiny)
    assert list(read_back) == list(computed) == ["as trained", "blocked", "all off"]


def test_a_cached_result_is_computed_again_when_its_code_changes(tiny, monkeypatch):
    calls = []

    def experiment(trained):
        calls.append(1)
        return 1.0

    cache_module.cached_result(experiment, tiny)
    monkeypatch.setattr(cache_module, "_code_of", lambda function: "other code")
    cache_module.cached_result(experiment, tiny)
    assert len(calls) == 2


def test_a_package_experiment_is_keyed_on_its_module(tiny, monkeypatch):
    from attnprimer.site.experiments.difference_model import mean_self_attention

    assert cache_module._code_of(mean_self_attention) == fingerprints.fingerprint(
        "attnprimer.site.experiments.difference_model", leaves=["attnprimer.training.model_cache"])


def test_a_result_is_not_keyed_on_tasks_its_code_does_not_import():
    """Loading a checkpoint names every task; a machine measurement must not re-key (and be
    measured again) when a task it never runs is edited, but an experiment must when the task
    it imports is."""
    measured = fingerprints.dependencies("attnprimer.site.experiments.kv_cache",
                                         leaves=["attnprimer.training.model_cache"])
    assert "attnprimer.training.model_cache" in measured
    assert not any(name.startswith("attnprimer.tasks.digit") for name in measured)
    assert "attnprimer.tasks.digit_reading" in fingerprints.dependencies(
        "attnprimer.site.experiments.attention_over_images",
        leaves=["attnprimer.training.model_cache"])


def test_a_damaged_cached_result_is_computed_again(tiny, temporary_cache):
    calls = []

    def experiment(trained):
        calls.append(1)
        return [1, 2]

    cache_module.cached_result(experiment, tiny)
    (stored,) = (temporary_cache / "results").iterdir()
    stored.write_text("{not json")
    assert cache_module.cached_result(experiment, tiny) == [1, 2]
    assert len(calls) == 2


def test_a_second_process_waits_for_the_training_lock_then_trains_nothing(monkeypatch):
    import threading

    calls = []
    real_train = cache_module.train
    monkeypatch.setattr(cache_module, "train", lambda *args, **kwargs: calls.append(args)
                        or real_train(*args, **kwargs))
    results = []
    with cache_module.training_lock():  # the first process is training
        other = threading.Thread(
            target=lambda: results.append(train_missing([(TINY_TASK, TINY_CONFIG)], workers=1)))
        other.start()
        other.join(timeout=1.0)
        assert other.is_alive()  # it waits for the lock
        get_trained(TINY_TASK, TINY_CONFIG)  # meanwhile the first process caches the model
    other.join(timeout=30)
    assert results == [[]]  # it found the model cached and trained nothing
    assert len(calls) == 1


CALLS: list[int] = []


def _measure(size: int) -> list[int]:
    CALLS.append(size)
    return list(range(size))


def test_cached_result_without_a_model_is_keyed_on_arguments_and_code(temporary_cache):
    """trained=None: a measurement of the machine, computed once per argument and code, then
    read back from its JSON file."""
    CALLS.clear()
    assert cached_result(_measure, None, size=3) == [0, 1, 2]
    assert cached_result(_measure, None, size=3) == [0, 1, 2]  # read back
    assert cached_result(_measure, None, size=2) == [0, 1]
    assert CALLS == [3, 2]
    assert len(list((temporary_cache / "results").glob("_measure-*.json"))) == 2
