"""Run a callback once a module has been imported, without importing it first.

The check must not import Keras or TensorFlow before the user's script does: a script picks its
Keras backend (``os.environ["KERAS_BACKEND"] = "jax"``) and its host device count
(``XLA_FLAGS=--xla_force_host_platform_device_count=N``) before its first import, and an
import made earlier by the check would fix both for it. So the hooks on training are put in
place the moment the script's own import of the module completes.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
from collections.abc import Callable
from types import ModuleType
from typing import Any

Callback = Callable[[ModuleType], None]


class _ThenCall(importlib.abc.Loader):
    """The module's own loader, with ``callback`` run after the module body has executed."""

    def __init__(self, loader: Any, callback: Callback) -> None:
        self._loader = loader
        self._callback = callback

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return self._loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        self._loader.exec_module(module)
        self._callback(module)

    def __getattr__(self, name: str) -> Any:  # get_code, is_package, get_resource_reader, ...
        return getattr(self._loader, name)


class _AfterImport(importlib.abc.MetaPathFinder):
    """Finds nothing itself: wraps the loader the other finders give for the watched names."""

    def __init__(self) -> None:
        self.callbacks: dict[str, Callback] = {}

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        callback = self.callbacks.get(name)
        if callback is None:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None and spec.loader is not None:
                del self.callbacks[name]
                spec.loader = _ThenCall(spec.loader, callback)
                return spec
        return None


_FINDER = _AfterImport()


def after_import(name: str, callback: Callback) -> None:
    """Call ``callback(module)`` when the top-level module ``name`` has been imported: now if
    it already has, else right after whoever imports it first."""
    module = sys.modules.get(name)
    if module is not None:
        callback(module)
        return
    _FINDER.callbacks[name] = callback
    if _FINDER not in sys.meta_path:
        sys.meta_path.insert(0, _FINDER)
