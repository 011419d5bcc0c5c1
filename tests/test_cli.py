"""The ``attnprimer`` command, in-process (``cli.main``) and as a real process."""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import select
import shlex
import shutil
import signal
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import pytest
import torch

import attnprimer.training.model_cache as cache_module
from attnprimer import cli
from attnprimer.cli import commands, main
from attnprimer.site.catalogue import SiteModel
from attnprimer.tasks import TASKS, CountingTask
from attnprimer.training.checkpoints import load_checkpoint, save_checkpoint
from attnprimer.training.fingerprints import PARSES_FILE
from attnprimer.training.model_cache import cached_path
from attnprimer.training.train import TrainConfig, train

TINY = ["--steps", "20", "--hidden", "8"]
# `train` scores the model on 10,000 held-out sequences once trained; decoding that many is most
# of a test's time for the sequence tasks, and these tests read the output's form, not its score.
FEW_SCORED = ["--samples", "200"]
TINY_TASK, TINY_CONFIG = CountingTask(hidden=8), TrainConfig(steps=20, lr=3e-2)


@pytest.fixture(autouse=True)
def cache(tmp_path, monkeypatch) -> Path:
    """Every test gets an empty cache of its own."""
    folder = tmp_path / "cache"
    monkeypatch.setenv("ATTNPRIMER_CACHE_DIR", str(folder))
    return folder


@pytest.fixture
def run(capsys):
    """Run the CLI in-process; returns (exit code, stdout, stderr)."""

    def run(*argv: str) -> tuple[int, str, str]:
        try:
            code = main(list(argv))
        except SystemExit as exit:  # argparse exits by itself on bad usage and --help
            code = exit.code
        out, err = capsys.readouterr()
        return code, out, err

    return run


@pytest.fixture(scope="module")
def tiny_checkpoint(tmp_path_factory) -> bytes:
    """The tiny model's checkpoint, trained once for the module (what `train counting` saves)."""
    path = tmp_path_factory.mktemp("tiny") / "tiny.pt"
    save_checkpoint(train(TINY_TASK, TINY_CONFIG), path)
    return path.read_bytes()


@pytest.fixture
def trained(tiny_checkpoint, cache) -> None:
    """The tiny model in the test's cache, where `attnprimer train counting` + TINY puts it."""
    path = cached_path(TINY_TASK, TINY_CONFIG)
    path.parent.mkdir(parents=True)
    path.write_bytes(tiny_checkpoint)


def assert_one_line_error(err: str) -> None:
    assert err.endswith("\n")
    assert err.count("\n") == 1, err
    assert "error" in err
    assert "Traceback" not in err


def train_command_in(message: str) -> list[str]:
    """The ``attnprimer train ...`` command an error message recommends, as argv words."""
    found = re.search(r"(attnprimer train \S+(?: --\S+(?: [^-\s]\S*)?)*)\s*$", message)
    assert found, message
    return shlex.split(found.group(1))


# --- train -------------------------------------------------------------------------------------


def test_train_caches_and_writes_the_checkpoint(run, tmp_path, cache):
    checkpoint = tmp_path / "out" / "tiny.pt"
    checkpoint.parent.mkdir()
    code, out, err = run("train", "counting", *TINY, "--checkpoint", str(checkpoint))
    assert code == 0, err
    assert checkpoint.is_file() and checkpoint.stat().st_size > 0
    assert str(checkpoint) in out
    assert "held-out exact match" in out
    loaded = load_checkpoint(checkpoint)
    assert loaded.task == TINY_TASK
    assert loaded.config == TINY_CONFIG  # flags plus the task's own training defaults
    # The cache holds the same model, so that test and eval find it.
    cached = load_checkpoint(cached_path(TINY_TASK, TINY_CONFIG))
    for name, value in cached.model.state_dict().items():
        assert torch.equal(value, loaded.model.state_dict()[name])
    assert cached_path(TINY_TASK, TINY_CONFIG).parent.parent == cache


def test_train_is_the_same_model_as_the_library_trains(run, tmp_path, tiny_checkpoint):
    # This is what makes the `trained` fixture a stand-in for `attnprimer train counting`.
    checkpoint = tmp_path / "tiny.pt"
    assert run("train", "counting", *TINY, "--checkpoint", str(checkpoint))[0] == 0
    (tmp_path / "expected.pt").write_bytes(tiny_checkpoint)
    expected = load_checkpoint(tmp_path / "expected.pt")
    got = load_checkpoint(checkpoint)
    assert (got.task, got.config) == (expected.task, expected.config)
    for name, value in got.model.state_dict().items():
        assert torch.equal(value, expected.model.state_dict()[name]), name


def test_train_reports_accuracy_and_the_cache_path(run):
    code, out, _ = run("train", "counting", *TINY)
    assert code == 0
    assert str(cached_path(TINY_TASK, TINY_CONFIG)) in out
    percentages = [float(value) for value in re.findall(r"([\d.]+)%", out)]
    assert len(percentages) == 4  # exact match and one per letter
    assert all(0 <= value <= 100 for value in percentages)
    assert "on 10,000 sequences" in out


def test_train_scores_as_many_held_out_sequences_as_asked(run):
    code, out, _ = run("train", "counting", *TINY, "--samples", "300")
    assert code == 0
    assert "on 300 sequences" in out
    code, _, err = run("train", "counting", *TINY, "--samples", "0")
    assert code == 2 and "--samples" in err


# --- test --------------------------------------------------------------------------------------


def test_test_prints_input_prediction_and_attention(run, trained):
    code, out, err = run("test", "counting", *TINY)
    assert code == 0, err
    assert err == ""
    assert re.search(r"^Input: +([A-C_] ){9}[A-C_]$", out, re.MULTILINE)
    assert re.search(r"^Prediction: +A=\d+ +B=\d+ +C=\d+$", out, re.MULTILINE)
    assert re.search(r"^Target: +A=\d+ +B=\d+ +C=\d+ +\((all correct|WRONG)\)$", out, re.MULTILINE)
    for step, letter in enumerate("ABC"):
        assert f"Output step {step} ({letter}) attended mainly to input steps [" in out
    rows = [json.loads(line) for line in out.splitlines() if line.startswith("  [")]
    assert len(rows) == 3
    for row in rows:
        assert len(row) == 10
        assert sum(row) == pytest.approx(1.0, abs=10 * 5e-4)


def test_test_with_an_input(run, trained):
    code, out, err = run("test", "counting", *TINY, "--input", "AAC CB")
    assert code == 0, err
    assert re.search(r"^Input: +A A C _ C B _ _ _ _$", out, re.MULTILINE)
    # The target is the true count of the given input, whatever the model predicts.
    assert re.search(r"^Target: +A=2 +B=1 +C=2 ", out, re.MULTILINE)


def test_test_accepts_lower_case_input(run, trained):
    upper = run("test", "counting", *TINY, "--input", "AAC CB")
    lower = run("test", "counting", *TINY, "--input", "aac cb")
    assert lower[0] == 0
    assert lower[1] == upper[1]


def test_test_default_input_depends_on_the_data_seed(run, trained):
    first = run("test", "counting", *TINY)[1]
    again = run("test", "counting", *TINY, "--data-seed", "0")[1]
    other = run("test", "counting", *TINY, "--data-seed", "5")[1]
    assert first == again
    assert first.splitlines()[0] != other.splitlines()[0]


def test_test_with_a_checkpoint_ignores_the_cache(run, tmp_path, cache):
    checkpoint = tmp_path / "tiny.pt"
    assert run("train", "counting", *TINY, "--checkpoint", str(checkpoint))[0] == 0
    shutil.rmtree(cache)
    code, out, err = run("test", "counting", "--checkpoint", str(checkpoint), "--input", "ABC")
    assert code == 0, err
    assert "Prediction:" in out


@pytest.mark.parametrize("suffix", [".png", ".svg"])
def test_test_plot_writes_the_heatmap(run, trained, tmp_path, suffix):
    plot = tmp_path / "plots" / f"heatmap{suffix}"
    code, out, err = run("test", "counting", *TINY, "--input", "AAC CB", "--plot", str(plot))
    assert code == 0, err
    assert plot.is_file() and plot.stat().st_size > 0
    assert str(plot) in out
    head = plot.read_bytes()[:200]
    if suffix == ".png":
        assert head.startswith(b"\x89PNG\r\n\x1a\n")
    else:
        assert b"<svg" in plot.read_bytes()


def test_test_plot_to_an_unsupported_format_is_a_usage_error(run, trained, tmp_path):
    code, _, err = run("test", "counting", *TINY, "--plot", str(tmp_path / "heatmap.xyz"))
    assert code == 2
    assert_one_line_error(err)
    assert not (tmp_path / "heatmap.xyz").exists()


def test_test_plot_below_a_file_exits_1(run, trained, tmp_path):
    (tmp_path / "file").write_text("a file")
    plot = tmp_path / "file" / "heatmap.png"
    code, out, err = run("test", "counting", *TINY, "--plot", str(plot))
    assert code == 1
    assert_one_line_error(err)
    assert err.startswith(f"attnprimer: error: cannot save the plot to {plot}: ")
    assert str(tmp_path / "file") in err
    assert "heatmap saved" not in out


# --- eval --------------------------------------------------------------------------------------


def test_eval_json(run, trained):
    code, out, err = run("eval", "counting", *TINY, "--json", "--samples", "200")
    assert code == 0, err
    assert out.count("\n") == 1  # one object on one line
    result = json.loads(out)
    assert result["samples"] == 200
    assert 0.0 <= result["exact_match"] <= 1.0
    assert isinstance(result["per_step"], list) and len(result["per_step"]) == 3
    assert all(0.0 <= value <= 1.0 for value in result["per_step"])
    assert result["exact_match"] <= min(result["per_step"])
    # Fractions of 200 sequences.
    for value in [result["exact_match"], *result["per_step"]]:
        assert value * 200 == pytest.approx(round(value * 200))
    assert result["task"] == "counting"
    assert result["settings"]["hidden"] == 8 and result["settings"]["steps"] == 20


def test_eval_data_seed_changes_the_data(run, trained):
    results = [json.loads(run("eval", "counting", *TINY, "--json", "--samples", "300",
                              "--data-seed", str(seed))[1]) for seed in (1, 1, 2)]
    assert results[0] == results[1]
    assert results[0]["data_seed"] == 1 and results[2]["data_seed"] == 2


def test_eval_plain_text(run, trained):
    code, out, _ = run("eval", "counting", *TINY, "--samples", "200")
    assert code == 0
    assert "held-out exact match" in out and "200 sequences" in out


# --- bad usage: exit code 2 and one line ---------------------------------------------------------


@pytest.mark.parametrize(
    "argv",
    [
        ["train", "sorting"],
        ["test", "sorting"],
        ["eval", "sorting", "--json"],
        ["frobnicate"],
        [],
        ["train"],
        ["train", "counting", "--bogus", "1"],
        ["test", "counting", "--verbose"],
        ["train", "counting", "--steps", "0"],
        ["train", "counting", "--steps", "-3"],
        ["train", "counting", "--steps", "ten"],
        ["train", "counting", "--hidden", "0"],
        ["test", "counting", "--hidden", "-1"],
        ["train", "counting", "--batch-size", "0"],
        ["train", "counting", "--lr", "0"],
        ["train", "counting", "--lr", "nan"],
        ["train", "counting", "--seed", "-1"],
        ["train", "counting", "--schedule", "linear"],
        ["eval", "counting", "--samples", "0"],
        ["eval", "counting", "--samples", "-5"],
        ["eval", "counting", "--samples", "many"],
        ["train", "counting", "--vocab-size", "27"],
        ["figures", "no_such_figure"],
    ],
)
def test_bad_usage_exits_2_with_one_line(run, argv, cache):
    code, _, err = run(*argv)
    assert code == 2
    assert_one_line_error(err)
    assert not cache.exists()  # nothing was trained


@pytest.mark.parametrize("text", ["AXC", "A1", "ABCD", "A-B", "AAAAAAAAAAA"])
def test_bad_input_exits_2_with_one_line(run, trained, text):
    code, out, err = run("test", "counting", *TINY, "--input", text)
    assert code == 2
    assert_one_line_error(err)
    assert "Prediction" not in out


def test_help_exits_0(run):
    code, out, _ = run("--help")
    assert code == 0
    for command in ("train", "test", "eval", "figures"):
        assert command in out
    code, out, _ = run("train", "counting", "--help")
    assert code == 0
    for flag in ("--steps", "--batch-size", "--lr", "--seed", "--max-len", "--vocab-size",
                 "--hidden", "--checkpoint"):
        assert flag in out


def test_only_the_image_tasks_have_no_typed_input(run):
    assert set(TASKS) - set(cli.INPUT_FORMATS) == {"digit-reading", "digit-pair"}
    code, _, err = run("test", "digit-reading")
    assert code == 2 and "invalid choice" in err


@pytest.mark.parametrize("name", sorted(cli.INPUT_FORMATS))
def test_each_task_says_what_its_input_is_with_an_example_it_accepts(run, name):
    code, out, _ = run("test", name, "--help")
    assert code == 0
    form, example = cli.INPUT_FORMATS[name]
    assert f'"{example}"' in " ".join(out.split())  # argparse folds long help lines
    assert TASKS[name]().encode(example).dim() == 1  # the example is valid input
    if "no blanks" in form:  # and a blank in it is refused
        with pytest.raises(ValueError):
            TASKS[name]().encode(example[:2] + " " + example[3:])


# --- no usable model: exit code 1 ----------------------------------------------------------------


@pytest.mark.parametrize("command", ["test", "eval"])
def test_missing_model_names_the_command_that_trains_it(run, command):
    code, out, err = run(command, "counting", *TINY)
    assert code == 1
    assert_one_line_error(err)
    words = train_command_in(err)
    assert words[:3] == ["attnprimer", "train", "counting"]
    assert "--steps" in words and words[words.index("--steps") + 1] == "20"
    assert "--hidden" in words and words[words.index("--hidden") + 1] == "8"
    # Running that command makes the same request succeed.
    assert run(*words[1:])[0] == 0
    code, out, err = run(command, "counting", *TINY)
    assert code == 0, err
    assert out


def test_missing_model_command_carries_every_non_default_setting(run):
    argv = ["--steps", "15", "--hidden", "6", "--seed", "3", "--lr", "0.05", "--batch-size", "20",
            "--max-len", "7", "--vocab-size", "2", "--schedule", "constant",
            "--optimizer", "radam"]
    code, _, err = run("eval", "counting", *argv, "--json", "--samples", "50")
    assert code == 1
    words = train_command_in(err)
    assert run(*words[1:])[0] == 0
    code, out, err = run("eval", "counting", *argv, "--json", "--samples", "50")
    assert code == 0, err
    settings = json.loads(out)["settings"]
    assert settings == {"steps": 15, "hidden": 6, "seed": 3, "lr": 0.05, "batch_size": 20,
                        "max_len": 7, "vocab_size": 2, "schedule": "constant",
                        "optimizer": "radam", "start_token": False, "mixed_lengths": False}


def test_missing_model_with_default_settings_suggests_the_plain_command(run):
    code, _, err = run("test", "counting")
    assert code == 1
    assert train_command_in(err) == ["attnprimer", "train", "counting"]


def test_a_model_with_other_settings_is_not_used(run, trained):
    code, _, err = run("test", "counting", "--steps", "21", "--hidden", "8")
    assert code == 1
    assert_one_line_error(err)


def _random_bytes(path: Path) -> None:
    path.write_bytes(os.urandom(3000))


def _truncated(path: Path) -> None:
    save_checkpoint(train(TINY_TASK, TrainConfig(steps=2)), path)
    path.write_bytes(path.read_bytes()[:1500])


def _tensor(path: Path) -> None:
    torch.save(torch.ones(3), path)


@pytest.mark.parametrize("command", ["test", "eval"])
@pytest.mark.parametrize("damage", [_random_bytes, _truncated, _tensor])
def test_corrupted_checkpoint_exits_1_with_one_line(run, tmp_path, command, damage):
    checkpoint = tmp_path / "broken.pt"
    damage(checkpoint)
    code, out, err = run(command, "counting", "--checkpoint", str(checkpoint))
    assert code == 1
    assert_one_line_error(err)
    assert str(checkpoint) in err
    assert out == ""


def test_missing_checkpoint_file_exits_1(run, tmp_path):
    code, _, err = run("test", "counting", "--checkpoint", str(tmp_path / "absent.pt"))
    assert code == 1
    assert_one_line_error(err)


def test_corrupted_cache_entry_exits_1(run, trained):
    path = cached_path(TINY_TASK, TINY_CONFIG)
    path.write_bytes(path.read_bytes()[:100])
    code, _, err = run("eval", "counting", *TINY)
    assert code == 1
    assert_one_line_error(err)


# --- figures -----------------------------------------------------------------------------------


def test_figures_renders_the_named_recipes(run, tmp_path):
    out_dir = tmp_path / "figures"
    code, out, err = run("figures", "qkv/score_table", "--out", str(out_dir))
    assert code == 0, err
    written = out_dir / "qkv" / "score_table.md"
    assert written.is_file()
    assert out.strip() == str(written)
    assert written.read_text().startswith("| score |")


def test_figures_list_names_every_artifact_with_its_chapter(run):
    from attnprimer.site.figures import FIGURES

    code, out, err = run("figures", "--list")
    assert code == 0, err
    rows = [line.split(None, 2) for line in out.strip().splitlines()]
    assert [f"{chapter}/{name}" for chapter, name, _ in rows] == list(FIGURES)
    assert all(description.strip() for _, _, description in rows)


def test_figures_renders_a_whole_chapter(run, tmp_path, monkeypatch):
    import attnprimer.site.figures.registry as registry

    rendered = []
    monkeypatch.setattr(os, "cpu_count", lambda: 1)  # in this process, where render is patched
    monkeypatch.setattr(registry, "render", lambda entry, out: rendered.append(entry.key) or
                        (out / f"{entry.key}.md"))
    code, _, err = run("figures", "rnn-recap", "qkv/score_table", "--out", str(tmp_path))
    assert code == 0, err
    assert sorted(rendered) == ["qkv/score_table", "rnn-recap/accuracy", "rnn-recap/bottleneck",
                                "rnn-recap/bottleneck_table", "rnn-recap/length",
                                "rnn-recap/peeky_diagram",  # registered from rnn_diagrams.py
                                "rnn-recap/vanilla_diagram"]


# --- paths that cannot be used: exit code 1, one line, checked before training -----------------


@pytest.fixture
def no_training(monkeypatch):
    """Make any training fail the test: the path checks must come first."""

    def refuse(*args, **kwargs):
        raise AssertionError("trained before checking the paths")

    monkeypatch.setattr(commands, "train", refuse)
    monkeypatch.setattr(cache_module, "train", refuse)
    monkeypatch.setattr(commands, "train_missing", refuse)


@pytest.fixture
def a_file(tmp_path) -> Path:
    path = tmp_path / "a_file"
    path.write_text("not a folder")
    return path


def test_train_refuses_a_checkpoint_in_a_missing_folder(run, tmp_path, cache, no_training):
    # The folder is not created: a typo must not leave folders behind (as root, anywhere).
    checkpoint = tmp_path / "no" / "such" / "x.pt"
    code, out, err = run("train", "counting", *TINY, "--checkpoint", str(checkpoint))
    assert code == 1
    assert err == (f"attnprimer: error: cannot save the checkpoint to {checkpoint}: folder "
                   f"{checkpoint.parent} does not exist; nothing was trained\n")
    assert not (tmp_path / "no").exists()
    assert not cache.exists()
    assert out == ""


def test_train_refuses_a_checkpoint_below_a_file(run, a_file, cache, no_training):
    checkpoint = a_file / "x.pt"
    code, _, err = run("train", "counting", *TINY, "--checkpoint", str(checkpoint))
    assert code == 1
    assert err == (f"attnprimer: error: cannot save the checkpoint to {checkpoint}: {a_file} is a "
                   "file, not a folder; nothing was trained\n")
    assert a_file.read_text() == "not a folder"
    assert not cache.exists()


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs Linux's /proc")
def test_train_refuses_a_checkpoint_in_a_folder_it_cannot_write(run, cache, no_training):
    # /proc exists and is a folder, but nobody (not even root) can create files in it.
    code, _, err = run("train", "counting", *TINY, "--checkpoint", "/proc/x.pt")
    assert code == 1
    assert_one_line_error(err)
    assert err.startswith("attnprimer: error: cannot save the checkpoint to /proc/x.pt: "
                          "cannot create files in /proc (")
    assert err.endswith("; nothing was trained\n")
    assert not cache.exists()


def test_train_refuses_a_folder_as_the_checkpoint(run, tmp_path, cache, no_training):
    code, _, err = run("train", "counting", *TINY, "--checkpoint", str(tmp_path))
    assert code == 1
    assert err == (f"attnprimer: error: cannot save the checkpoint to {tmp_path}: {tmp_path} is a "
                   "folder, not a file; nothing was trained\n")


def test_figures_out_below_a_file_exits_1_before_training(run, a_file, cache, no_training):
    out_dir = a_file / "figures"
    code, out, err = run("figures", "--out", str(out_dir))  # all figures: would train first
    assert code == 1
    assert err == (f"attnprimer: error: cannot write the figures to {out_dir}: {a_file} is a file, "
                   "not a folder\n")
    assert out == ""
    assert not cache.exists()


@pytest.mark.parametrize("argv, then", [
    (["train", "counting", *TINY], "; nothing was trained"),
    (["train", "all"], "; nothing was trained"),
    (["figures"], "; nothing was trained"),  # the site's models come first
    (["figures", "qkv/counting_training"], ""),  # a figure that would train its model
    (["test", "counting", *TINY], ""),
    (["eval", "counting", *TINY], ""),
], ids=["train", "train-all", "figures", "figures-named", "test", "eval"])
def test_a_cache_that_is_a_file_exits_1(run, monkeypatch, a_file, tmp_path, no_training, argv,
                                         then):
    monkeypatch.setenv("ATTNPRIMER_CACHE_DIR", str(a_file))
    if argv[0] == "figures":
        argv = [*argv, "--out", str(tmp_path / "figures")]
    code, _, err = run(*argv)
    assert code == 1
    assert err == (f"attnprimer: error: cannot use the model cache {a_file} "
                   f"(ATTNPRIMER_CACHE_DIR): {a_file} is a file, not a folder{then}\n")
    assert "train it with" not in err  # training would not help
    assert a_file.read_text() == "not a folder"
    assert not (tmp_path / "figures").exists()


def test_an_os_error_after_the_checks_is_one_line(run, monkeypatch, tmp_path):
    # E.g. a disk that fills up while saving: exit 1, the path, no traceback, no temporary file.
    def full_disk(payload, file):
        file.write(b"half a checkpoint")
        raise OSError(28, "No space left on device", file.name)

    monkeypatch.setattr(torch, "save", full_disk)
    code, _, err = run("train", "counting", *TINY)
    assert code == 1
    assert_one_line_error(err)
    assert err.startswith("attnprimer: error: No space left on device: ")
    assert [path for path in tmp_path.rglob("*") if path.is_file()] == []


# --- Ctrl-C: exit code 130, one line saying what was interrupted and what was saved ----------


def files_in(folder: Path) -> list[Path]:
    """Every file under ``folder`` but the package's parse of its own modules, which any
    command may keep in the cache folder (a whole file, whatever interrupts it)."""
    return sorted(path for path in folder.rglob("*")
                  if path.is_file() and path.name != PARSES_FILE)


def test_ctrl_c_while_training_saves_nothing(run, monkeypatch, tmp_path, cache):
    calls = []
    real_loss = CountingTask.loss

    def loss(self, model, batch):
        calls.append(1)
        if len(calls) == 3:  # in the middle of the real training loop
            raise KeyboardInterrupt
        return real_loss(self, model, batch)

    monkeypatch.setattr(CountingTask, "loss", loss)
    checkpoint = tmp_path / "tiny.pt"
    code, out, err = run("train", "counting", *TINY, "--checkpoint", str(checkpoint))
    assert code == 130
    assert err == "attnprimer: interrupted while training counting; nothing was saved\n"
    assert len(calls) == 3
    assert "trained counting" not in out
    assert not checkpoint.exists()
    assert files_in(tmp_path) == []


@pytest.mark.parametrize("interrupted", ["cache", "checkpoint"])
def test_ctrl_c_while_saving_leaves_no_partial_file(run, monkeypatch, tmp_path, cache, interrupted):
    real_save = torch.save
    saves = []

    def save(payload, file):
        saves.append(file.name)
        if len(saves) == (1 if interrupted == "cache" else 2):
            file.write(b"half a checkpoint")
            raise KeyboardInterrupt
        real_save(payload, file)

    monkeypatch.setattr(torch, "save", save)
    checkpoint = tmp_path / "out" / "tiny.pt"
    checkpoint.parent.mkdir()
    code, _, err = run("train", "counting", *TINY, "--checkpoint", str(checkpoint))
    assert code == 130
    cached = cached_path(TINY_TASK, TINY_CONFIG)
    if interrupted == "cache":
        assert err == "attnprimer: interrupted after training counting; nothing was saved\n"
        assert files_in(cache) == []
    else:  # the cache entry is whole, the checkpoint absent
        assert err == f"attnprimer: interrupted after training counting; saved to {cached}\n"
        assert files_in(cache) == [cached]
        load_checkpoint(cached)
    assert files_in(checkpoint.parent) == []  # no temporary file either


@pytest.fixture
def two_site_models(monkeypatch):
    """Stand-ins for the site's models (two tiny ones), for ``train all`` and ``figures``."""
    models = {f"tiny {seed}": SiteModel(TINY_TASK, TrainConfig(steps=5, seed=seed))
              for seed in (0, 1)}
    monkeypatch.setattr("attnprimer.site.catalogue.SITE_MODELS", tuple(models.values()))
    return {label: (model.task, model.config) for label, model in models.items()}


@pytest.mark.parametrize("argv, what", [
    (["train", "all"], "the site's models"),
    (["figures"], "the site's models for the figures"),
])
def test_ctrl_c_while_training_the_site_models(run, monkeypatch, tmp_path, cache, two_site_models,
                                               argv, what):
    def train_one_then_interrupt(specs, **kwargs):
        cache_module.get_trained(*specs[0])
        raise KeyboardInterrupt

    monkeypatch.setattr(commands, "train_missing", train_one_then_interrupt)
    out_dir = tmp_path / "figures"
    code, out, err = run(*argv, *(["--out", str(out_dir)] if argv == ["figures"] else []))
    assert code == 130
    assert err == (f"attnprimer: interrupted while training {what}; 1 of 2 are cached, "
                   "nothing else was saved\n")
    assert out == f"training 2 of {what} (2 in all)...\n"
    assert files_in(cache) == [cached_path(*two_site_models["tiny 0"])]
    assert not out_dir.exists()


def test_ctrl_c_while_evaluating(run, monkeypatch, trained):
    def interrupt(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(commands, "evaluate", interrupt)
    code, out, err = run("eval", "counting", *TINY)
    assert (code, out, err) == (130, "", "attnprimer: interrupted while running eval\n")


# --- as a real process -------------------------------------------------------------------------


def _environment(cache: Path) -> dict[str, str]:
    return {**os.environ, "ATTNPRIMER_CACHE_DIR": str(cache)}


def test_python_dash_m_attnprimer(cache):
    result = subprocess.run([sys.executable, "-m", "attnprimer", "--help"], capture_output=True,
                            text=True, env=_environment(cache), timeout=120, check=False)
    assert result.returncode == 0, result.stderr
    assert "usage: attnprimer" in result.stdout
    assert "train" in result.stdout and "eval" in result.stdout


def test_python_dash_m_attnprimer_exit_codes(cache):
    result = subprocess.run([sys.executable, "-m", "attnprimer", "eval", "counting", *TINY],
                            capture_output=True, text=True, env=_environment(cache), timeout=120,
                            check=False)
    assert result.returncode == 1
    assert_one_line_error(result.stderr)
    assert "attnprimer train counting" in result.stderr


def _console_script() -> str | None:
    # The venv's bin folder is not necessarily on PATH; look next to the interpreter too.
    search = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    return shutil.which("attnprimer", path=search)


@pytest.mark.skipif(_console_script() is None,
                    reason="the attnprimer console script is not installed")
def test_console_script(cache):
    result = subprocess.run([_console_script(), "train", "counting", "--steps", "0"],
                            capture_output=True, text=True, env=_environment(cache), timeout=120,
                            check=False)
    assert result.returncode == 2
    assert_one_line_error(result.stderr)


# --- the difference task: boolean settings and self-attention --------------------------------

DIFF_TINY = ["--steps", "20", "--hidden", "8"]


def test_difference_with_self_attention_trains_tests_and_evaluates(run):
    code, out, err = run("train", "difference", *DIFF_TINY, "--self-att", *FEW_SCORED)
    assert code == 0, err
    assert "|A-B|" in out
    code, out, err = run("test", "difference", *DIFF_TINY, "--self-att", "--input", "BBBA ACABB")
    assert code == 0, err
    assert re.search(r"^Prediction: +A=\d+ +B=\d+ +C=\d+ +\|A-B\|=\d+$", out, re.MULTILINE)
    assert re.search(r"^Target: +A=3 +B=5 +C=1 +\|A-B\|=2 ", out, re.MULTILINE)
    encoder, self_attention = out.split("Self-attention over the output steps:")
    assert encoder.count("attended mainly to input steps") == 4
    assert self_attention.count("attended mainly to output steps") == 4
    rows = [json.loads(line) for line in self_attention.splitlines() if line.startswith("  [")]
    assert len(rows) == 4
    for row in rows:
        assert len(row) == 4
        assert sum(row) == pytest.approx(1.0, abs=4 * 5e-4)
    code, out, err = run("eval", "difference", *DIFF_TINY, "--self-att", "--json",
                         "--samples", "100")
    assert code == 0, err
    result = json.loads(out)
    assert result["settings"]["self_att"] is True and result["settings"]["projections"] is False
    assert len(result["per_step"]) == 4


def test_difference_without_self_attention_prints_no_self_attention(run):
    assert run("train", "difference", *DIFF_TINY, *FEW_SCORED)[0] == 0
    code, out, err = run("test", "difference", *DIFF_TINY, "--no-self-att")
    assert code == 0, err
    assert "Encoder-decoder attention:" in out
    assert "Self-attention" not in out


def test_self_attention_flag_selects_a_different_model(run):
    assert run("train", "difference", *DIFF_TINY, *FEW_SCORED)[0] == 0
    code, _, err = run("test", "difference", *DIFF_TINY, "--self-att")
    assert code == 1
    assert train_command_in(err) == ["attnprimer", "train", "difference", "--steps", "20",
                                     "--hidden", "8", "--self-att"]


def test_missing_model_command_carries_boolean_settings(run):
    argv = [*DIFF_TINY, "--self-att", "--projections", "--seed", "2"]
    code, _, err = run("test", "difference", *argv)
    assert code == 1
    words = train_command_in(err)
    assert "--self-att" in words and "--projections" in words
    assert run(*words[1:])[0] == 0
    assert run("test", "difference", *argv)[0] == 0


def test_projections_without_self_attention_is_a_usage_error(run):
    code, _, err = run("train", "difference", *DIFF_TINY, "--projections", *FEW_SCORED)
    assert code == 2
    assert_one_line_error(err)
    assert "projections needs self_att" in err


def test_test_plot_with_self_attention_draws_both_heatmaps(run, tmp_path):
    assert run("train", "difference", *DIFF_TINY, "--self-att", *FEW_SCORED)[0] == 0
    path = tmp_path / "both.svg"
    code, _, err = run("test", "difference", *DIFF_TINY, "--self-att", "--plot", str(path))
    assert code == 0, err
    assert path.read_text().lstrip().startswith("<?xml")


def test_save_heatmap_passes_the_self_attention_on(monkeypatch, tmp_path):
    import attnprimer.site.figures as figures
    from attnprimer.cli.commands import _save_heatmap
    from attnprimer.tasks import DifferenceTask

    received = {}
    real = figures.plot_task_attention

    def spy(*args, **kwargs):
        received.update(kwargs)
        return real(*args, **kwargs)

    monkeypatch.setattr(figures, "plot_task_attention", spy)
    task = DifferenceTask(hidden=8, self_att=True)
    trained = train(task, TrainConfig(steps=2))
    tokens = task.encode("AB")
    attention = {"encoder-decoder": torch.full((4, 10), 0.1), "self": torch.eye(4)}
    _save_heatmap(trained, tokens, torch.tensor([1, 1, 0, 0]), attention, tmp_path / "h.png")
    assert torch.equal(received["self_weights"], torch.eye(4))


# --- the signal task: a choice flag and the learned encoding's norms ---------------------------


def test_signal_with_a_learned_encoding_prints_its_norms(run):
    argv = ["--steps", "20", "--hidden", "8", "--pos-enc", "learned"]
    assert run("train", "signal", *argv, *FEW_SCORED)[0] == 0
    code, out, err = run("test", "signal", *argv, "--input", "BCACABBAACB")
    assert code == 0, err
    assert re.search(r"^Target: +count=3 ", out, re.MULTILINE)
    assert "Encoder self-attention over the input:" in out
    assert "Input step 0 (B) attended mainly to input steps [" in out
    assert "Output step 0 (count) attended mainly to input steps [" in out
    heading = "L2 norm of the learned positional encoding at each input step:"
    assert heading in out
    norms = json.loads(out.split(heading)[1].strip().splitlines()[0])
    assert len(norms) == 11 and all(norm >= 0 for norm in norms)


@pytest.mark.parametrize("encoding", ["none", "sinusoidal", "rotary"])
def test_signal_without_a_learned_encoding_prints_no_norms(run, encoding):
    argv = ["--steps", "5", "--hidden", "8", "--pos-enc", encoding]
    assert run("train", "signal", *argv, *FEW_SCORED)[0] == 0
    code, out, err = run("test", "signal", *argv)
    assert code == 0, err
    assert "L2 norm" not in out


def test_signal_rejects_an_unknown_encoding_and_a_short_input(run):
    code, _, err = run("train", "signal", "--pos-enc", "relative")
    assert code == 2 and "invalid choice" in err
    assert run("train", "signal", "--steps", "5", "--hidden", "8", *FEW_SCORED)[0] == 0
    code, _, err = run("test", "signal", "--steps", "5", "--hidden", "8", "--input", "ABC")
    assert code == 2
    assert_one_line_error(err)
    assert "11 letters" in err


# --- the reversal task: encoder-decoders ---------------------------------------------------------


@pytest.mark.parametrize("decoder", ["vanilla", "peeky", "attention"])
def test_reversal_trains_and_tests_every_decoder(run, tmp_path, decoder):
    argv = ["--steps", "3", "--hidden", "8", "--decoder", decoder]
    assert run("train", "reversal", *argv, *FEW_SCORED)[0] == 0
    code, out, err = run("test", "reversal", *argv, "--input", "HEADBADGE",
                         "--plot", str(tmp_path / "h.png"))
    if decoder == "attention":
        assert code == 0, err
        assert "Encoder-decoder attention:" in out
        assert (tmp_path / "h.png").is_file()
    else:  # nothing to plot: a clear usage error, nothing written
        assert code == 2 and "no attention" in err
        assert not (tmp_path / "h.png").exists()
    assert run("test", "reversal", *argv, "--input", "HEAD")[0] == 0
    code, out, _ = run("test", "reversal", *argv, "--input", "HEAD")
    assert re.search(r"^Target: +DAEH\. ", out, re.MULTILINE)


def test_reversal_flags_select_score_and_direction(run):
    argv = ["--steps", "3", "--hidden", "8", "--score", "dot", "--bidirectional"]
    assert run("train", "reversal", *argv, *FEW_SCORED)[0] == 0
    code, out, err = run("eval", "reversal", *argv, "--json", "--samples", "50")
    assert code == 0, err
    settings = json.loads(out)["settings"]
    assert settings["score"] == "dot" and settings["bidirectional"] is True


# --- Ctrl-C in a real terminal: SIGINT to every process of the group ----------------------------


@contextmanager
def _started(argv: list[str], cache: Path):
    """``python argv`` in a process group of its own, as a shell starts a command.

    Whatever happens, the whole group (workers included) is killed at the end.
    """
    # A shell that runs these tests in the background ignores SIGINT, and a child would
    # inherit that; a handler, by contrast, is reset to the default by exec.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        process = subprocess.Popen(
            [sys.executable, *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env=_environment(cache), start_new_session=True,
        )
    finally:
        signal.signal(signal.SIGINT, previous)
    try:
        yield process
    finally:
        with contextlib.suppress(ProcessLookupError):  # all gone already
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def _first_line(process: subprocess.Popen, timeout: float = 30) -> str:
    """The first line of stdout, or "" if none comes within ``timeout`` seconds."""
    ready, _, _ = select.select([process.stdout], [], [], timeout)
    return process.stdout.readline() if ready else ""


def _ctrl_c(process: subprocess.Popen) -> tuple[str, str]:
    """SIGINT to the whole group, as Ctrl-C in a terminal; then stdout and stderr."""
    os.killpg(process.pid, signal.SIGINT)
    return process.communicate(timeout=30)


def test_ctrl_c_stops_a_real_training(cache):
    with _started(["-m", "attnprimer", "train", "counting", "--steps", "100000"], cache) as process:
        first = _first_line(process)  # printed just before training starts
        assert first == "training counting (100000 steps)...\n"
        time.sleep(0.3)  # well into the training loop
        out, err = _ctrl_c(process)
    # 130, or death by SIGINT, which a shell reports as the same 128 + 2 = 130. Under load,
    # about 1 run in 10 ends the second way although the CLI caught the Ctrl-C, said so and
    # returned 130 (measured: 4 of 40 runs with a busy CPU; ignoring SIGINT before exiting
    # does not change it). CPython ends a process whose KeyboardInterrupt reaches the top level
    # by killing itself with SIGINT, so one seems to get there after the CLI's handler; the
    # cause is not found yet. What the reader sees, the line below and no file, is the same.
    assert process.returncode in (130, -signal.SIGINT)
    assert err == "attnprimer: interrupted while training counting; nothing was saved\n"
    assert out == ""
    assert not cache.exists() or files_in(cache) == []


def _processes_with(cache: Path) -> list[int]:
    """The processes that run with this test's cache (ours and any worker left behind)."""
    marker = f"ATTNPRIMER_CACHE_DIR={cache}\0".encode()
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and marker in (entry / "environ").read_bytes() + b"\0":
                found.append(int(entry.name))
        except OSError:  # gone, or not ours to read
            pass
    return found


def _loaded_torch(pid: int) -> bool:
    try:
        return "libtorch" in Path(f"/proc/{pid}/maps").read_text()
    except OSError:
        return False


TRAIN_ALL_TWO_MODELS = """
import os, sys
os.cpu_count = lambda: 2  # two workers, even on a machine with one CPU
import attnprimer.site.catalogue as site_models
from attnprimer.tasks import TASKS, CountingTask
from attnprimer.training.train import TrainConfig
site_models.SITE_MODELS = tuple(
    site_models.SiteModel(CountingTask(hidden=8), TrainConfig(steps=100_000, seed=seed))
    for seed in (0, 1))
from attnprimer.cli import main
sys.exit(main(["train", "all"]))
"""


@pytest.mark.skipif(not Path("/proc/self/environ").is_file(), reason="needs Linux's /proc")
def test_ctrl_c_stops_train_all_and_its_workers(cache):
    with _started(["-c", TRAIN_ALL_TWO_MODELS], cache) as process:
        first = _first_line(process)  # printed just before the workers start
        assert first == "training 2 of the site's models (2 in all)...\n"
        workers: list[int] = []
        deadline = time.monotonic() + 30
        while len(workers) < 2 and time.monotonic() < deadline:  # until they have torch
            workers = [pid for pid in _processes_with(cache)
                       if pid != process.pid and _loaded_torch(pid)]
            time.sleep(0.1)
        assert len(workers) == 2, "the workers did not start"
        time.sleep(0.5)  # training
        out, err = _ctrl_c(process)
        # The workers were stopped, not left training (the resource tracker exits soon after).
        deadline = time.monotonic() + 10
        while _processes_with(cache) and time.monotonic() < deadline:
            time.sleep(0.1)
        left = _processes_with(cache)
    assert process.returncode == 130
    # The progress line, then one line: no traceback from the workers either.
    started, *rest = err.splitlines(keepends=True)
    assert started.startswith("training 2 models the cache lacks, 2 at a time")
    assert rest == [("attnprimer: interrupted while training the site's models; 0 of 2 are "
                     "cached, nothing else was saved\n")]
    assert out == ""
    assert left == []
    assert not cache.exists() or files_in(cache) == []


def test_a_reader_that_goes_away_is_no_error(monkeypatch, capsys):
    # `attnprimer figures --list | head -3`: head exits, and the next write breaks the pipe.
    class ClosedPipe(io.StringIO):
        def write(self, text):
            raise BrokenPipeError(32, "Broken pipe")

        def fileno(self):
            return os.open(os.devnull, os.O_WRONLY)

    monkeypatch.setattr(sys, "stdout", ClosedPipe())
    assert main(["figures", "--list"]) == 0
    assert capsys.readouterr().err == ""


# --- the Transformers: every head printed and plotted --------------------------------------

TRANSFORMER_TINY = ["--steps", "5", "--dim", "8", "--heads", "2", "--layers", "1"]


@pytest.mark.parametrize("architecture, heads", [
    ("encoder-decoder", ["encoder self 1.1", "encoder self 1.2", "decoder self 1.1",
                         "decoder self 1.2", "cross 1.1", "cross 1.2"]),
    ("decoder-only", ["decoder self 1.1", "decoder self 1.2"])])
def test_a_transformer_trains_tests_and_evaluates(run, tmp_path, architecture, heads):
    argv = [*TRANSFORMER_TINY, "--architecture", architecture]
    code, out, err = run("train", "reversal-transformer", *argv, *FEW_SCORED)
    assert code == 0, err
    plot = tmp_path / "heads.svg"
    code, out, err = run("test", "reversal-transformer", *argv, "--input", "cab",
                         "--plot", str(plot))
    assert code == 0, err
    assert re.search(r"^Input: +C A B$", out, re.MULTILINE)  # the padding is left out
    assert re.search(r"^Target: +BAC\. ", out, re.MULTILINE)
    assert all(out.count(head) == 1 for head in heads)
    # Column headers: the input's letters (and the decoder-only model's separator)
    keys = r"C +A +B +\|" if architecture == "decoder-only" else r"C +A +B\b"
    assert re.search(r"^ +" + keys, out, re.MULTILINE)
    assert str(plot) in out
    assert plot.read_text().lstrip().startswith("<?xml")
    code, out, err = run("eval", "reversal-transformer", *argv, "--samples", "50")
    assert code == 0, err
    assert out.startswith("held-out exact match ")


def test_a_transformer_report_gives_each_query_a_row_of_percentages(run):
    assert run("train", "reversal-transformer", *TRANSFORMER_TINY, *FEW_SCORED)[0] == 0
    code, out, _ = run("test", "reversal-transformer", *TRANSFORMER_TINY, "--input", "ABCD")
    assert code == 0
    # Encoder self-attention, side by side for the two heads: 4 letters over 4 letters
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("encoder self 1.1"))
    assert "encoder self 1.2" in lines[start]
    for letter, line in zip("ABCD", lines[start + 2: start + 6], strict=True):
        cells = line.split()
        assert cells[0] == letter and cells[5] == letter  # one row of each head
        for row in (cells[1:5], cells[6:10]):
            assert sum(map(int, row)) == pytest.approx(100, abs=2)


def test_the_plot_of_a_transformer_is_every_head(monkeypatch, tmp_path):
    from attnprimer.site import figures

    drawn = {}
    real = figures.plot_heads

    def spy(attention, labels, **kwargs):
        drawn.update(attention)
        return real(attention, labels, **kwargs)

    monkeypatch.setattr(figures, "plot_heads", spy)
    argv = [*TRANSFORMER_TINY, "--architecture", "decoder-only"]
    assert main(["train", "reversal-transformer", *argv, *FEW_SCORED]) == 0
    assert main(["test", "reversal-transformer", *argv, "--input", "AB",
                 "--plot", str(tmp_path / "h.png")]) == 0
    assert sorted(drawn) == ["decoder self 1.1", "decoder self 1.2"]
    assert drawn["decoder self 1.1"].shape == (5, 5)  # A, B, separator, 2 letters written


@pytest.mark.parametrize("scheme", ["none", "relative", "alibi", "rotary", "sinusoidal"])
def test_the_copy_reverse_model_takes_inputs_longer_than_its_training(run, scheme):
    """``--pos-enc`` picks the scheme; an input longer than ``--max-len`` is tested whole, and
    the heads' columns start with the start token ``^``."""
    argv = [*TRANSFORMER_TINY, "--max-len", "4", "--pos-enc", scheme, "--operation", "copy"]
    code, out, err = run("train", "copy-reverse", *argv, *FEW_SCORED)
    assert code == 0, err
    code, out, err = run("test", "copy-reverse", *argv, "--input", "abcdefg")
    assert code == 0, err
    assert re.search(r"^Input: +A B C D E F G$", out, re.MULTILINE)
    assert re.search(r"^Target: +ABCDEFG\. ", out, re.MULTILINE)
    assert re.search(r"^ +\^ +A +B +C +D +E +F +G +\|", out, re.MULTILINE)
    assert all(out.count(head) == 1 for head in ("decoder self 1.1", "decoder self 1.2"))
