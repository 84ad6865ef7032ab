"""The package's floors: the IR imports nothing of ruda above it, and the error tree nothing of
ruda at all, so neither depends on the order in which the packages above are imported."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import ruda_core

ROOT = Path(ruda_core.__file__).parent


def _ruda_imports(path: Path) -> set[str]:
    """Every ``ruda_core`` module ``path`` imports, relative imports resolved, including imports
    under ``TYPE_CHECKING`` and inside functions."""
    package = ".".join(("ruda_core", *path.relative_to(ROOT).parent.parts))
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join([*base, *([node.module] if node.module else [])])
            else:
                module = node.module or ""
            found.add(module)
            found.update(f"{module}.{alias.name}" for alias in node.names)
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

