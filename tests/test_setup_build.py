"""setup.py's optional C extensions: a build that fails leaves the pure-Python twin in use.

The install promises (setup.py's docstring and its warning) that an extension which cannot be
compiled is replaced by its Python twin.  In a working tree an earlier build's module sits
beside the sources (an editable install) and in the build folder; if a failed build left it
there it would load instead, built from other sources.  So a failed optional build removes it."""

from __future__ import annotations

import runpy
from pathlib import Path

import pytest
import setuptools
from setuptools.command.build_ext import build_ext
from setuptools.dist import Distribution

ROOT = Path(__file__).resolve().parents[1]


def _setup_module(monkeypatch) -> dict:
    """setup.py's namespace, without running setup()."""
    monkeypatch.setattr(setuptools, "setup", lambda **kw: kw)
    monkeypatch.delenv("WORKBENCH_REQUIRE_EXT", raising=False)
    return runpy.run_path(str(ROOT / "setup.py"))


def test_a_failed_optional_build_removes_the_earlier_module(monkeypatch, tmp_path):
    ns = _setup_module(monkeypatch)
    cls = ns["optional_build_ext"]
    ext = setuptools.Extension("simulator.net._quic", sources=["simulator/net/_quic.c"], optional=True)
    cmd = cls(Distribution({"ext_modules": [ext]}))
    cmd.initialize_options()
    cmd.build_lib = str(tmp_path / "build")
    cmd.finalize_options()
    # The two places an earlier build left its module: the build folder and, for an editable
    # install, beside the sources (here a stand-in for setup.py's folder).
    built = Path(cmd.get_ext_fullpath(ext.name))
    beside = tmp_path / "src" / cmd.get_ext_filename(ext.name)
    for path in (built, beside):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"an earlier build")
    monkeypatch.setitem(cls.build_extension.__globals__, "__file__", str(tmp_path / "src" / "setup.py"))

    def fails(self, ext):
        raise RuntimeError("compiler failed")

    monkeypatch.setattr(build_ext, "build_extension", fails)
    cmd.build_extension(ext)  # optional: a warning, not an error
    assert not built.exists() and not beside.exists()


def test_a_required_build_failure_is_fatal_and_removes_nothing(monkeypatch, tmp_path):
    """WORKBENCH_REQUIRE_EXT=1 (make asan): the failure is raised, as before."""
    ns = _setup_module(monkeypatch)
    cls = ns["optional_build_ext"]
    monkeypatch.setattr(cls, "_required", lambda self: True)
    ext = setuptools.Extension("simulator.net._quic", sources=["simulator/net/_quic.c"])
    cmd = cls(Distribution({"ext_modules": [ext]}))
    cmd.initialize_options()
    cmd.build_lib = str(tmp_path / "build")
    cmd.finalize_options()
    built = Path(cmd.get_ext_fullpath(ext.name))
    built.parent.mkdir(parents=True, exist_ok=True)
    built.write_bytes(b"an earlier build")

    def fails(self, ext):
        raise RuntimeError("compiler failed")

    monkeypatch.setattr(build_ext, "build_extension", fails)
    with pytest.raises(RuntimeError):
        cmd.build_extension(ext)
    assert built.exists()
