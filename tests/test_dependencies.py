"""Dependencies: every package nitro/ imports is declared in pyproject.toml (dependencies or an
extra) and named in the README's "Dependencies and why", not merely present as another package's
dependency; and nitro's own modules import each other without a cycle, counting imports made
inside functions."""
import ast
import re
import sys
from importlib.metadata import packages_distributions
from pathlib import Path

import pytest

tomllib = pytest.importorskip("tomllib")    # Python 3.11+

ROOT = Path(__file__).resolve().parents[1]
NOT_INSTALLED_HERE = {"pycuda": "pycuda", "pynvml": "nvidia-ml-py", "ray": "ray", "dask": "dask"}


def _imported() -> dict[str, set[str]]:
    """Top-level third-party module -> the nitro files importing it."""
    out: dict[str, set[str]] = {}
    for path in (ROOT / "nitro").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module] if isinstance(node, ast.ImportFrom) and not node.level else []
            for name in names:
                top = name.split(".")[0]
                if top not in sys.stdlib_module_names and top != "nitro":
                    out.setdefault(top, set()).add(path.relative_to(ROOT).as_posix())
    return out


def _module_imports() -> dict[str, set[str]]:
    """nitro module -> the nitro modules it imports anywhere (its own parent packages left out:
    importing a submodule runs them anyway; compiled modules, ``_variants`` and the like, too)."""
    files = {}
    for path in (ROOT / "nitro").rglob("*.py"):
        parts = path.relative_to(ROOT).with_suffix("").parts
        files[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    graph: dict[str, set[str]] = {}
    for module, path in files.items():
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        found = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                found |= {a.name for a in node.names}
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package.split(".")[:len(package.split(".")) - node.level + 1]
                    base = ".".join(up + ([node.module] if node.module else []))
                found |= {f"{base}.{a.name}" if f"{base}.{a.name}" in files else base for a in node.names
                          if not a.name.startswith("_") or f"{base}.{a.name}" in files}
        graph[module] = {f for f in found if f in files and f != module and not module.startswith(f + ".")}
    return graph


def test_nitros_modules_import_each_other_without_a_cycle():
    graph, state, path = _module_imports(), {}, []

    def visit(module):
        state[module] = "open"
        path.append(module)
        for other in sorted(graph[module]):
            assert state.get(other) != "open", "import cycle: " + " -> ".join(path[path.index(other):] + [other])
            if other not in state:
                visit(other)
        path.pop()
        state[module] = "done"

    for module in sorted(graph):
        if module not in state:
            visit(module)


def _name(requirement: str) -> str:
    return re.split(r"[\[<>=!~; ]", requirement, maxsplit=1)[0].lower().replace("_", "-")


def test_every_imported_package_is_declared_and_explained():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    declared = {_name(r) for r in project["dependencies"]}
    declared |= {_name(r) for extra in project["optional-dependencies"].values() for r in extra}
    section = (ROOT / "README.md").read_text().split("## Dependencies and why")[1].split("\n## ")[0]
    explained = {_name(w) for row in section.splitlines() if row.startswith("| ")
                 for w in re.findall(r"[A-Za-z][\w.-]*(?:\[\w+\])?", row.split("|")[1])}
    dists = packages_distributions()
    for module, files in _imported().items():
        dist = _name((dists.get(module) or [NOT_INSTALLED_HERE.get(module, module)])[0])
        assert dist in declared, f"{module} ({dist}), imported by {sorted(files)}, is not in pyproject.toml"
        assert dist in explained, f"{dist} is not in the README's 'Dependencies and why'"
