"""Developer sessions: ``nox -s lint``, ``tests``, ``claims``, ``docs``, ``serve``, ``figures``,
``train``, ``bench``, ``site_tests``.

Every session installs through ``constraints.txt``, which pins torch to the
CPU build on our machines (an unpinned torch pulls gigabytes of CUDA
packages). Sessions use pip and virtualenv, which see that local wheel.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import nox

ROOT = Path(__file__).parent
PYPROJECT = nox.project.load_toml(ROOT / "pyproject.toml")
CONSTRAINTS = ["--constraint", str(ROOT / "constraints.txt")]

# Python keeps compiled modules (and pytest its assertion-rewritten tests) in __pycache__
# unless PYTHONDONTWRITEBYTECODE is set, as it is on some machines (ours): then every process
# compiles again what it imports, and each test worker rewrites the asserts of every test module
# (measured: collecting the tests took 15.8 s with it set, 9.5 s without). Empty = unset.
BYTECODE = {"PYTHONDONTWRITEBYTECODE": ""}

# KaTeX, served from the site itself so that math renders offline.
KATEX_VERSION = "0.16.22"  # keep equal to KATEX_VERSION in docs/hooks/math_assets.py
MATH_ASSETS = ROOT / ".cache" / "math"

nox.options.default_venv_backend = "virtualenv"
nox.options.reuse_venv = "yes"
nox.options.sessions = ["lint", "tests", "docs", "claims"]
nox.options.error_on_missing_interpreters = True


def install(session: nox.Session, *groups: str, package: bool = True) -> None:
    """Install the package (editable, unless ``package`` is false) and the given dependency
    groups, through the constraints.

    A reused venv that already holds exactly these requirements is left alone: pip would
    spend seconds finding that out, and the package is editable, so its code is current.
    """
    requirements = [requirement for group in groups
                    for requirement in nox.project.dependency_groups(PYPROJECT, group)]
    wanted = "\n".join([(ROOT / "pyproject.toml").read_text(),
                        (ROOT / "constraints.txt").read_text(), str(package), *requirements])
    stamp = Path(session.virtualenv.location) / ".attnprimer-installed"
    if stamp.is_file() and stamp.read_text() == wanted:
        session.log("requirements unchanged since the last install: not reinstalling")
        return
    session.install(*CONSTRAINTS, *(["--editable", "."] if package else []), *requirements)
    if not session._runner.global_config.no_install:  # -R skips the install: no stamp then
        stamp.write_text(wanted)


@nox.session(python="3.11")
def lint(session: nox.Session) -> None:
    """Lint the code with ruff (the rules and why: ``[tool.ruff.lint]`` in pyproject.toml) and
    the GitHub workflows with zizmor, offline; neither needs the package installed."""
    install(session, "lint", package=False)
    session.run("ruff", "check", *session.posargs)
    session.run("zizmor", "--offline", "--persona", "pedantic", ".github/")


@nox.session(python="3.11")
def tests(session: nox.Session) -> None:
    """Run the tests and the doctests of src/ that need no site model, one worker per core
    (extra pytest arguments pass through; ``-- -n 0`` runs it in one process).

    They run against an empty model cache of their own, and the session then checks that no
    site model was trained into it: a test that needs one belongs in ``tests/claims``."""
    install(session, "tests")
    cache = tempfile.mkdtemp(prefix="attnprimer-tests-cache-")
    try:
        # worksteal: a worker that runs out takes tests from the other's queue, so the slow
        # fresh-process tests do not leave one worker busy while the other waits
        session.run("pytest", "-n", "auto", "--dist", "worksteal", *session.posargs,
                    env={"ATTNPRIMER_CACHE_DIR": cache, **BYTECODE})
        session.run("python", "-c", NO_SITE_MODEL_TRAINED, env={"ATTNPRIMER_CACHE_DIR": cache})
    finally:
        shutil.rmtree(cache, ignore_errors=True)


NO_SITE_MODEL_TRAINED = """
from attnprimer.training.model_cache import cached_path
from attnprimer.site.catalogue import SITE_MODELS
trained = [model.label for model in SITE_MODELS if cached_path(model.task, model.config).is_file()]
if trained:
    raise SystemExit("the tests trained site models (move their tests to tests/claims): "
                     + ", ".join(trained))
print(f"no site model was trained (none of the {len(SITE_MODELS)} is in the tests' cache)")
"""


@nox.session(python="3.11")
def claims(session: nox.Session) -> None:
    """Check every claim the pages make on the site's trained models (``tests/claims``),
    training first what the model cache lacks, with a line per model."""
    install(session, "tests")
    session.run("attnprimer", "train", "all", "--no-eval")
    session.run("pytest", "tests/claims", "-n", "auto", "--dist", "worksteal", *session.posargs,
                env=BYTECODE)


def _prepare_math(session: nox.Session) -> None:
    """Fetch KaTeX from the npm registry into .cache/math, once."""
    if (MATH_ASSETS / "node_modules" / "katex" / "dist" / "katex.min.js").is_file():
        return
    session.run(
        "npm", "install", "--prefix", str(MATH_ASSETS), "--no-save", "--no-audit", "--no-fund",
        f"katex@{KATEX_VERSION}", external=True,
    )


# Material 9.8 prints an end-of-life banner on every build; it is not a warning about us.
MKDOCS_ENV = {"NO_MKDOCS_2_WARNING": "1", **BYTECODE}


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
    """Print the time and peak memory of attention against the sequence length on this machine
    (forward only; then forward and backward, materialised, tiled and fused, the numbers of the
    chapter "Attention at scale"), greedy decoding with and without a key/value cache, the
    softmax over short rows with and without padding, a training step of each kind of site model
    at its batch size and at three times it (what batching seeds could gain), and how long each
    of the site's models took to train."""
    install(session)
    session.run("python", "-m", "attnprimer.site.bench.attention_cost", *session.posargs)
    session.run("python", "-m", "attnprimer.site.bench.training_attention_cost")
    session.run("python", "-m", "attnprimer.site.experiments.kv_cache")
    session.run("python", "-c", SHORT_ROWS)
    session.run("python", "-m", "attnprimer.site.bench.training_step_cost")
    session.run("python", "-c", TRAINING_TIMES)
    print(BUDGETS)


SHORT_ROWS = """
import timeit, torch
from attnprimer.attention import softmax_over_keys
torch.set_num_threads(1)
print("softmax of 4,000 rows, one thread: torch.softmax, then softmax_over_keys (microseconds)")
for keys in (4, 8, 10, 15, 16, 24, 32):
    scores = torch.randn(4000, keys)
    times = [min(timeit.repeat(lambda: softmax(scores), number=100, repeat=5)) * 1e4
             for softmax in (lambda s: torch.softmax(s, dim=-1), softmax_over_keys)]
    print(f"{keys:>3} keys {times[0]:8.0f} {times[1]:8.0f}")
"""

TRAINING_TIMES = """
import os
from attnprimer.training.model_cache import get_trained, train_missing
from attnprimer.site.catalogue import SITE_MODELS
train_missing((model.task, model.config) for model in SITE_MODELS)
totals = {}
for model in SITE_MODELS:
    seconds = get_trained(model.task, model.config).train_seconds
    totals[model.task.name] = totals.get(model.task.name, 0.0) + seconds
    print(f"{model.label:<58}{seconds:6.1f} s")
for name, seconds in totals.items():
    print(f"{'all ' + name + ' models':<58}{seconds:6.1f} s (as recorded when each was trained)")
# A cold build trains one model per CPU, so this is the least a cold nox -s docs can spend
# training.
total, cpus = sum(totals.values()), os.cpu_count() or 1
print(f"{'all site models':<58}{total:6.1f} s: on {cpus} CPUs a cold build trains for at "
      f"least {total / cpus / 60:.1f} min, before it renders anything")
verdict = "within" if total <= 2800 else "OVER"
print(f"site training: {total:,.0f} CPU-s, {verdict} the budget of 2,800 CPU-s for the eight "
      "chapters (each new chapter states its own share, at most 300 CPU-s)")
"""

BUDGETS = """
The standing budgets, measured by hand (never in a timed test):
  nox -s tests            pytest <= 60 s from a fresh clone with an empty model cache,
                          no site model trained (the session checks that last part itself)
  nox -s claims           <= 60 s of pytest with a warm model cache
  nox -s docs             <= 10 s warm; <= 30 min cold from a fresh clone on 2 cores
                          (+ at most 3 min for each chapter added after the eight)
  site training           the recorded training times above: <= 2,800 CPU-s for the eight
                          chapters, <= 300 CPU-s for each new chapter
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
    session.run("pytest", "tests/site", *session.posargs,
                env={"ATTNPRIMER_SITE_TESTS": "1", **BYTECODE})
