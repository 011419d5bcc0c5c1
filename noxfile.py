"""Developer sessions: ``nox -s tests``, ``docs``, ``serve``, ``figures``, ``train``, ``bench``,
``site_tests``.

Every session installs through ``constraints.txt``, which pins torch to the
CPU build on our machines (an unpinned torch pulls gigabytes of CUDA
packages). Sessions use pip and virtualenv, which see that local wheel.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import nox

ROOT = Path(__file__).parent
PYPROJECT = nox.project.load_toml(ROOT / "pyproject.toml")
CONSTRAINTS = ["--constraint", str(ROOT / "constraints.txt")]

# KaTeX, served from the site itself so that math renders offline.
KATEX_VERSION = "0.16.22"  # keep equal to KATEX_VERSION in docs/hooks/math_assets.py
MATH_ASSETS = ROOT / ".cache" / "math"

nox.options.default_venv_backend = "virtualenv"
nox.options.reuse_venv = "yes"
nox.options.sessions = ["tests", "docs"]
nox.options.error_on_missing_interpreters = True


def install(session: nox.Session, *groups: str) -> None:
    """Install the package (editable) and the given dependency groups, through the constraints."""
    requirements = [req for group in groups for req in nox.project.dependency_groups(PYPROJECT, group)]
    session.install(*CONSTRAINTS, "--editable", ".", *requirements)


@nox.session(python="3.11")
def tests(session: nox.Session) -> None:
    """Run the test suite and the doctests of src/ (extra pytest arguments pass through)."""
    install(session, "tests")
    session.run("pytest", *session.posargs)


def _prepare_math(session: nox.Session) -> None:
    """Fetch KaTeX from the npm registry into .cache/math, once."""
    if (MATH_ASSETS / "node_modules" / "katex" / "dist" / "katex.min.js").is_file():
        return
    session.run(
        "npm", "install", "--prefix", str(MATH_ASSETS), "--no-save", "--no-audit", "--no-fund",
        f"katex@{KATEX_VERSION}", external=True,
    )


# Material 9.8 prints an end-of-life banner on every build; it is not a warning about us.
MKDOCS_ENV = {"NO_MKDOCS_2_WARNING": "1"}


@nox.session(python="3.11")
def docs(session: nox.Session) -> None:
    """Build the site into site/ strictly: training, figures and tables included."""
    install(session, "docs")
    _prepare_math(session)
    session.run("mkdocs", "build", "--strict", *session.posargs, env=MKDOCS_ENV)


@nox.session(python="3.11", default=False)
def serve(session: nox.Session) -> None:
    """Serve the site at http://127.0.0.1:8000, rebuilding on changes to docs/ or src/."""
    install(session, "docs")
    _prepare_math(session)
    session.run("mkdocs", "serve", "--dev-addr", "127.0.0.1:8000", *session.posargs, env=MKDOCS_ENV)


@nox.session(python="3.11", default=False)
def figures(session: nox.Session) -> None:
    """Render every figure and table of the site into build/figures, printing each file."""
    install(session)
    session.run("attnprimer", "figures", "--out", str(ROOT / "build" / "figures"), *session.posargs)


@nox.session(python="3.11", default=False)
def train(session: nox.Session) -> None:
    """Train and cache every model the site uses, printing held-out accuracy."""
    install(session)
    session.run("attnprimer", "train", "all", *session.posargs)


@nox.session(python="3.11", default=False)
def bench(session: nox.Session) -> None:
    """Print the time and peak memory of attention against the sequence length on this machine,
    and how long the site's encoder-decoders took to train (the RNN chapters' budget: 2 minutes)."""
    install(session)
    session.run("python", "-m", "attnprimer.cost", *session.posargs)
    session.run("python", "-c", TRAINING_TIMES)


TRAINING_TIMES = """
from attnprimer.figures import SITE_MODELS
from attnprimer.train import get_trained, train_missing
reversal = [spec for label, spec in SITE_MODELS.items() if label.startswith("reversal")]
train_missing(reversal, workers=1)  # one at a time: the times are then not inflated
total = 0.0
for label, spec in SITE_MODELS.items():
    if label.startswith("reversal"):
        seconds = get_trained(*spec).train_seconds
        total += seconds
        print(f"{label:<36}{seconds:6.1f} s")
print(f"{'all encoder-decoders':<36}{total:6.1f} s (as recorded when each was trained)")
"""


@nox.session(python="3.11", default=False)
def site_tests(session: nox.Session) -> None:
    """Build the site, then test every page in Debian's chromium through Playwright, offline."""
    if shutil.which("chromium") is None:
        session.error("Debian's chromium is missing: apt-get install chromium "
                      "(Playwright cannot download its own browser here)")
    install(session, "docs", "site-tests")
    _prepare_math(session)
    session.run("mkdocs", "build", "--strict", env=MKDOCS_ENV)
    session.run("pytest", "tests/site", *session.posargs, env={"ATTNPRIMER_SITE_TESTS": "1"})
