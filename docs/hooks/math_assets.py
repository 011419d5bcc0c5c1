"""MkDocs hook: serve KaTeX from the built site itself.

The site must typeset math with no network, and nothing copied from another project is
committed, so KaTeX is neither loaded from a CDN nor vendored into git. A build session
installs the published npm package once into the git-ignored cache (``nox -s docs`` does
this in ``_prepare_math``):

    npm install --prefix .cache/math --no-save --no-audit --no-fund katex@0.16.22

and this hook checks that exactly that version is there, then adds the few files a browser
needs to the site as generated files under ``assets/vendor/katex/``. ``mkdocs.yml`` loads
them via ``extra_css``/``extra_javascript``; ``docs/javascripts/katex-init.js`` renders the
``.arithmatex`` elements that ``pymdownx.arithmatex`` (``generic: true``) leaves in pages,
and, with KaTeX's auto-render extension, the ``$...$`` math of the labs' Markdown cells.

Only the woff2 fonts are shipped: every browser that runs KaTeX supports woff2, so the
woff/ttf fallbacks named in ``katex.min.css`` are never requested.
"""

from __future__ import annotations

import json
from pathlib import Path

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File, Files

KATEX_VERSION = "0.16.22"  # keep equal to KATEX_VERSION in noxfile.py
CACHE_PREFIX = ".cache/math"  # relative to the directory holding mkdocs.yml
PREPARE_COMMAND = (
    f"npm install --prefix {CACHE_PREFIX} --no-save --no-audit --no-fund katex@{KATEX_VERSION}"
)
SITE_DIR = "assets/vendor/katex"  # where the files land in the built site

# File in the npm package -> path below SITE_DIR.
_REQUIRED = {
    "dist/katex.min.js": "katex.min.js",
    "dist/katex.min.css": "katex.min.css",
    "dist/contrib/auto-render.min.js": "auto-render.min.js",  # the labs' $...$ (notebooks)
    "LICENSE": "LICENSE.txt",
}
_FONTS = "dist/fonts"

_assets: dict[str, Path] = {}


def _fail(message: str) -> PluginError:
    return PluginError(f"math_assets hook: {message}")


def _package_dir(config: MkDocsConfig) -> Path:
    root = Path(config.config_file_path).resolve().parent
    return root / CACHE_PREFIX / "node_modules" / "katex"


def _find_assets(package: Path) -> dict[str, Path]:
    manifest = package / "package.json"
    if not manifest.is_file():
        raise _fail(
            f"KaTeX {KATEX_VERSION} is not installed in {package.parent.parent}.\n"
            f"Prepare it once from the repository root (needs npm and the npm registry), "
            f"or run `nox -s docs`:\n"
            f"    {PREPARE_COMMAND}"
        )
    found = json.loads(manifest.read_text(encoding="utf-8")).get("version")
    if found != KATEX_VERSION:
        raise _fail(
            f"{package} holds KaTeX {found}, but this hook is pinned to {KATEX_VERSION}. "
            f"Delete {CACHE_PREFIX} and run:\n"
            f"    {PREPARE_COMMAND}"
        )
    assets = {dest: package / source for source, dest in _REQUIRED.items()}
    fonts = sorted((package / _FONTS).glob("*.woff2"))
    missing = [str(path) for path in assets.values() if not path.is_file()]
    if missing or not fonts:
        raise _fail(f"incomplete KaTeX install, missing {missing or [_FONTS + '/*.woff2']}")
    assets.update({f"fonts/{font.name}": font for font in fonts})
    return assets


def on_config(config: MkDocsConfig) -> None:
    """Find and check the KaTeX files before any page is rendered (fails fast)."""
    global _assets
    _assets = _find_assets(_package_dir(config))

    # mkdocs.yml must load what this hook serves; catch the two drifting apart.
    wanted = [
        ("extra_css", f"{SITE_DIR}/katex.min.css"),
        ("extra_javascript", f"{SITE_DIR}/katex.min.js"),
        ("extra_javascript", f"{SITE_DIR}/auto-render.min.js"),
    ]
    for key, path in wanted:
        if path not in [str(entry) for entry in config[key]]:
            raise _fail(f"mkdocs.yml must list {path!r} under {key}")


def on_files(files: Files, config: MkDocsConfig) -> Files:
    """Add the KaTeX files to the site as generated files, copied from the npm cache."""
    for name, source in sorted(_assets.items()):
        files.append(File.generated(config, f"{SITE_DIR}/{name}", abs_src_path=str(source)))
    return files
