"""Loading the workbench's C extensions (the event queue, the TCP model, the frame scanner):
the one built with the package, or the build an environment variable names (``make asan``
points the tests at AddressSanitizer builds that way)."""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
import os
import sys
from types import ModuleType

__all__ = ["load_extension"]


def load_extension(name: str, env_var: str) -> ModuleType | None:
    """The extension module ``name`` (e.g. ``simulator.net._tcp``): from the file ``$env_var``
    names when it is set, else the one built with the package; None when it is not built."""
    path = os.environ.get(env_var)
    if path:
        loader = importlib.machinery.ExtensionFileLoader(name, path)
        module = importlib.util.module_from_spec(importlib.util.spec_from_file_location(name, path, loader=loader))
        sys.modules[name] = module
        loader.exec_module(module)
        return module
    try:
        return importlib.import_module(name)
    except ImportError:
        return None
