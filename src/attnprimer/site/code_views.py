"""The code a chapter shows: the teaching lines of the package's source.

A chapter includes a *section* of a module, marked in the source by two comments,
``# --8<-- [start:name]`` and ``# --8<-- [end:name]``. The source keeps its docstrings,
doctests and argument checks (the API reference shows them and the tests run them), but on a
chapter page they crowd out the lines that teach. So the page shows a *teaching view* of the
section: the signature and the body, with every comment (the shape comments are how the
chapters teach), and without

* docstrings (and so their doctests), and
* argument checks: an ``if`` whose body ends by raising (``elif`` checks too), a ``for``
  loop of such checks, ``try: <calls> except ...: raise ...``, an ``assert``, and a call of
  a ``_check...`` or ``check_...`` helper.

The lines are removed from the text, found with ``ast``: the code is never re-printed
from the tree, which would drop the comments. What is left still parses.

[`write_sections`][attnprimer.site.code_views.write_sections] writes every section as a Markdown
code block titled with its file, followed by a link to the API reference of what it defines;
the docs build includes them as ``--8<-- "code/<module>/<section>.md"`` (for example
``code/rnn/decoder.md`` for the section ``decoder`` of ``attnprimer/rnn.py``).
"""

from __future__ import annotations

import ast
import re
import textwrap
from pathlib import Path

__all__ = ["code_block", "section_objects", "sections", "teaching_view", "write_sections"]

PACKAGE = Path(__file__).resolve().parent.parent  # attnprimer/, one above site/
MARKER = re.compile(r"^\s*# --8<-- \[(start|end):(\w+)\]\s*$")
FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


def teaching_view(source: str) -> str:
    """``source`` without its docstrings and argument checks; comments and code kept.

    Lines are removed whole, so everything else (comments, section markers, decorators,
    blank lines between definitions) stays exactly as written. A docstring or check that
    is the only statement of its body is kept, so that the result still parses.

    Examples:
        >>> print(teaching_view('''def half(x):
        ...     \"\"\"Half of x.\"\"\"
        ...     if x < 0:
        ...         raise ValueError("x must not be negative")
        ...     return x / 2  # a float
        ... '''))
        def half(x):
            return x / 2  # a float
        <BLANKLINE>
    """
    lines = source.splitlines(keepends=True)
    removed: set[int] = set()  # 0-based line numbers
    for body in _bodies(ast.parse(source)):
        drop = [statement for index, statement in enumerate(body)
                if (index == 0 and _is_docstring(statement)) or _is_check(statement)]
        if len(drop) == len(body):
            continue  # an empty body would not parse
        for statement in drop:
            if lines[statement.lineno - 1][: statement.col_offset].strip():
                continue  # shares its line with other code: keep it
            removed.update(range(statement.lineno - 1, statement.end_lineno))
        for statement in body:  # an ``elif ...: raise`` after real code: that branch alone
            tail = statement.orelse if isinstance(statement, ast.If) else []
            if (len(tail) == 1 and _is_check(tail[0]) and not _is_check(statement)
                    and lines[tail[0].lineno - 1].lstrip().startswith("elif ")):
                removed.update(range(tail[0].lineno - 1, tail[0].end_lineno))
    removed |= _blank_lines_left_behind(lines, removed)
    view = "".join(line for number, line in enumerate(lines) if number not in removed)
    ast.parse(view)  # still Python
    return view


def sections(source: str) -> dict[str, tuple[int, int]]:
    """Every section of ``source``: its name -> the 0-based lines between its two markers.

    Examples:
        >>> sections("x = 1\\n# --8<-- [start:two]\\ny = 2\\n# --8<-- [end:two]\\n")
        {'two': (2, 3)}
    """
    starts: dict[str, int] = {}
    found: dict[str, tuple[int, int]] = {}
    for number, line in enumerate(source.splitlines()):
        match = MARKER.match(line)
        if match and match[1] == "start":
            starts[match[2]] = number + 1
        elif match:
            if match[2] not in starts:
                raise ValueError(f"section {match[2]!r} ends on line {number + 1} before it starts")
            found[match[2]] = (starts.pop(match[2]), number)
    if starts:
        raise ValueError(f"sections that never end: {', '.join(starts)}")
    return found


def section_objects(source: str, name: str) -> list[str]:
    """The qualified names of what section ``name`` of ``source`` defines (or lies in).

    The outermost functions and classes inside the section; for a section inside a
    function, that function. Private names (``_x``) are left out.

    Examples:
        >>> source = "class A:\\n    # --8<-- [start:f]\\n    def f(self):\\n        pass\\n" \\
        ...          "    # --8<-- [end:f]\\n"
        >>> section_objects(source, "f")
        ['A.f']
    """
    first, last = sections(source)[name]  # 0-based, the markers excluded
    inside, around = [], []
    for qualname, node in _definitions(ast.parse(source)):
        start = min([node.lineno] + [d.lineno for d in node.decorator_list]) - 1
        end = node.end_lineno - 1
        if first <= start and end < last:
            inside.append(qualname)
        elif start < first <= end:
            around.append(qualname)
    outermost = [q for q in inside if not any(q.startswith(f"{o}.") for o in inside)]
    found = outermost or around[-1:]  # _definitions lists the outer before the inner
    return [q for q in found if not any(part.startswith("_") for part in q.split("."))]


def code_block(path: Path, name: str, *, package: Path = PACKAGE) -> str:
    """Section ``name`` of the module at ``path``, in its teaching view, as Markdown.

    A ``python`` code block titled with the file's path in the repository, then a line
    that links to the API reference of what the section defines.
    """
    source = path.read_text(encoding="utf-8")
    module = ".".join((package.name, *path.relative_to(package).with_suffix("").parts))
    view = teaching_view(source)
    first, last = sections(view)[name]
    code = textwrap.dedent("".join(view.splitlines(keepends=True)[first:last]))
    title = f"src/{package.name}/{path.relative_to(package).as_posix()}"
    links = ", ".join(f"[`{q}`][{module}.{q}]" for q in section_objects(source, name))
    reference = (f"With docstrings and argument checks in the API reference: {links}"
                 if links else f"In the API reference: [`{module}`][{module}]")
    return (f'```python title="{title}"\n{code.rstrip()}\n```\n\n'
            f'{reference}\n{{ .code-reference }}\n')


def write_sections(out_dir: Path, *, package: Path = PACKAGE) -> list[Path]:
    """Write every section of the package as ``out_dir/<module path>/<section>.md``.

    ``out_dir`` holds nothing else: a block whose section is gone is deleted, so that a
    chapter still including it fails the build (snippets' ``check_paths``).
    """
    written = []
    for path in sorted(package.rglob("*.py")):
        source = path.read_text(encoding="utf-8")
        for name in sections(source):
            target = out_dir / path.relative_to(package).with_suffix("") / f"{name}.md"
            text = code_block(path, name, package=package)
            target.parent.mkdir(parents=True, exist_ok=True)
            if not target.is_file() or target.read_text(encoding="utf-8") != text:
                target.write_text(text, encoding="utf-8")  # unchanged: left alone for serve
            written.append(target)
    for stale in set(out_dir.rglob("*.md")) - set(written):
        stale.unlink()
    return written


def _bodies(tree: ast.AST):
    """Every list of statements in ``tree``: bodies, else branches, handlers."""
    for node in ast.walk(tree):
        for field in ("body", "orelse", "finalbody"):
            body = getattr(node, field, None)
            if isinstance(body, list) and body and isinstance(body[0], ast.stmt):
                yield body


def _is_docstring(statement: ast.stmt) -> bool:
    return (isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant)
            and isinstance(statement.value.value, str))


def _is_check(statement: ast.stmt) -> bool:
    """An argument check: ``if ...: raise ...`` (``elif`` checks too), a loop of them,
    ``try: <calls> except ...: raise ...``, ``assert``, a call of ``_check...``."""
    if isinstance(statement, ast.Assert):
        return True
    if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call):
        function = statement.value.func
        name = function.id if isinstance(function, ast.Name) else getattr(function, "attr", "")
        return name.startswith(("_check", "check_"))
    if isinstance(statement, ast.If) and isinstance(statement.body[-1], ast.Raise):
        rest = statement.orelse
        return not rest or (len(rest) == 1 and _is_check(rest[0]))
    if isinstance(statement, ast.For):  # a check of each of several arguments
        return not statement.orelse and all(_is_check(inner) for inner in statement.body)
    if isinstance(statement, ast.Try):  # try: a call that raises; except: raise a clearer error
        return (not statement.orelse and not statement.finalbody
                and all(isinstance(inner, ast.Expr) for inner in statement.body)
                and all(isinstance(h.body[-1], ast.Raise) for h in statement.handlers))
    return False


def _blank_lines_left_behind(lines: list[str], removed: set[int]) -> set[int]:
    """Blank lines that a removal leaves right after a header (``...:``) or another blank."""
    extra: set[int] = set()
    for number in sorted(removed):
        if number + 1 in removed:
            continue  # not the end of a removed block
        before = max((n for n in range(number) if n not in removed), default=None)
        previous = None if before is None else lines[before]
        if previous is not None and previous.strip() and not previous.rstrip().endswith(":"):
            continue
        after = number + 1
        while after < len(lines) and not lines[after].strip():
            extra.add(after)
            after += 1
    return extra


def _definitions(tree: ast.AST, prefix: str = ""):
    """(qualified name, node) of every function and class, the outer before the inner."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, (*FUNCTIONS, ast.ClassDef)):
            qualname = f"{prefix}{node.name}"
            yield qualname, node
            yield from _definitions(node, f"{qualname}.")
        else:
            yield from _definitions(node, prefix)
