"""Checkpoints: atomic saving, safe loading, and every way a damaged file is refused."""

from __future__ import annotations

import io
import os
from pathlib import Path

import pytest
import torch

from attnprimer.training.checkpoints import CheckpointError, load_checkpoint, save_checkpoint
from attnprimer.training.train import held_out_generator
from tiny_models import (
    TINY_CONFIG,
    _empty,
    _foreign_pickle,
    _missing_fields,
    _other_format,
    _plain_pickle_of_a_list,
    _random_bytes,
    _text,
    _torch_save_of_a_tensor,
    _truncated,
    _unknown_task,
    _wrong_shapes,
    states_equal,
)

pytestmark = pytest.mark.usefixtures("temporary_cache")


# --- checkpoints -------------------------------------------------------------------------------


def test_checkpoint_round_trip_gives_identical_predictions(tiny, tmp_path):
    path = save_checkpoint(tiny, tmp_path / "nested" / "tiny.pt")
    assert path == tmp_path / "nested" / "tiny.pt"
    assert path.is_file()
    loaded = load_checkpoint(path)
    assert loaded.task == tiny.task
    assert loaded.config == tiny.config
    assert loaded.history == tiny.history
    assert loaded.train_seconds == tiny.train_seconds
    assert not loaded.model.training
    assert states_equal(loaded.model.state_dict(), tiny.model.state_dict())
    inputs = tiny.task.sample(200, held_out_generator(9)).inputs
    with torch.no_grad():
        expected, got = tiny.model(inputs), loaded.model(inputs)
    assert torch.equal(got.logits, expected.logits)
    assert torch.equal(got.attention["encoder-decoder"], expected.attention["encoder-decoder"])


def test_a_checkpoint_from_before_the_schedule_setting_loads_as_cosine(tiny, tmp_path):
    path = save_checkpoint(tiny, tmp_path / "old.pt")
    payload = torch.load(path, weights_only=True)
    del payload["train_config"]["schedule"]
    torch.save(payload, path)
    assert load_checkpoint(path).config == TINY_CONFIG


def test_checkpoint_accepts_a_string_path(tiny, tmp_path):
    path = save_checkpoint(tiny, str(tmp_path / "tiny.pt"))
    assert isinstance(path, Path)
    assert load_checkpoint(str(path)).config == tiny.config


def test_save_leaves_no_temporary_files(tiny, tmp_path):
    folder = tmp_path / "out"
    save_checkpoint(tiny, folder / "a.pt")
    save_checkpoint(tiny, folder / "a.pt")  # overwriting too
    save_checkpoint(tiny, folder / "b.pt")
    assert sorted(path.name for path in folder.iterdir()) == ["a.pt", "b.pt"]


def _exploding_save(exception):
    def save(obj, file, *args, **kwargs):
        file.write(b"PK\x03\x04 half a checkpoint")  # some bytes hit the disk first
        file.flush()
        raise exception

    return save


@pytest.mark.parametrize("exception", [OSError("disk full"), KeyboardInterrupt()])
def test_a_failed_save_leaves_nothing_behind(tiny, tmp_path, monkeypatch, exception):
    folder = tmp_path / "out"
    monkeypatch.setattr(torch, "save", _exploding_save(exception))
    with pytest.raises(type(exception)):
        save_checkpoint(tiny, folder / "tiny.pt")
    assert not (folder / "tiny.pt").exists()
    assert list(folder.iterdir()) == []


def test_a_failed_save_keeps_the_previous_checkpoint(tiny, tmp_path, monkeypatch):
    path = save_checkpoint(tiny, tmp_path / "tiny.pt")
    before = path.read_bytes()
    with monkeypatch.context() as patch:
        patch.setattr(torch, "save", _exploding_save(RuntimeError("boom")))
        with pytest.raises(RuntimeError, match="boom"):
            save_checkpoint(tiny, path)
    assert path.read_bytes() == before
    assert [entry.name for entry in tmp_path.iterdir()] == ["tiny.pt"]
    assert load_checkpoint(path).config == tiny.config


@pytest.mark.parametrize(
    "damage",
    [_truncated, _random_bytes, _foreign_pickle, _plain_pickle_of_a_list, _torch_save_of_a_tensor,
     _other_format, _missing_fields, _unknown_task, _wrong_shapes, _empty, _text],
)
def test_loading_a_damaged_checkpoint_raises_checkpoint_error(tiny, tmp_path, damage):
    path = tmp_path / "damaged.pt"
    damage(tiny, path)
    with pytest.raises(CheckpointError) as caught:
        load_checkpoint(path)
    message = str(caught.value)
    assert message.strip()
    assert "\n" not in message
    assert str(path) in message


def test_loading_a_checkpoint_without_history_raises_checkpoint_error(tiny, tmp_path):
    path = save_checkpoint(tiny, tmp_path / "tiny.pt")
    payload = torch.load(path, weights_only=True)
    del payload["history"]
    torch.save(payload, path)
    with pytest.raises(CheckpointError):
        load_checkpoint(path)


def test_loading_a_missing_checkpoint_raises_checkpoint_error(tmp_path):
    with pytest.raises(CheckpointError, match="no checkpoint"):
        load_checkpoint(tmp_path / "absent.pt")
    with pytest.raises(CheckpointError, match="no checkpoint"):
        load_checkpoint(tmp_path)  # a folder is not a checkpoint either


def test_checkpoint_is_loaded_with_weights_only(tiny, tmp_path):
    # A pickle that would run code when unpickled must be refused, not executed.
    marker = tmp_path / "executed"

    class Exploit:
        def __reduce__(self):
            return (os.mkdir, (str(marker),))

    path = tmp_path / "evil.pt"
    buffer = io.BytesIO()
    torch.save({"format": 1, "payload": Exploit()}, buffer)
    path.write_bytes(buffer.getvalue())
    with pytest.raises(CheckpointError):
        load_checkpoint(path)
    assert not marker.exists()


