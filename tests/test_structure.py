"""The shape of the core, held by tests: modules small enough to read, a server that is a small
facade over parts that use one another's public methods only, and a driver guide whose hook
tables are the driver contract itself."""

from __future__ import annotations

import ast
import inspect
import re
from pathlib import Path

from ruda_core.runtime import driver as driver_module
from ruda_core.runtime.server import ComputeServer

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("ruda_core", "ruda_cpu", "ruda_cuda", "ruda_opencl", "ruda_wgpu")
#: the most lines a module of the packages may have (split by role before)
MAX_MODULE_LINES = 800
MAX_SERVER_LINES = 400
MAX_SERVER_METHODS = 40
#: the parts of a server; none reads another object's private members
PARTS = (
    "server",
    "stream_table",
    "launches",
    "transfers",
    "sharing",
    "capture",
    "profiler",
    "kernels",
    "driver",
)
#: private members a part may use, with the reason
ALLOWED_PRIVATE = {
    # the constructor of a handle over a pool slice, which only a server's parts make
    "Handle._new",
}
#: the driver contract: every interface whose hooks the guide's tables list
INTERFACES = ("QueueDriver", "KernelDriver", "CopyDriver", "SharingDriver", "Driver")


def test_no_module_is_a_hub():
    long = {
        str(path.relative_to(ROOT)): n
        for package in PACKAGES
        for path in (ROOT / package).rglob("*.py")
        if (n := len(path.read_text().splitlines())) > MAX_MODULE_LINES
    }
    assert not long, f"modules over {MAX_MODULE_LINES} lines (split them by role): {long}"


def test_the_server_is_a_small_facade():
    source = inspect.getsource(ComputeServer)
    tree = ast.parse(source).body[0]
    assert isinstance(tree, ast.ClassDef)
    methods = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    assert len(methods) <= MAX_SERVER_METHODS, sorted(methods)
    lines = len((ROOT / "ruda_core/runtime/server.py").read_text().splitlines())
    assert lines <= MAX_SERVER_LINES


def test_the_parts_of_a_server_use_one_anothers_public_methods_only():
    reach_ins = []
    for part in PARTS:
        path = ROOT / "ruda_core/runtime" / f"{part}.py"
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.Attribute) or not node.attr.startswith("_"):
                continue
            if node.attr.startswith("__"):
                continue
            owner = node.value
            if isinstance(owner, ast.Name) and owner.id in ("self", "cls"):
                continue
            if isinstance(owner, ast.Call) and getattr(owner.func, "id", "") == "super":
                continue
            if ast.unparse(node) not in ALLOWED_PRIVATE:
                reach_ins.append(f"{path.name}:{node.lineno}: {ast.unparse(node)}")
    assert not reach_ins, reach_ins


def _hooks(cls: type) -> set[str]:
    """The public members an interface of the driver contract declares itself."""
    names = set(getattr(cls, "__annotations__", {}))
    names |= {name for name, value in vars(cls).items() if not name.startswith("_")}
    return {name for name in names if not name.startswith("_")}


def _documented() -> set[str]:
    """The hooks the driver guide's tables list (their first cells) in its driver section."""
    text = (ROOT / "docs/driver-api.md").read_text()
    section = text.split("\n## The driver\n", 1)[1].split("\n## ", 1)[0]
    return set(re.findall(r"^\| `([a-z_]+)", section, flags=re.MULTILINE))


def test_the_driver_guide_lists_every_hook_of_the_contract_and_no_other():
    declared = set().union(*(_hooks(getattr(driver_module, name)) for name in INTERFACES))
    documented = _documented()
    assert declared - documented == set(), "hooks the driver guide does not document"
    assert documented - declared == set(), "documented hooks the contract no longer has"
