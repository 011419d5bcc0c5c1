"""What a rebuild where nothing changed reads: fingerprints and stamps, without torch."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import attnprimer
from attnprimer.site.figures.registry import dark_twin
from attnprimer.training.fingerprints import current_outputs, record_outputs
from docs_hooks import load_hook

ROOT = Path(__file__).parents[1]


def test_the_modules_a_warm_docs_build_imports_do_not_import_torch():
    code = ("import sys, attnprimer, attnprimer.training.fingerprints, attnprimer.training.files, "
            "attnprimer.site.code_views; attnprimer.training.fingerprints.package_fingerprint(); "
            "print('torch' in sys.modules)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            check=True)
    assert result.stdout.strip() == "False"


def test_every_public_name_loads_from_its_module():
    for name in attnprimer.__all__:
        module = importlib.import_module(attnprimer._MODULE_OF[name])
        assert getattr(attnprimer, name) is getattr(module, name), name


def test_the_type_checking_imports_name_the_same_public_names():
    tree = ast.parse((ROOT / "src" / "attnprimer" / "__init__.py").read_text(encoding="utf-8"))
    guarded = next(node for node in tree.body if isinstance(node, ast.If))
    imported = {node.module: [alias.name for alias in node.names] for node in guarded.body}
    assert imported == attnprimer._PUBLIC
    assert sorted(attnprimer.__all__) == sorted(attnprimer._MODULE_OF)


def test_an_unknown_name_is_an_attribute_error():
    assert not hasattr(attnprimer, "no_such_name")


def test_a_stamp_goes_stale_when_the_package_code_changes(package_copy, tmp_path):
    made, model = tmp_path / "figure.svg", tmp_path / "model.pt"
    made.write_text("<svg/>")
    model.write_bytes(b"weights")
    record_outputs(tmp_path / "stamp.json", inputs=[model], outputs=[made])
    assert current_outputs(tmp_path / "stamp.json") == [made]

    path = package_copy / "masks.py"  # a docstring: still current
    path.write_text(path.read_text(encoding="utf-8").replace('"""', '"""Edited. ', 1),
                    encoding="utf-8")
    assert current_outputs(tmp_path / "stamp.json") == [made]
    path.write_text(path.read_text(encoding="utf-8") + "\nEDITED = 1\n", encoding="utf-8")
    assert current_outputs(tmp_path / "stamp.json") is None


def test_a_stamp_goes_stale_when_an_input_changes_or_goes(tmp_path):
    made, model = tmp_path / "figure.svg", tmp_path / "model.pt"
    made.write_text("<svg/>")
    model.write_bytes(b"weights")
    record_outputs(tmp_path / "stamp.json", inputs=[model], outputs=[made])
    model.write_bytes(b"other weights")
    assert current_outputs(tmp_path / "stamp.json") is None
    record_outputs(tmp_path / "stamp.json", inputs=[model], outputs=[made])
    model.unlink()
    assert current_outputs(tmp_path / "stamp.json") is None
    assert current_outputs(tmp_path / "no-stamp.json") is None


def test_the_figures_hook_names_dark_twins_as_the_registry_does():
    hook = load_hook("figures")
    source = "../figures/qkv/heatmap.svg"
    html = hook.on_page_content(f'<img alt="x" src="{source}">', None, None, None)
    assert f'src="{dark_twin(source).as_posix()}#only-dark"' in html


def test_online_softmax_at_the_top_is_its_module_whatever_was_imported_first():
    import attnprimer.tiled  # imports the module attnprimer.online_softmax

    assert attnprimer.online_softmax.online_softmax.__module__ == "attnprimer.online_softmax"


def test_the_figures_hook_trains_and_renders_in_a_fresh_process(monkeypatch, tmp_path):
    """mkdocs serve rebuilds in one process, which keeps the package modules an earlier build
    imported: the hook hands training and rendering to one spawned process, which imports the
    code as it is now, and stamps what that process reports."""
    from attnprimer.site.figures.registry import SiteBuild, render_site
    from attnprimer.training import workers

    calls = []
    built = SiteBuild(["counting seed=0"], 1.0, [tmp_path / "model.pt"], [tmp_path / "a.svg"])
    for path in (*built.models, *built.artifacts):
        path.write_text("x")

    def spawned(function, items, *, workers):
        calls.append((function, items, workers))
        return [built]

    monkeypatch.setattr(workers, "run_in_processes", spawned)
    hook = load_hook("figures")
    assert hook._train_and_render(tmp_path) == built.artifacts
    assert calls == [(render_site, [tmp_path], 1)]
    assert current_outputs(tmp_path / hook.STAMP) == built.artifacts  # stamped from its report


def test_the_explorer_hook_exports_in_a_fresh_process_and_then_only_when_stale(monkeypatch,
                                                                               tmp_path):
    """The explorer's export runs in a spawned process too (the code as it is now), which also
    names the models the stamp records; a stamp that is still current skips it, without
    spawning anything."""
    from types import SimpleNamespace

    from attnprimer.site.explorer.export import export_site
    from attnprimer.training import workers

    model = tmp_path / "model.pt"
    model.write_text("weights")
    calls = []

    def spawned(function, items, *, workers):
        calls.append((function, items, workers))
        items[0].parent.mkdir(parents=True, exist_ok=True)
        items[0].write_text("{}")
        return [(True, [model])]

    monkeypatch.setattr(workers, "run_in_processes", spawned)
    hook = load_hook("explorer")
    config = SimpleNamespace(config_file_path=str(tmp_path / "mkdocs.yml"),
                             site_dir=str(tmp_path / "site"), use_directory_urls=True,
                             plugins=SimpleNamespace(_current_plugin=None))
    exported = tmp_path / hook.GENERATED / "models.json"

    site_path = f"{hook.SITE_FOLDER}/models.json"

    def built_files():
        files = hook.on_files(hook.Files([]), config)
        return {file.src_uri: file.abs_src_path for file in files}

    monkeypatch.setattr(hook, "EXPORTS", {"models.json": hook.EXPORTS["models.json"]})
    assert built_files() == {site_path: str(exported)}
    assert calls == [(export_site, [exported], 1)]
    assert built_files() == {site_path: str(exported)}
    assert len(calls) == 1  # the stamp was current: nothing spawned
    model.write_text("retrained")  # a model the spawned export named changed
    built_files()
    assert len(calls) == 2


def test_the_explorer_export_names_the_checkpoint_of_every_model_it_runs(monkeypatch, tmp_path):
    from attnprimer.site.explorer import export as explorer
    from attnprimer.training.model_cache import cached_path

    written = []
    monkeypatch.setattr(explorer, "write_explorer_data", lambda path: written.append(path) or True)
    models = list(explorer.explorer_models().values())
    assert explorer.export_site(tmp_path / "models.json") == (
        True, [cached_path(model.task, model.config) for model in models])
    assert written == [tmp_path / "models.json"]
    assert {path.name.split("-")[0] for path in explorer.export_site(tmp_path / "m.json")[1]} == {
        "counting", "signal", "difference", "reversal"}
