"""Tests for attnprimer.site.code_views: the teaching view of the code that chapters show."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import pytest

from attnprimer.site.code_views import (
    PACKAGE,
    code_block,
    section_objects,
    sections,
    teaching_view,
    write_sections,
)

SOURCE = textwrap.dedent('''\
    """The module's docstring.

    >>> 1 + 1
    2
    """

    import torch


    # --8<-- [start:scaled]
    @torch.no_grad()
    def scaled(x, factor):
        """Multiply.

        Examples:
            >>> scaled(torch.ones(2), 3.0)
            tensor([3., 3.])
        """
        if factor <= 0:
            raise ValueError(f"factor must be positive, got {factor}")
        assert x.dim() >= 1
        _check_shape(x)
        # Shapes: (B, D) -> (B, D)
        out = x * factor  # (B, D)
        if out.isnan().any():  # real logic, not a check
            out = out.nan_to_num()
        return out
    # --8<-- [end:scaled]


    class Layer:
        "One-line docstring."

        def forward(self, x):
            """Only a docstring here would leave an empty body: it stays."""

        def backward(self, x):
            for name, value in (("x", x),):
                if value is None:
                    raise ValueError(name)
            try:
                torch.broadcast_shapes(x.shape, x.shape)
            except RuntimeError:
                raise ValueError("no") from None
            if x is None:
                y = 0
            elif x == 0:
                raise ValueError("zero")
            return x  # kept
    ''')


@pytest.fixture
def view() -> str:
    return teaching_view(SOURCE)


def test_docstrings_one_and_many_lines_and_their_doctests_are_removed(view):
    for gone in ('"""', "Multiply.", ">>> scaled", "tensor([3., 3.])", "One-line docstring",
                 "The module's docstring", ">>> 1 + 1"):
        kept = '"""Only a docstring here would leave an empty body: it stays."""'
        assert gone not in view.replace(kept, ""), gone


def test_argument_checks_are_removed(view):
    for gone in ("factor must be positive", "assert x.dim()", "_check_shape(x)",
                 "raise ValueError(name)", "broadcast_shapes", 'raise ValueError("zero")',
                 "elif x == 0"):
        assert gone not in view, gone


def test_comments_code_decorators_and_markers_are_kept(view):
    for kept in ("# Shapes: (B, D) -> (B, D)", "out = x * factor  # (B, D)",
                 "if out.isnan().any():  # real logic, not a check", "@torch.no_grad()",
                 "# --8<-- [start:scaled]", "# --8<-- [end:scaled]", "return x  # kept",
                 "if x is None:\n            y = 0\n"):
        assert kept in view, kept


def test_the_view_parses_and_keeps_a_body_that_is_only_a_docstring(view):
    tree = ast.parse(view)
    layer = next(node for node in tree.body if isinstance(node, ast.ClassDef))
    forward = next(node for node in layer.body if getattr(node, "name", "") == "forward")
    assert len(forward.body) == 1 and isinstance(forward.body[0].value, ast.Constant)


def test_nothing_but_docstrings_and_checks_is_removed(view):
    """Apart from what was removed, the view's statements are the source's."""
    def statements(text):
        return [ast.dump(node) for node in ast.walk(ast.parse(text))
                if isinstance(node, ast.Assign | ast.Return | ast.Call)]
    kept = statements(view)
    assert kept and set(kept) <= set(statements(SOURCE))
    assert len(statements(SOURCE)) > len(kept)


def test_no_blank_line_is_left_under_a_header(view):
    assert "def scaled(x, factor):\n    # Shapes" in view
    assert "class Layer:\n\n" not in view


def test_sections_and_the_objects_they_define():
    assert list(sections(SOURCE)) == ["scaled"]
    assert section_objects(SOURCE, "scaled") == ["scaled"]
    with pytest.raises(ValueError, match="never end"):
        sections("# --8<-- [start:open]\nx = 1\n")


def test_a_section_inside_a_method_names_the_method():
    source = "class A:\n    def f(self):\n        # --8<-- [start:body]\n        return 1\n" \
             "        # --8<-- [end:body]\n"
    assert section_objects(source, "body") == ["A.f"]


def test_the_code_block_is_titled_with_the_file_and_links_the_reference(tmp_path):
    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    (package / "sub" / "mod.py").write_text(SOURCE)
    block = code_block(package / "sub" / "mod.py", "scaled", package=package)
    assert block.startswith('```python title="src/pkg/sub/mod.py"\n@torch.no_grad()\n')
    assert "[`scaled`][pkg.sub.mod.scaled]" in block
    assert "Multiply" not in block and "--8<--" not in block
    written = write_sections(tmp_path / "out", package=package)
    assert written == [tmp_path / "out" / "sub" / "mod" / "scaled.md"]
    assert written[0].read_text() == block


def test_no_shown_section_of_the_package_has_a_docstring_or_a_cross_reference(tmp_path):
    """What chapters include: the docstrings (and their [`x`][y] links) are gone."""
    blocks = [path.read_text() for path in write_sections(tmp_path, package=PACKAGE)]
    assert len(blocks) >= 20
    for block in blocks:
        code = block.split("```")[1]
        assert '"""' not in code and "][attnprimer." not in code, code
        assert ">>>" not in code, code
    assert all("[attnprimer." in block.split("```")[2] for block in blocks)  # the link line


def test_the_package_keeps_its_docstrings():
    source = (PACKAGE / "rnn.py").read_text()
    assert '"""One output step.' in source and "raise ValueError" in source
    assert Path(PACKAGE / "rnn.py").is_file()
