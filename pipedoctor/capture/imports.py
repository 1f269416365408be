"""Run a callback once a module has been imported, without importing it first.

The check must not import Keras or TensorFlow before the user's script does: a script picks its
Keras backend (``os.environ["KERAS_BACKEND"] = "jax"``) and its host device count
(``XLA_FLAGS=--xla_force_host_platform_device_count=N``) before its first import, and an
import made earlier by the check would fix both for it. So the hooks on training are put in
place the moment the script's own import of the module completes.

A lookup is not an import: ``importlib.util.find_spec("keras")``, which TensorFlow's own
``__init__`` makes, asks the finders for a spec and never executes it. So a callback stays
registered until a module body has actually run, however many lookups come first.
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
    """The module's own loader; once the module body has executed, the finder's callback for
    the name runs (if no other import of the same name ran it first)."""

    def __init__(self, loader: Any, name: str, finder: _AfterImport) -> None:
        self._loader = loader
        self._name = name
        self._finder = finder

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return self._loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        self._loader.exec_module(module)
        callback = self._finder.callbacks.pop(self._name, None)
        if callback is not None:
            callback(module)

    def __getattr__(self, name: str) -> Any:  # get_code, is_package, get_resource_reader, ...
        return getattr(self._loader, name)


class _AfterImport(importlib.abc.MetaPathFinder):
    """Finds nothing itself: wraps the loader the other finders give for the watched names."""

    def __init__(self) -> None:
        self.callbacks: dict[str, Callback] = {}

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        self._loaded_elsewhere(name.partition(".")[0])
        if name not in self.callbacks:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None and spec.loader is not None:
                spec.loader = _ThenCall(spec.loader, name, self)
                return spec
        return None

    def _loaded_elsewhere(self, top: str) -> None:
        """A watched module that got loaded without our loader (a finder put ahead of this
        one, a module set into ``sys.modules`` by hand): its callback runs at the next import
        under its name, once its body has finished."""
        module = sys.modules.get(top)
        if module is None or top not in self.callbacks:
            return
        if getattr(getattr(module, "__spec__", None), "_initializing", False):
            return
        self.callbacks.pop(top)(module)


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
