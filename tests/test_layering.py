"""The package's layers hold: each package is on a layer of its own, may import only the
packages its arrows below name (every one of them on a lower layer), and no study imports
another study.  Every import is read with ``ast``, the ones inside functions too.

    cli (cli, bench, demo, every package's ``commands``)
    lab            -> report, capture, batch, studies, browser, http, stacks, argtypes, net, traces, core
    report         -> studies, browser, http, stacks, traces, core
    capture        -> traces, core
    batch          -> studies, traces, core
    studies        -> browser, hops, http, stacks, argtypes, net, compression, traces, frames, core
    browser        -> http, stacks, argtypes, net, traces, core
    hops           -> http, stacks, net, core
    http           -> stacks, net, traces, frames, core
    stacks         -> net, traces, frames, core
    argtypes       -> net, core
    net            -> frames, core
    compression    -> traces, frames, core
    traces         -> core
    frames         -> core
    core: the package's root modules (engine, errors, units, stats, outfiles, _extension)

``http`` is above ``stacks``: the HTTP models size their handshakes on the real stacks and
take their exchange description; the model replay and the cross-validation against the
stacks are in ``http``.  ``report`` is below ``lab``: the lab's figures draw with it.

A study is a package ``simulator/studies/<name>/``; it may import the study contract
(``studies.base``), never another study; the page-load model they share (push, coalescing,
fidelity) is its own package, ``simulator.browser``, below the studies.  The registry names
its studies by module path and imports them on demand, so it imports none of them either.
``docs/architecture.md`` draws the same layers."""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1] / "simulator"

CORE = ("(root)", "_extension", "errors", "units", "stats", "engine", "outfiles")
LAYERS = (
    "core",
    "frames",
    "traces",
    "compression",
    "net",
    "argtypes",
    "stacks",
    "http",
    "hops",
    "browser",
    "studies",
    "batch",
    "capture",
    "report",
    "lab",
    "cli",
)  # bottom to top
ARROWS = {  # what each layer may import besides itself
    "core": set(),
    "frames": {"core"},
    "traces": {"core"},
    "compression": {"frames", "traces", "core"},
    "net": {"frames", "core"},
    "argtypes": {"net", "core"},
    "stacks": {"net", "traces", "frames", "core"},
    "http": {"stacks", "net", "traces", "frames", "core"},
    "hops": {"http", "stacks", "net", "core"},
    "browser": {"http", "stacks", "argtypes", "net", "traces", "core"},
    "studies": {"browser", "hops", "http", "stacks", "argtypes", "net", "compression", "traces", "frames", "core"},
    "batch": {"studies", "traces", "core"},
    "capture": {"traces", "core"},
    "report": {"studies", "browser", "http", "stacks", "traces", "core"},
    "lab": {"report", "capture", "batch", "studies", "browser", "http", "stacks", "argtypes", "net", "traces", "core"},
    "cli": set(LAYERS[:-1]),
}
CLI_MODULES = {"cli", "bench", "demo"}
SHARED_STUDY_MODULES = {"base", "registry"}


def _module_name(path: Path) -> str:
    parts = ["simulator", *path.relative_to(ROOT).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_module(name: str) -> bool:
    rel = Path(*name.split(".")[1:])
    return (ROOT / rel).with_suffix(".py").exists() or (ROOT / rel / "__init__.py").exists()


@functools.lru_cache(maxsize=None)
def _imports(path: Path) -> list[tuple[int, str]]:
    """(line, module) of every ``simulator`` module ``path`` imports, relative ones resolved."""
    name = _module_name(path)
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names if a.name.split(".")[0] == "simulator"]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] != "simulator":
                continue
            for alias in node.names:  # `from simulator.studies import hol` imports the module hol
                sub = f"{target}.{alias.name}"
                out.append((node.lineno, sub if _is_module(sub) else target))
    return out


def _part(module: str) -> str:
    parts = module.split(".")
    return "(root)" if len(parts) == 1 else parts[1]


def _layer(module: str) -> str:
    part = _part(module)
    if module.endswith(".commands") or part in CLI_MODULES:
        return "cli"
    return "core" if part in CORE else part


def _study(module: str) -> str | None:
    parts = module.split(".")
    return parts[2] if len(parts) > 2 and parts[1] == "studies" else None


FILES = sorted(ROOT.rglob("*.py"))


def test_every_part_of_the_package_has_a_layer():
    unknown = {_layer(_module_name(p)) for p in FILES} - set(LAYERS)
    assert not unknown, f"place {sorted(unknown)} in LAYERS and ARROWS of this test"


def test_every_arrow_points_down():
    """The arrows make one order: a layer imports only layers listed before it (so no two
    packages import each other, however indirectly)."""
    assert set(ARROWS) == set(LAYERS)
    for layer, below in ARROWS.items():
        up = [b for b in below if LAYERS.index(b) >= LAYERS.index(layer)]
        assert not up, f"{layer} -> {up}: an arrow that does not point down"


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_imports_follow_the_arrows(path):
    here = _layer(_module_name(path))
    for line, target in _imports(path):
        there = _layer(target)
        assert there == here or there in ARROWS[here], (
            f"{path.relative_to(ROOT)}:{line} imports {target}: {here} -> {there} is not an arrow of the layers"
        )


@pytest.mark.parametrize("path", [p for p in FILES if _study(_module_name(p))], ids=lambda p: str(p.relative_to(ROOT)))
def test_no_study_imports_another_study(path):
    here = _study(_module_name(path))
    for line, target in _imports(path):
        other = _study(target)
        assert other in (None, here) or other in SHARED_STUDY_MODULES, (
            f"{path.relative_to(ROOT)}:{line} imports the {other} study ({target})"
        )


def test_the_shared_modules_import_no_study():
    for path in FILES:
        if _study(_module_name(path)) in SHARED_STUDY_MODULES:
            for line, target in _imports(path):
                assert _study(target) in (None, *SHARED_STUDY_MODULES), (
                    f"{path.relative_to(ROOT)}:{line} imports {target}"
                )


def test_the_checker_sees_an_upward_import(tmp_path):
    """The reader resolves relative and submodule imports (else the tests above pass vacuously),
    and an import back up the layers is no arrow."""
    hol = ROOT / "studies" / "hol" / "cli.py"
    targets = {t for _, t in _imports(hol)}
    assert "simulator.argtypes" in targets and "simulator.studies.hol.study" in targets
    assert "simulator.studies.base" in targets
    assert _layer("simulator.traces.commands") == "cli" and _layer("simulator.engine") == "core"
    assert _layer("simulator.batch.runner") == "batch" and _layer("simulator.browser.client") == "browser"
    for lower, upper in (("stacks", "http"), ("report", "lab"), ("browser", "studies"), ("http", "browser")):
        assert upper not in ARROWS[lower] and lower in ARROWS[upper]


MAX_MODULE_LINES = 600
# The C frame scanner's Python twin mirrors _scanner.c function for function: one file, as the C is.
LONG_ON_PURPOSE = {"frames/scanner.py"}


def test_no_module_over_600_lines():
    """A module that grows past 600 lines is split along its seams (as ``net/quic/`` is:
    connection, packet builder, ACKs, recovery, pacer)."""
    long = [
        f"{path.relative_to(ROOT)}: {n} lines"
        for path in FILES
        if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES
        and path.relative_to(ROOT).as_posix() not in LONG_ON_PURPOSE
    ]
    assert not long, "\n".join(long)


def test_the_aioquic_patches_check_the_version_and_internals_they_were_written_for(monkeypatch):
    """``stacks.aioquic_patches.check`` passes on the pinned aioquic and refuses, with one
    line naming the module to look at, another minor version or a missing internal name."""
    import aioquic
    from aioquic.quic.recovery import QuicPacketRecovery

    from simulator.stacks import aioquic_patches

    aioquic_patches.check()
    monkeypatch.setattr(aioquic, "__version__", "1.8.0")
    with pytest.raises(RuntimeError, match=r"written for aioquic 1\.7\.x and found aioquic 1\.8\.0"):
        aioquic_patches.check()
    monkeypatch.undo()
    monkeypatch.delattr(QuicPacketRecovery, "_on_packets_lost")
    with pytest.raises(RuntimeError, match=r"QuicPacketRecovery\._on_packets_lost") as info:
        aioquic_patches.check()
    assert "aioquic_patches.py" in str(info.value) and "\n" not in str(info.value)
