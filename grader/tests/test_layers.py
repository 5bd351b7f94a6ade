"""The grader's shape, kept true by CI: every module sits in a layer
(commands over the batch and similarity packages over the engine over
infrastructure, the shared data below all; docs/glossary.md names them),
imports only downwards, takes part in no import cycle, uses no other
module's private names, and stays small enough to read in one sitting."""

import ast
from pathlib import Path

GRADER = Path(__file__).resolve().parents[1]

# Lower rank may not import higher; packages of one rank may import each
# other (the class report shows the similarity section; the similarity
# command reads the class report's tables; gpucheck reports through grade's
# tables). The entry point parses the command line;
# the data modules are the vocabulary every layer speaks (the course, the
# statuses, the typed results) and import nothing but each other (and the
# vendored libraries).
RANK = {
    "data": 0,
    "infra": 1,
    "engine": 2,
    "batch": 3,
    "similarity": 3,
    "commands": 4,
    "gpucheck": 4,
    "entry": 5,
}
ENTRY = {"grader", "grader.__main__", "grader.cli"}
DATA = {"grader.labmeta", "grader.course_schema", "grader.status", "grader.results"}
MAX_LINES = 400
# Vendored releases (grader/third_party/README.md) keep upstream's shape and
# import nothing of the grader: no layer, no size limit. Any layer may use them.
VENDORED = "third_party"
# Modules still over the limit, each with the most lines it may have: the
# figure may only go down, and the entry goes when the module is split.
OVER: dict[str, int] = {}


def modules() -> dict[str, Path]:
    found = {}
    for path in sorted(GRADER.rglob("*.py")):
        rel = path.relative_to(GRADER.parent)
        if rel.parts[1] in ("tests", VENDORED):
            continue
        name = ".".join(rel.with_suffix("").parts)
        found[name.removesuffix(".__init__")] = path
    return found


def layer(module: str) -> str | None:
    if module in ENTRY:
        return "entry"
    if module in DATA:
        return "data"
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in RANK else None


def _package(module: str, path: Path) -> list[str]:
    parts = module.split(".")
    return parts if path.name == "__init__.py" else parts[:-1]


def imports(module: str, path: Path, known: dict[str, Path]) -> list[tuple[str, list[str], int]]:
    """(grader module imported, names taken from it, line) for every import in
    the file, function-local ones included: a cycle through a late import is
    still a cycle for the reader."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(a.name, [], node.lineno) for a in node.names if a.name in known]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = _package(module, path)[: len(_package(module, path)) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if not target.startswith("grader"):
                continue
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                if sub in known:
                    found.append((sub, [], node.lineno))
                else:
                    found.append((target, [alias.name], node.lineno))
    return found


def graph() -> dict[str, set[str]]:
    known = modules()
    return {m: {t for t, _, _ in imports(m, p, known) if t != m} for m, p in known.items()}


def test_every_module_is_in_a_layer():
    lost = [m for m in modules() if layer(m) is None]
    assert not lost, (
        f"{lost}: put each in a package of RANK (grader/commands, grader/engine ...) "
        f"(or, for shared data, add it to DATA here)"
    )


def test_imports_only_go_down():
    known = modules()
    upward = []
    for m, p in known.items():
        for target, _, line in imports(m, p, known):
            if target in known and RANK[layer(target)] > RANK[layer(m)]:
                upward.append(
                    f"{p.relative_to(GRADER.parent)}:{line} ({layer(m)}) "
                    f"imports {target} ({layer(target)})"
                )
    assert not upward, "\n".join(upward)


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Every strongly connected group of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def test_the_cycle_finder_finds_a_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycle():
    assert cycles(graph()) == []


def test_no_private_name_crosses_a_module():
    known = modules()
    crossing = []
    for m, p in known.items():
        tree = ast.parse(p.read_text(), str(p))
        taken = {}
        for target, names, line in imports(m, p, known):
            crossing += [f"{m}:{line} takes {target}.{n}" for n in names if n.startswith("_")]
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.level:
                for alias in node.names:
                    taken[alias.asname or alias.name] = alias.name
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id in taken
                and node.attr.startswith("_")
                and not node.attr.startswith("__")
            ):
                crossing.append(f"{m}:{node.lineno} reads {node.value.id}.{node.attr}")
    assert not crossing, "\n".join(crossing)


def test_modules_stay_small():
    big = {
        m: n
        for m, p in modules().items()
        if (n := len(p.read_text().splitlines())) > OVER.get(m, MAX_LINES)
    }
    assert not big, f"over {MAX_LINES} lines, split by job: {big}"
    split = [
        m
        for m in OVER
        if m in modules() and len(modules()[m].read_text().splitlines()) <= MAX_LINES
    ]
    assert not split, f"{split} fit now: take them out of OVER"


def test_every_subcommand_has_its_handler():
    """The options live in commands/arguments.py and the handlers in cli.py: a
    subcommand added to one and not the other would fail only when called."""
    import argparse

    from grader import cli
    from grader.commands import arguments

    parser = arguments.build_parser("")
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    assert list(sub.choices) == list(cli.HANDLERS)
