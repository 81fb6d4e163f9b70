"""The package's imports point one way: generic <- sweep <- studies <- command line.

Walks every module of python/l4sim (function-level imports too) and fails on an import of a
higher layer or on any cycle, so the layering in docs/architecture.md cannot silently rot.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[1] / "python" / "l4sim"

# Layer of each module (longest matching prefix wins; every module must match one). The package
# root is the facade that re-exports from every layer, so it sits with the command line; it
# names only itself, not the modules under it.
ROOT = "l4sim"
LAYERS = {
    "l4sim._core": 0,
    "l4sim.scenario": 0,
    "l4sim.api": 0,
    "l4sim.classes": 0,
    "l4sim.simulation": 0,
    "l4sim.runplots": 0,
    "l4sim.flentfile": 0,
    "l4sim.netem": 0,
    "l4sim.argtypes": 0,
    "l4sim.sweep": 1,
    "l4sim.studies": 2,
    "l4sim.icnp26": 2,  # the multi-AS study's scenarios (imports nothing of the package)
    "l4sim.cli": 3,
    "l4sim.cli_study": 3,
    "l4sim.icnp26_report": 3,  # `l4sim reproduce icnp26`: runs and reports the study
    "l4sim.demo": 3,  # `l4sim demo`: the web page's server and its sessions
    "l4sim.__main__": 3,
    ROOT: 3,
}
NAMES = {0: "generic", 1: "sweep", 2: "studies", 3: "command line"}


def module_name(path: Path) -> str:
    rel = path.relative_to(PKG.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def layer(mod: str) -> int:
    prefixes = (p for p in LAYERS if mod == p or (p != ROOT and mod.startswith(p + ".")))
    best = max(prefixes, key=len, default=None)
    if best is None:
        raise AssertionError(f"module {mod} has no layer: add it to LAYERS and docs/architecture.md")
    return LAYERS[best]


def imports(path: Path, mod: str) -> set[str]:
    """Every l4sim module ``mod`` imports, at module level or inside functions."""
    tree = ast.parse(path.read_text(), str(path))
    pkg = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
    out: set[str] = set()
    # Imports only type checkers run (`if TYPE_CHECKING:`) are not imports at run time.
    typing_only = {
        id(n)
        for block in ast.walk(tree)
        if isinstance(block, ast.If) and isinstance(block.test, ast.Name) and block.test.id == "TYPE_CHECKING"
        for stmt in block.body
        for n in ast.walk(stmt)
    }
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name.split(".")[0] == "l4sim"}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = pkg.split(".")[: len(pkg.split(".")) - node.level + 1]
                base = ".".join(up + ([base] if base else []))
            if base.split(".")[0] != "l4sim":
                continue
            for a in node.names:  # "from l4sim.studies import plots" imports a module
                sub = f"{base}.{a.name}"
                f = PKG.parent / Path(*sub.split("."))
                is_module = any(f.with_suffix(x).exists() for x in (".py", ".pyi")) or (f / "__init__.py").exists()
                out.add(sub if is_module else base)
    out.discard(mod)
    return out


def graph() -> dict[str, set[str]]:
    return {module_name(p): imports(p, module_name(p)) for p in sorted(PKG.rglob("*.py"))}


def test_every_import_points_down_the_layers():
    bad = [
        f"{m} ({NAMES[layer(m)]}) imports {d} ({NAMES[layer(d)]})"
        for m, deps in graph().items()
        for d in sorted(deps)
        if d != "l4sim" and layer(d) > layer(m)
    ]
    assert not bad, "upward imports:\n" + "\n".join(bad)


def test_no_module_imports_the_package_root_from_below():
    # "from l4sim import X" runs l4sim/__init__.py, which imports every layer.
    bad = [m for m, deps in graph().items() if "l4sim" in deps and layer(m) < 3]
    assert not bad, f"modules below the command line importing the package root: {bad}"


def test_no_import_cycles():
    g = graph()
    g = {m: {d for d in deps if d in g and d != "l4sim"} for m, deps in g.items() if m != "l4sim"}
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(m: str) -> None:
        state[m] = 1
        stack.append(m)
        for d in sorted(g[m]):
            if state.get(d) == 1:
                cycle = stack[stack.index(d) :] + [d]
                pytest.fail("import cycle: " + " -> ".join(cycle))
            if d not in state:
                visit(d)
        stack.pop()
        state[m] = 2

    for m in sorted(g):
        if m not in state:
            visit(m)


def test_every_module_has_a_layer_of_its_own():
    """A new module is placed on purpose: the package root does not lend it its layer."""
    for m in graph():
        layer(m)
    with pytest.raises(AssertionError, match="module l4sim.new_module has no layer"):
        layer("l4sim.new_module")
    assert layer("l4sim.demo.server") == layer("l4sim.icnp26_report") == 3
    assert layer("l4sim.icnp26") == layer("l4sim.studies.validate") == 2


def test_the_checker_sees_upward_and_cyclic_imports(tmp_path, monkeypatch):
    """The walker itself can fail: a fake generic module importing a study is caught."""
    assert layer("l4sim.scenario") < layer("l4sim.studies.factors")
    deps = imports(PKG / "scenario.py", "l4sim.scenario")
    assert deps and all(layer(d) == 0 for d in deps), deps
    src = tmp_path / "l4sim" / "x.py"
    src.parent.mkdir()
    src.write_text("def f():\n    from l4sim.studies import factors\n")
    monkeypatch.setitem(globals(), "PKG", tmp_path / "l4sim")
    assert imports(src, "l4sim.x") == {"l4sim.studies"}
