"""MkDocs hook: the labs, executed at build time and downloadable as notebooks.

A lab is a Python file in jupytext's percent format, ``docs/labs/<chapter>.py``.
mkdocs-jupyter renders it as a page and runs every cell first (``execute: true``,
``allow_errors: false`` in ``mkdocs.yml``), so a cell that raises fails the build.

An exercise is two code cells, tagged in their ``# %%`` line:

* ``tags=["exercise"]``: what the reader starts from, a stub that raises
  ``NotImplementedError``;
* ``tags=["solution"]``: the answer, which redefines the same function, so the
  build runs every lab *with* its solutions and each check after it must pass.

This hook

* points mkdocs-jupyter's cache at a folder named after the package's source, so a
  change to ``attnprimer`` (an exercise's checks, a model) runs the labs again
  instead of reusing pages rendered by the old code;
* adds each lab to the site as ``labs/<chapter>.ipynb``, the reader's notebook: no
  outputs, and every solution turned into a collapsed "Solution" block to open when
  stuck, so that running the notebook from the top does not overwrite the reader's code;
* on each lab page, folds the solution cells into a collapsed block and adds the
  download link.
"""

from __future__ import annotations

import logging
import posixpath
import re
import shutil
from pathlib import Path, PurePosixPath

import jupytext
import nbformat
from bs4 import BeautifulSoup
from mkdocs.config.defaults import MkDocsConfig
from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File, Files
from mkdocs.structure.pages import Page
from mkdocs.utils import get_relative_url

from attnprimer.training.fingerprints import package_fingerprint

LABS = "labs"  # the folder of docs/ that holds the labs
PLUGIN = "mkdocs-jupyter"
CACHE = Path(".cache") / "mkdocs-jupyter"  # relative to mkdocs.yml

log = logging.getLogger("mkdocs.hooks.labs")


def is_lab(src_uri: str) -> bool:
    """``labs/<name>.py`` is a lab; nothing else is."""
    path = PurePosixPath(src_uri)
    return path.parent.as_posix() == LABS and path.suffix == ".py"


def cell_tags(cell: nbformat.NotebookNode) -> list[str]:
    return list(cell.get("metadata", {}).get("tags", []))


def check_lab(notebook: nbformat.NotebookNode, name: str) -> None:
    """Every exercise cell is followed by its solution, before the next exercise."""
    waiting = None
    for index, cell in enumerate(notebook.cells):
        tags = cell_tags(cell)
        if "exercise" in tags:
            if waiting is not None:
                raise PluginError(f"labs hook: {name}: the exercise in cell {waiting} has no "
                                  f"solution cell before the next exercise (cell {index})")
            waiting = index
        elif "solution" in tags:
            if waiting is None:
                raise PluginError(f"labs hook: {name}: the solution in cell {index} follows "
                                  f"no exercise")
            waiting = None
    if waiting is not None:
        raise PluginError(f"labs hook: {name}: the exercise in cell {waiting} has no solution")


def reader_notebook(source: str, name: str = "lab") -> str:
    """The downloadable notebook (ipynb JSON) of a lab's percent-format ``source``.

    Solutions become Markdown cells holding a collapsed ``<details>`` block, so they
    are there to read, and running the notebook runs the reader's code, not ours.
    """
    notebook = jupytext.reads(source, fmt="py:percent")
    check_lab(notebook, name)
    cells = []
    for cell in notebook.cells:
        if "solution" in cell_tags(cell):
            code = cell.source.strip("\n")
            cell = nbformat.v4.new_markdown_cell(
                f"<details><summary>Solution (open it when stuck)</summary>\n\n"
                f"```python\n{code}\n```\n\n</details>"
            )
        cells.append(cell)
    reader = nbformat.v4.new_notebook(cells=cells)
    reader.metadata = {
        "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
        "language_info": {"name": "python"},
    }
    for index, cell in enumerate(reader.cells):
        if cell.cell_type == "markdown":
            # Links to the site's pages mean nothing in a downloaded notebook: keep the words.
            cell.source = _SITE_LINK.sub(r"\1", cell.source)
        cell.id = f"{name}-{index}"  # stable ids: the same lab gives the same file
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    nbformat.validate(reader)
    return nbformat.writes(reader)


_SITE_LINK = re.compile(r"\[([^\]]+)\]\((?![a-z]+://)[^)\s]+\.(?:md|py)(?:#[^)\s]*)?\)")


def on_config(config: MkDocsConfig) -> None:
    """Key mkdocs-jupyter's page cache by the package's source as well as the lab's text."""
    plugin = config.plugins.get(PLUGIN)
    if plugin is None:
        raise PluginError(f"labs hook: mkdocs.yml must enable the {PLUGIN} plugin")
    if not plugin.config["execute"] or plugin.config["allow_errors"]:
        raise PluginError(f"labs hook: {PLUGIN} must run with execute: true and "
                          f"allow_errors: false, so that a failing lab fails the build")
    root = Path(config.config_file_path).resolve().parent / CACHE
    current = root / package_fingerprint()[:16]
    if root.is_dir():
        for stale in root.iterdir():  # pages rendered by older package code
            if stale != current and stale.is_dir():
                shutil.rmtree(stale)
    plugin.config["cache_dir"] = str(current)


def on_files(files: Files, config: MkDocsConfig) -> Files:
    """Add ``labs/<name>.ipynb``, the reader's notebook, next to each lab's page."""
    labs = [file for file in files if is_lab(file.src_uri)]
    if not labs:
        raise PluginError(f"labs hook: no labs found in docs/{LABS}/")
    for lab in labs:
        name = PurePosixPath(lab.src_uri).stem
        notebook = reader_notebook(Path(lab.abs_src_path).read_text(encoding="utf-8"), name)
        files.append(File.generated(config, f"{LABS}/{name}.ipynb", content=notebook))
    return files


def on_page_content(html: str, page: Page, config: MkDocsConfig, files: Files) -> str:
    """Fold the solutions, drop the notebook's unused MathJax loader, add the download link."""
    if not is_lab(page.file.src_uri):
        return html
    name = PurePosixPath(page.file.src_uri).stem
    soup = BeautifulSoup(html, "html.parser")
    for script in soup.find_all("script"):
        # nbconvert's template loads MathJax from `mathjax_url`, empty here: KaTeX
        # typesets the labs like every other page (docs/javascripts/katex-init.js).
        if script.get("src") == "" or script.get("type") == "text/x-mathjax-config":
            script.decompose()
    for link in soup.select(".jupyter-wrapper a[href]"):
        link["href"] = _page_link(link["href"], page, files)
    folded = 0
    for cell in soup.select("div.celltag_solution"):
        if cell.find_parent("div", class_="celltag_solution") is not None:
            continue  # nbconvert nests two divs per cell; fold the outer one
        block = soup.new_tag("details", attrs={"class": "success lab-solution"})
        summary = soup.new_tag("summary")
        summary.string = "Solution"
        cell.wrap(block)
        block.insert(0, summary)
        folded += 1
    notebook = get_relative_url(f"{LABS}/{name}.ipynb", page.file.url)
    how = get_relative_url(f"{LABS}/", page.file.url) + "#running-a-lab-yourself"
    download = BeautifulSoup(
        f'<p class="lab-download"><a class="md-button" href="{notebook}" download>'
        f'Download this lab as a notebook</a> <span>Run it where <code>attnprimer</code> is '
        f'installed (<a href="{how}">how</a>); its solutions are folded away.</span></p>',
        "html.parser",
    )
    soup.insert(0, download)
    log.debug("labs: %s: %d solutions folded", name, folded)
    return str(soup)



def _page_link(href: str, page: Page, files: Files) -> str:
    """A lab's link to another page's source (a chapter's ``.md``, a lab's ``.py``), made a
    link to that page's URL.

    mkdocs resolves such links in Markdown pages, not in a notebook's HTML; an
    unknown page fails the build, as a broken link in a chapter would.
    """
    target, _, anchor = href.partition("#")
    if "://" in target or PurePosixPath(target).suffix not in {".md", ".py"}:
        return href
    path = posixpath.normpath(posixpath.join(posixpath.dirname(page.file.src_uri), target))
    file = files.get_file_from_path(path)
    if file is None:
        raise PluginError(f"labs hook: {page.file.src_uri} links to {href}, which is not a page")
    url = get_relative_url(file.url, page.file.url)
    return f"{url}#{anchor}" if anchor else url
