"""xprof's own converters (``tensorboard-plugin-profile``, now published as ``xprof``): one host's
``.xplane.pb`` to the tool data TensorBoard's Profile tab shows, read as Python values.

The converters cache their results as files beside the profile they read, so they are run on a
link to it in a private folder: the user's log directory is never written to. Their native code
logs every step to the process's stderr; that is silenced while they run.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pipedoctor.profile.xspace import ProfileError

TOOLS = ("overview_page", "input_pipeline_analyzer")


@contextmanager
def quiet_stderr() -> Iterator[None]:
    """File descriptor 2 to /dev/null for a moment (native logging does not go through
    Python's ``sys.stderr``)."""
    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError):
        yield
        return
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def tool_data(path: Path, tools: tuple[str, ...] = TOOLS) -> dict[str, Any]:
    """Each tool's data for the host profile at ``path``, parsed from its JSON (``None`` for a
    tool the converter could not produce)."""
    try:
        from xprof.convert import raw_to_tool_data
    except ImportError as exc:
        raise ProfileError(
            f"reading profiles needs xprof ({exc}): pip install 'pipedoctor[tf]'"
        ) from None
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="pipedoctor-xprof-") as private:
        session = Path(private) / "session"
        session.mkdir()
        link = session / path.name
        try:
            link.symlink_to(path.resolve())
        except OSError:
            link.write_bytes(path.read_bytes())
        with quiet_stderr():
            for tool in tools:
                try:
                    data, _ = raw_to_tool_data.xspace_to_tool_data(
                        [str(link)], tool, {"use_saved_result": False}
                    )
                except (ValueError, RuntimeError, OSError):
                    data = None
                out[tool] = _parsed(data)
    return out


def _parsed(data: Any) -> Any:
    if not data:
        return None
    try:
        return json.loads(data)
    except (ValueError, UnicodeDecodeError):
        return None


@dataclass
class StepBreakdown:
    """xprof's per-step breakdown of one host: step time and the part spent waiting for input."""

    step_ms: list[float] = field(default_factory=list)
    input_ms: list[float] = field(default_factory=list)
    conclusion: str = ""
    hardware: str = ""

    @property
    def input_wait_fraction(self) -> float | None:
        total = sum(self.step_ms)
        return sum(self.input_ms) / total if total > 0 else None


def _table(data: Any, index: int) -> dict[str, Any]:
    if isinstance(data, list) and len(data) > index and isinstance(data[index], dict):
        return data[index]
    return {}


def step_breakdown(data: dict[str, Any]) -> StepBreakdown:
    """From ``input_pipeline_analyzer``'s step table: its columns are found by id, so a
    reordering in a later xprof does not misread them."""
    table = _table(data.get("input_pipeline_analyzer"), 1)
    columns = [c.get("id") for c in table.get("cols", [])]
    props = table.get("p") or {}
    found = StepBreakdown(
        conclusion=str(props.get("input_conclusion", "")),
        hardware=str(props.get("hardware_type", "")),
    )
    if "stepTimeMs" not in columns or "infeedTimeMs" not in columns:
        return found
    step, wait = columns.index("stepTimeMs"), columns.index("infeedTimeMs")
    for row in table.get("rows", []):
        cells = [c.get("v") if isinstance(c, dict) else None for c in row.get("c", [])]
        if len(cells) > max(step, wait) and isinstance(cells[step], (int, float)):
            found.step_ms.append(float(cells[step]))
            found.input_ms.append(float(cells[wait] or 0.0))
    return found


def overview(data: dict[str, Any]) -> dict[str, Any]:
    """The overview page's headline figures that the report uses."""
    props = _table(data.get("overview_page"), 0).get("p") or {}
    run = _table(data.get("overview_page"), 2).get("p") or {}
    recommendation = _table(data.get("overview_page"), 3).get("p") or {}
    return {
        "device_type": run.get("device_type"),
        "device_idle_percent": _percent(props.get("device_idle_time_percent")),
        "host_idle_percent": _percent(props.get("host_idle_time_percent")),
        "bottleneck": recommendation.get("bottleneck"),
        "statement": recommendation.get("statement"),
    }


def _percent(text: Any) -> float | None:
    try:
        return float(str(text).rstrip("%"))
    except ValueError:
        return None
