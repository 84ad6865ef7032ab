"""The package's floors and walls: the IR imports nothing of ruda above it, and the error tree
nothing of ruda at all, so neither depends on the order in which the packages above are
imported; no import cycle leaves its package; the core never names a backend, and the
foreign-array code and the probe never ask the plugin registry."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path

import ruda_core

ROOT = Path(ruda_core.__file__).parent
PYPROJECT = ROOT.parent / "pyproject.toml"


def _module_name(path: Path) -> str:
    parts = ("ruda_core", *path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _import_targets(path: Path) -> Iterator[tuple[str, str | None]]:
    """``(module, name)`` for every name ``path`` imports from a module (``name`` None for a
    plain ``import module``), relative imports resolved, including imports under
    ``TYPE_CHECKING`` and inside functions."""
    package = ".".join(("ruda_core", *path.relative_to(ROOT).parent.parts))
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            yield from ((alias.name, None) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join([*base, *([node.module] if node.module else [])])
            else:
                module = node.module or ""
            yield from ((module, alias.name) for alias in node.names)


def _ruda_imports(path: Path) -> set[str]:
    """Every ``ruda_core`` module ``path`` imports (and ``module.name`` for each name imported
    from one)."""
    found: set[str] = set()
    for module, name in _import_targets(path):
        found.add(module)
        if name is not None:
            found.add(f"{module}.{name}")
    return {name for name in found if name.split(".")[0] == "ruda_core"}


def test_ir_modules_import_only_the_ir_and_the_errors():
    paths = sorted((ROOT / "ir").glob("*.py"))
    assert len(paths) >= 7
    for path in paths:
        outside = {
            name
            for name in _ruda_imports(path)
            if not name.startswith(("ruda_core.ir", "ruda_core.errors"))
        }
        assert not outside, f"{path.name} imports {sorted(outside)}"


def test_errors_module_imports_nothing_of_ruda():
    assert _ruda_imports(ROOT / "errors.py") == set()


def test_importing_the_ir_alone_loads_no_runtime():
    """In a fresh interpreter whose ``ruda_core`` package is a bare namespace (its ``__init__``
    would load the plugins and the runtime), importing the IR loads only the IR and the errors."""
    code = (
        "import sys, types\n"
        "package = types.ModuleType('ruda_core')\n"
        f"package.__path__ = [{str(ROOT)!r}]\n"
        "sys.modules['ruda_core'] = package\n"
        "import ruda_core.ir\n"
        "ruda_core.ir.lower_bounds, ruda_core.ir.verify, ruda_core.ir.ExecutionMode\n"
        "print(' '.join(sorted(m for m in sys.modules if m.startswith('ruda_core.'))))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = out.stdout.split()
    assert "ruda_core.ir.bounds" in loaded and "ruda_core.ir.verify" in loaded
    assert [m for m in loaded if not m.startswith(("ruda_core.ir", "ruda_core.errors"))] == []


def _import_graph() -> dict[str, set[str]]:
    """``ruda_core``'s modules and the modules each imports: ``from package import name`` is
    an edge to the submodule ``name`` where there is one, else to ``package`` itself."""
    paths = {_module_name(path): path for path in ROOT.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for module, path in paths.items():
        edges = set()
        for target, name in _import_targets(path):
            sub = f"{target}.{name}"
            edges.add(sub if sub in paths else target)
        graph[module] = {edge for edge in edges if edge in paths and edge != module}
    return graph


def _reaches(graph: dict[str, set[str]], start: str) -> set[str]:
    seen: set[str] = set()
    todo = list(graph[start])
    while todo:
        module = todo.pop()
        if module not in seen:
            seen.add(module)
            todo.extend(graph[module])
    return seen


def test_import_cycles_stay_inside_one_package():
    """A module that imports itself back through other modules does so only through modules of
    its own package: the registry, the probe, the foreign-array code and the tensor are on no
    cycle, so each can be imported first."""
    graph = _import_graph()
    assert "ruda_core.plugins" in graph and "ruda_core.interop.foreign" in graph
    for module in graph:
        package = module.rpartition(".")[0]
        cycle = {m for m in _reaches(graph, module) if module in _reaches(graph, m)}
        outside = sorted(m for m in cycle if m.rpartition(".")[0] != package)
        assert not outside, f"{module} imports itself back through {outside}"


def test_the_foreign_array_code_and_the_probe_never_ask_the_plugin_registry():
    """Interop is handed its client; the probe runs a kernel on a runtime it is given. Neither
    imports the registry, nor the package that re-exports it."""
    paths = [*sorted((ROOT / "interop").glob("*.py")), ROOT / "probe.py"]
    assert len(paths) >= 5
    for path in paths:
        asked = {
            name
            for name in _ruda_imports(path)
            if name == "ruda_core" or name.startswith(("ruda_core.plugins", "ruda_core.sharing"))
        }
        assert not asked, f"{path.relative_to(ROOT)} imports {sorted(asked)}"


#: Strings in core code that may name an in-tree backend, each for its reason: text shown to
#: users, where an example device helps, and the one name RUDA_BACKENDS is matched against.
NAMING_ALLOWED = {
    ("plugins.py", "cpu"): "REFERENCE_BACKEND: RUDA_BACKENDS selects entry-point names before "
    "any plugin module is imported, so the backend it cannot leave out is known by that name",
    ("cli.py", "only entries made for D (cpu, opencl:0)"): "help text: an example device",
    ("cli.py", "only entries of driver R (opencl)"): "help text: an example driver",
    ("runtime/client.py", "). Pass ruda_core.client('cuda:1'), say"): "error message: an "
    "example device to pass",
    ("dask.py", "devices is empty; pass device names such as ['cuda:0', 'cuda:1']"): "error "
    "message: example devices to pass",
}


def _backend_ids() -> list[str]:
    """The backend ids of the in-tree backends: the names of ruda's own entry points."""
    project = tomllib.loads(PYPROJECT.read_text())["project"]
    return sorted(project["entry-points"]["ruda.backends"])


def _code_strings(path: Path) -> Iterator[str]:
    """Every string constant in ``path``'s code (f-string parts included), docstrings left out."""
    tree = ast.parse(path.read_text(), str(path))
    docstrings: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            first = node.body[0] if node.body else None
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                docstrings.add(id(first.value))
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and id(node) not in docstrings
        ):
            yield node.value


def test_core_never_names_a_backend_id():
    """Which backend serves what is declared by the backends and answered by the registry: core
    code spells no backend id, neither alone (``"cpu"``) nor as a device (``"cuda:0"``)."""
    ids = _backend_ids()
    assert {"cpu", "cuda", "opencl"} <= set(ids)
    naming = re.compile(rf"(?<![\w.])({'|'.join(ids)})(:\d*)?(?![\w.])")
    found = {
        (path.relative_to(ROOT).as_posix(), text)
        for path in sorted(ROOT.rglob("*.py"))
        for text in _code_strings(path)
        if naming.search(text)
    }
    named = sorted(f"{where}: {text!r}" for where, text in found - NAMING_ALLOWED.keys())
    assert not named, "core code names backends:\n" + "\n".join(named)
    assert NAMING_ALLOWED.keys() <= found, "an allowed string is gone: drop it from the list"
