"""The labs: their structure, their exercises, the reader's notebook, and the build hook.

The docs build runs every lab with its solutions (mkdocs-jupyter, ``execute: true``). These
tests check what that run cannot: that each stub, as the reader gets it, fails the check
with a useful message, that the downloadable notebook hides the solutions, and that a
failing lab fails a build.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import jupytext
import nbformat
import pytest

from attnprimer.site.exercises import EXERCISES, ExerciseError, check
from docs_hooks import load_hook

ROOT = Path(__file__).parents[1]
LABS = sorted((ROOT / "docs" / "labs").glob("*.py"))
CHAPTERS = sorted(path.stem for path in (ROOT / "docs" / "chapters").glob("*.md"))
CHECK = re.compile(r'exercises\.check\(\s*"(\w+)",\s*(\w+)\)')


hook = load_hook("labs")


def _notebook(path: Path) -> nbformat.NotebookNode:
    return jupytext.read(path)


def _exercises(path: Path) -> list[tuple[str, str, list[tuple[str, str]]]]:
    """(exercise code, solution code, [(exercise name, function name) checked after]) per
    exercise."""
    cells = _notebook(path).cells
    found = []
    for index, cell in enumerate(cells):
        if "exercise" in hook.cell_tags(cell):
            solution = cells[index + 1]
            assert "solution" in hook.cell_tags(solution), f"{path.name}: cell {index + 1}"
            checks = []
            for later in cells[index + 2:]:
                if "exercise" in hook.cell_tags(later):
                    break
                if later.cell_type == "code":
                    checks += CHECK.findall(later.source)
            found.append((cell.source, solution.source, checks))
    return found


def test_there_is_a_lab_per_chapter_in_the_nav():
    assert sorted(path.stem for path in LABS) == CHAPTERS
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    for path in LABS:
        assert f"labs/{path.name}" in nav


@pytest.mark.parametrize("path", LABS, ids=lambda path: path.stem)
def test_a_lab_has_a_title_and_pairs_each_exercise_with_a_solution(path):
    notebook = _notebook(path)
    hook.check_lab(notebook, path.stem)  # raises on an unpaired exercise or solution
    assert notebook.cells[0].cell_type == "markdown"
    assert notebook.cells[0].source.startswith("# Lab: ")


def test_the_labs_together_exercise_every_checker():
    checked = {name for path in LABS for _, _, checks in _exercises(path) for name, _ in checks}
    assert checked == set(EXERCISES)


@pytest.mark.parametrize("path", [path for path in LABS if _exercises(path)],
                         ids=lambda path: path.stem)
def test_each_stub_fails_its_check_and_each_solution_passes(path):
    # The reader's view: the stub cell alone fails "not written yet"; after the solution
    # cell, the same check passes. Run in one namespace, like a kernel would.
    setup = "\n".join(cell.source for cell in _notebook(path).cells[:2]
                      if cell.cell_type == "code")
    namespace: dict = {}
    exec(_without_magics(setup), namespace)
    for stub, solution, checks in _exercises(path):
        assert checks, "every exercise is followed by a check"
        exec(stub, namespace)
        for name, function in checks:
            with pytest.raises(ExerciseError, match=f"✗ {name} is not written yet"):
                check(name, namespace[function])
        exec(solution, namespace)
        for name, function in checks:
            assert repr(check(name, namespace[function])).startswith(f"✓ {name}")


def _without_magics(code: str) -> str:
    return "\n".join(line for line in code.splitlines() if not line.lstrip().startswith("%"))


@pytest.mark.parametrize("path", LABS, ids=lambda path: path.stem)
def test_the_readers_notebook_folds_the_solutions_and_has_no_outputs(path):
    text = hook.reader_notebook(path.read_text(encoding="utf-8"), path.stem)
    assert text == hook.reader_notebook(path.read_text(encoding="utf-8"), path.stem)  # stable
    reader = nbformat.reads(text, as_version=4)
    nbformat.validate(reader)
    assert reader.metadata.kernelspec.name == "python3"
    assert all(cell.outputs == [] for cell in reader.cells if cell.cell_type == "code")
    assert not any("solution" in hook.cell_tags(cell) and cell.cell_type == "code"
                   for cell in reader.cells)
    folded = [cell.source for cell in reader.cells
              if cell.cell_type == "markdown" and cell.source.startswith("<details>")]
    solutions = [solution for _, solution, _ in _exercises(path)]
    assert len(folded) == len(solutions)
    for block, solution in zip(folded, solutions, strict=True):
        assert solution.strip() in block
    markdown = "\n".join(cell.source for cell in reader.cells if cell.cell_type == "markdown")
    assert not re.search(r"\.(md|py)(#[^)]*)?\)", markdown)  # links to site pages: plain words
    # the magics come back as magics, for Jupyter
    assert "%matplotlib inline" in reader.cells[1].source or not any(
        "%matplotlib" in cell.source for cell in reader.cells)


def test_a_lab_that_pairs_badly_is_refused():
    source = '# %% [markdown]\n# # Lab: x\n\n# %% tags=["exercise"]\ndef f():\n    pass\n'
    with pytest.raises(Exception, match="has no solution"):
        hook.reader_notebook(source, "x")


def test_site_links_are_kept_as_words():
    assert hook._SITE_LINK.sub(r"\1", "see [the chapter](../chapters/qkv.md#masks), [a lab]"
                               "(bahdanau.py) and [PyTorch](https://pytorch.org/a.md)") == (
        "see the chapter, a lab and [PyTorch](https://pytorch.org/a.md)")


# --- a real build with the hook ---------------------------------------------------------------

GOOD_LAB = '''# %% [markdown]
# # Lab: tiny
#
# Back to [the home page](../index.md).

# %% tags=["exercise"]
def double(x):
    raise NotImplementedError


# %% tags=["solution"]
def double(x):
    return 2 * x


# %%
assert double(21) == 42
print("checked")
'''


def _build(tmp_path: Path, lab: str) -> subprocess.CompletedProcess:
    (tmp_path / "docs" / "labs").mkdir(parents=True)
    (tmp_path / "docs" / "index.md").write_text("# Home\n")
    (tmp_path / "docs" / "labs" / "tiny.py").write_text(lab)
    (tmp_path / "mkdocs.yml").write_text(
        "site_name: tiny\nstrict: true\n"
        "nav: [index.md, labs/tiny.py]\n"
        "plugins:\n  - mkdocs-jupyter:\n      include: ['labs/*.py']\n"
        "      execute: true\n      allow_errors: false\n"
        f"hooks: [{ROOT / 'docs' / 'hooks' / 'labs.py'}]\n"
    )
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "NO_MKDOCS_2_WARNING": "1"}, check=False)


def test_a_lab_builds_with_its_solution_folded_and_its_notebook_beside_it(tmp_path):
    result = _build(tmp_path, GOOD_LAB)
    assert result.returncode == 0, result.stderr
    page = (tmp_path / "site" / "labs" / "tiny" / "index.html").read_text(encoding="utf-8")
    assert page.count('<details class="success lab-solution">') == 1
    assert "checked" in page  # the cell after the solution ran
    assert 'href="../tiny.ipynb"' in page and 'href="../../"' in page  # download, and link
    reader = json.loads((tmp_path / "site" / "labs" / "tiny.ipynb").read_text(encoding="utf-8"))
    assert any("".join(cell["source"]).startswith("<details>") for cell in reader["cells"]
               if cell["cell_type"] == "markdown")


def test_a_lab_whose_cell_raises_fails_the_build(tmp_path):
    result = _build(tmp_path, GOOD_LAB.replace("return 2 * x", "return 2 * x + 1"))
    assert result.returncode != 0
    assert "AssertionError" in result.stderr + result.stdout
