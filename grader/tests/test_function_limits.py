"""No function in grader/ over 100 lines or over 8 parameters.

A function a maintainer can hold in their head fits on a screen or two and
takes few enough inputs to name each; past 8, related parameters belong in a
frozen dataclass (an options or context object). Lines run from the `def` to
the function's last line (decorators not counted); parameters are every named
one, `*args` and `**kwargs` one each, and `self`/`cls` not at all. ruff
checks statements, complexity and arguments (pyproject.toml); it cannot
count lines, so this test does both counts the way the limits are stated.
"""

from __future__ import annotations

import ast

from grader.infra.toolchain import REPO

MAX_LINES = 100
MAX_PARAMETERS = 8


def parameters(f: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    a = f.args
    named = [p.arg for p in (*a.posonlyargs, *a.args, *a.kwonlyargs)]
    if named and named[0] in ("self", "cls"):
        named = named[1:]
    return len(named) + (a.vararg is not None) + (a.kwarg is not None)


def over_limits(source: str, name: str) -> list[tuple[str, str]]:
    """(function, `name:line function: what`) of each function of the source
    over a limit, in the order of the source."""
    tree = ast.parse(source, name)
    functions = (n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef))
    found = []
    for f in sorted(functions, key=lambda n: n.lineno):
        lines = (f.end_lineno or f.lineno) - f.lineno + 1
        where = f"{name}:{f.lineno} {f.name}"
        if lines > MAX_LINES:
            found.append((f.name, f"{where}: {lines} lines"))
        if parameters(f) > MAX_PARAMETERS:
            found.append((f.name, f"{where}: {parameters(f)} parameters"))
    return found


def grader_findings() -> list[str]:
    found = []
    for path in sorted((REPO / "grader").rglob("*.py")):
        name = path.relative_to(REPO).as_posix()
        if name.startswith("grader/third_party/"):
            continue  # vendored as released upstream (its README), not ours to reshape
        over = over_limits(path.read_text(), name)
        found += [what for _, what in over]
    return found


def test_no_function_over_the_limits():
    found = grader_findings()
    assert not found, "over 100 lines or 8 parameters:\n" + "\n".join(found)


def test_a_long_function_is_found(tmp_path):
    body = "".join(f"    x{i} = {i}\n" for i in range(MAX_LINES))
    planted = tmp_path / "planted.py"
    planted.write_text(f"def long():\n{body}\n\ndef short():\n    return 1\n")
    found = [what for _, what in over_limits(planted.read_text(), "planted.py")]
    assert found == ["planted.py:1 long: 101 lines"]


def test_parameters_are_counted_as_stated():
    source = (
        "class C:\n"
        "    def method(self, a, b, c, d, e, f, g, h):\n        pass\n"
        "    def more(self, a, b, c, d, e, f, g, *args, **kw):\n        pass\n"
        "def free(a, b, /, c, d, *, e, f, g, h, i):\n    pass\n"
    )
    assert [what for _, what in over_limits(source, "c.py")] == [
        "c.py:4 more: 9 parameters",
        "c.py:6 free: 9 parameters",
    ]
