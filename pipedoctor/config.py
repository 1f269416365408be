"""``[tool.pipedoctor]`` in the nearest ``pyproject.toml``, merged with command-line options.

Keys (ruff's spelling): ``select``, ``ignore``, ``per-file-ignores``, ``exclude``, ``fail-on``,
``confidence`` (the least confident findings the gate reports: ``high``, the default, ``medium``
or ``low``), and one ``[tool.pipedoctor.params.PDxxx]`` table per rule whose thresholds you
change.
"""

from __future__ import annotations

import fnmatch
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pipedoctor.evidence import DEFAULT_GATE, parse_confidence
from pipedoctor.report import Severity
from pipedoctor.rules import Selection, load_catalog, tomllib

KEYS = {"select", "ignore", "per-file-ignores", "exclude", "fail-on", "confidence", "params"}


class ConfigError(ValueError):
    """A configuration the user must fix; the CLI prints it on one line and exits 2."""


@dataclass(frozen=True)
class Config:
    selection: Selection = Selection()
    per_file_ignores: dict[str, tuple[str, ...]] = field(default_factory=dict)
    exclude: tuple[str, ...] = ()
    fail_on: Severity = Severity.WARNING
    confidence: str = DEFAULT_GATE
    """The least confident findings the static gate reports."""
    root: Path | None = None
    source: Path | None = None

    def ignored_for(self, path: str) -> tuple[str, ...]:
        """Rule prefixes ignored for ``path`` by ``per-file-ignores``."""
        if not self.per_file_ignores:
            return ()
        candidates = {path, Path(path).name}
        if self.root is not None:
            try:
                candidates.add(Path(path).resolve().relative_to(self.root).as_posix())
            except (ValueError, OSError, RuntimeError):  # elsewhere, or a link loop
                pass
        ignored: list[str] = []
        for pattern, codes in self.per_file_ignores.items():
            if any(fnmatch.fnmatch(c, pattern) for c in candidates):
                ignored.extend(codes)
        return tuple(ignored)

    def excluded(self, path: Path) -> bool:
        return any(
            fnmatch.fnmatch(path.name, p) or fnmatch.fnmatch(path.as_posix(), p)
            for p in self.exclude
        )


def find_pyproject(start: Path) -> Path | None:
    """The nearest ``pyproject.toml`` with a ``[tool.pipedoctor]`` table, from ``start`` up."""
    try:
        start = start.resolve()
        directories = [start, *start.parents] if start.is_dir() else list(start.parents)
    except (OSError, RuntimeError):  # a link loop, a name too long: look from here
        start = Path.cwd()
        directories = [start, *start.parents]
    for directory in directories:
        candidate = directory / "pyproject.toml"
        try:
            found = candidate.is_file()
        except OSError:
            found = False
        if found:
            data = read_toml(candidate)
            tool = data.get("tool")
            if isinstance(tool, dict) and "pipedoctor" in tool:
                return candidate
    return None


def read_toml(path: Path) -> dict[str, Any]:
    """A TOML file's tables; anything that stops it being read is a :class:`ConfigError`."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):  # a pipe would block the read
            raise ConfigError(f"{path}: not a regular file")
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such file") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read it ({exc.strerror or exc})") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError, ValueError) as exc:
        raise ConfigError(f"{path}: {exc}") from None


def _codes(value: Any, where: str) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{where} must be a list of rule codes")
    catalog = load_catalog()
    codes = tuple(v.strip().upper() for v in value if v.strip())
    for code in codes:
        if code != "ALL" and not any(rule_id.startswith(code) for rule_id in catalog):
            raise ConfigError(f"{where}: unknown rule code {code!r} (see `pipedoctor rules`)")
    return tuple("" if c == "ALL" else c for c in codes)


def _params(value: Any, where: str) -> dict[str, dict[str, Any]]:
    if not isinstance(value, dict):
        raise ConfigError(f"{where} must be a table of [params.PDxxx] tables")
    catalog = load_catalog()
    params: dict[str, dict[str, Any]] = {}
    for rule_id, overrides in value.items():
        rule = catalog.get(rule_id.upper())
        if rule is None:
            raise ConfigError(f"{where}: unknown rule {rule_id!r}")
        if not isinstance(overrides, dict):
            raise ConfigError(f"{where}.{rule_id} must be a table")
        for name, setting in overrides.items():
            if name not in rule.params:
                known = ", ".join(rule.params) or "none"
                raise ConfigError(f"{where}.{rule_id}: unknown parameter {name!r} (known: {known})")
            default = rule.params[name]
            number = isinstance(setting, (int, float)) and not isinstance(setting, bool)
            if isinstance(default, (int, float)) and not isinstance(default, bool) and not number:
                raise ConfigError(f"{where}.{rule_id}.{name} must be a number")
            if type(default) in (bool, str, list) and not isinstance(setting, type(default)):
                kind = {bool: "true or false", str: "a string", list: "a list"}[type(default)]
                raise ConfigError(f"{where}.{rule_id}.{name} must be {kind}")
        params[rule.id] = dict(overrides)
    return params


def load_config(
    start: Path,
    *,
    explicit: Path | None = None,
    select: list[str] | None = None,
    ignore: list[str] | None = None,
    extend_ignore: list[str] | None = None,
    fail_on: str | None = None,
    confidence: str | None = None,
) -> Config:
    """Read the project's configuration and overlay the command line on it."""
    source = explicit or find_pyproject(start)
    table: dict[str, Any] = {}
    if source is not None:
        data = read_toml(source)
        if "tool" in data:
            tool = data["tool"]
            if not isinstance(tool, dict):
                raise ConfigError(f"{source}: [tool] must be a table")
            table = tool.get("pipedoctor", {})
        else:
            table = data
        if not isinstance(table, dict):
            raise ConfigError(f"{source}: [tool.pipedoctor] must be a table")
    where = f"{source.name if source else 'config'} [tool.pipedoctor]"
    unknown = sorted(set(table) - KEYS)
    if unknown:
        raise ConfigError(f"{where}: unknown key {unknown[0]!r} (known: {', '.join(sorted(KEYS))})")

    chosen = (
        _codes(select, "--select") if select else _codes(table.get("select", []), f"{where} select")
    )
    ignored = (
        _codes(ignore, "--ignore") if ignore else _codes(table.get("ignore", []), f"{where} ignore")
    )
    ignored += _codes(extend_ignore or [], "--extend-ignore")
    per_file = table.get("per-file-ignores", {})
    if not isinstance(per_file, dict):
        raise ConfigError(f"{where} per-file-ignores must be a table of glob = [codes]")
    exclude = table.get("exclude", [])
    if not isinstance(exclude, list) or not all(isinstance(e, str) for e in exclude):
        raise ConfigError(f"{where} exclude must be a list of glob patterns")
    level = fail_on or table.get("fail-on", "warning")
    if not isinstance(level, str):
        raise ConfigError(f"{where} fail-on must be a string: error, warning or info")
    try:
        threshold = Severity.parse(level)
    except ValueError as exc:
        raise ConfigError(f"fail-on: {exc}") from None
    tier = confidence or table.get("confidence", DEFAULT_GATE)
    if not isinstance(tier, str):
        raise ConfigError(f"{where} confidence must be a string: high, medium or low")
    try:
        tier = parse_confidence(tier)
    except ValueError as exc:
        raise ConfigError(f"confidence: {exc}") from None
    return Config(
        selection=Selection(
            select=chosen,
            ignore=ignored,
            params=_params(table.get("params", {}), f"{where} params"),
        ),
        per_file_ignores={
            p: _codes(c, f"{where} per-file-ignores {p!r}") for p, c in per_file.items()
        },
        exclude=tuple(exclude),
        fail_on=threshold,
        confidence=tier,
        root=source.parent.resolve() if source else None,
        source=source,
    )
