"""Read (and, for tests, write) the ``.xplane.pb`` files the TensorFlow profiler saves, without
importing TensorFlow.

The file is one ``XSpace`` protocol buffer (the profiler's public ``xplane.proto``): planes (one
for the host, one per accelerator), each with lines (threads or device streams) of timed events
whose names and stats are interned in per-plane metadata tables. The schema is declared here
field by field, so reading a profile on a laptop needs only ``protobuf`` (which xprof installs),
not a TensorFlow import of several seconds.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

HOST_PLANE = "/host:CPU"
DEVICE_PLANE_PREFIX = "/device:"
TASK_PLANE = "Task Environment"

# (message, [(field, number, type, label, message type)]), label "r" for repeated. The field
# numbers are the wire format's, from xplane.proto.
_SCHEMA: tuple[tuple[str, tuple[tuple[str, int, str, str, str], ...]], ...] = (
    ("XSpace", (
        ("planes", 1, "message", "r", "XPlane"), ("errors", 2, "string", "r", ""),
        ("warnings", 3, "string", "r", ""), ("hostnames", 4, "string", "r", ""),
    )),
    ("XPlane", (
        ("id", 1, "int64", "", ""), ("name", 2, "string", "", ""),
        ("lines", 3, "message", "r", "XLine"),
        ("event_metadata", 4, "message", "r", "XPlane.EventMetadataEntry"),
        ("stat_metadata", 5, "message", "r", "XPlane.StatMetadataEntry"),
        ("stats", 6, "message", "r", "XStat"),
    )),
    ("XPlane.EventMetadataEntry", (
        ("key", 1, "int64", "", ""), ("value", 2, "message", "", "XEventMetadata"),
    )),
    ("XPlane.StatMetadataEntry", (
        ("key", 1, "int64", "", ""), ("value", 2, "message", "", "XStatMetadata"),
    )),
    ("XLine", (
        ("id", 1, "int64", "", ""), ("display_id", 10, "int64", "", ""),
        ("name", 2, "string", "", ""), ("display_name", 11, "string", "", ""),
        ("timestamp_ns", 3, "int64", "", ""), ("duration_ps", 9, "int64", "", ""),
        ("events", 4, "message", "r", "XEvent"),
    )),
    ("XEvent", (
        ("metadata_id", 1, "int64", "", ""), ("offset_ps", 2, "int64", "", ""),
        ("num_occurrences", 5, "int64", "", ""), ("duration_ps", 3, "int64", "", ""),
        ("stats", 4, "message", "r", "XStat"),
    )),
    ("XStat", (
        ("metadata_id", 1, "int64", "", ""), ("double_value", 2, "double", "", ""),
        ("uint64_value", 3, "uint64", "", ""), ("int64_value", 4, "int64", "", ""),
        ("str_value", 5, "string", "", ""), ("bytes_value", 6, "bytes", "", ""),
        ("ref_value", 7, "uint64", "", ""),
    )),
    ("XEventMetadata", (
        ("id", 1, "int64", "", ""), ("name", 2, "string", "", ""),
        ("display_name", 4, "string", "", ""), ("metadata", 3, "bytes", "", ""),
        ("stats", 5, "message", "r", "XStat"), ("child_id", 6, "int64", "r", ""),
    )),
    ("XStatMetadata", (
        ("id", 1, "int64", "", ""), ("name", 2, "string", "", ""),
        ("description", 3, "string", "", ""),
    )),
)  # fmt: skip
_PACKAGE = "pipedoctor.xplane"
_ONEOFS = {"XEvent": ("data", ("offset_ps", "num_occurrences")), "XStat": ("value", tuple(
    f for f, *_ in dict(_SCHEMA)["XStat"] if f != "metadata_id"))}  # fmt: skip


class ProfileError(ValueError):
    """A profile that cannot be read: the message is one line, for the user."""


@cache
def messages() -> dict[str, Any]:
    """The XSpace message classes, built once in a private descriptor pool (so a TensorFlow
    loaded in the same process, with its own copy of the schema, never clashes)."""
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

    types = descriptor_pb2.FieldDescriptorProto
    file = descriptor_pb2.FileDescriptorProto(
        name="pipedoctor_xplane.proto", package=_PACKAGE, syntax="proto3"
    )
    built: dict[str, Any] = {}
    for full_name, fields in _SCHEMA:
        outer, _, inner = full_name.partition(".")
        if inner:
            message = built[outer].nested_type.add(name=inner)
            message.options.map_entry = True
        else:
            message = built[outer] = file.message_type.add(name=outer)
        oneof = _ONEOFS.get(full_name)
        if oneof:
            message.oneof_decl.add(name=oneof[0])
        for name, number, kind, label, type_name in fields:
            field = message.field.add(name=name, number=number)
            field.type = getattr(types, f"TYPE_{kind.upper()}")
            field.label = types.LABEL_REPEATED if label == "r" else types.LABEL_OPTIONAL
            if type_name:
                field.type_name = f".{_PACKAGE}.{type_name}"
            if oneof and name in oneof[1]:
                field.oneof_index = 0
    pool = descriptor_pool.DescriptorPool()
    pool.Add(file)
    return {
        name: message_factory.GetMessageClass(pool.FindMessageTypeByName(f"{_PACKAGE}.{name}"))
        for name, _ in _SCHEMA
        if "." not in name
    }


def load(path: Path) -> Any:
    """The ``XSpace`` in ``path``; a :class:`ProfileError` for a file that is not one (cut
    short while it was copied, or not a profile at all)."""
    from google.protobuf.message import DecodeError

    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ProfileError(f"{path}: cannot read: {exc.strerror or exc}") from None
    if not data:
        raise ProfileError(f"{path}: the file is empty (the capture did not finish writing it)")
    space = messages()["XSpace"]()
    try:
        space.ParseFromString(data)
    except DecodeError:
        raise ProfileError(
            f"{path}: not a readable profile: the file is truncated or corrupt "
            f"({len(data):,} bytes that do not parse as an XSpace)"
        ) from None
    return space


@dataclass(frozen=True)
class Event:
    """One timed event, with absolute times in picoseconds and its stats by name."""

    name: str
    start_ps: int
    duration_ps: int
    stats: dict[str, Any]

    @property
    def end_ps(self) -> int:
        return self.start_ps + self.duration_ps


class Plane:
    """One plane with its interned names resolved."""

    def __init__(self, plane: Any) -> None:
        self.raw = plane
        self.name: str = plane.name
        self._event_names = {k: v.name for k, v in plane.event_metadata.items()}
        self._event_meta = dict(plane.event_metadata)
        self._stat_names = {k: v.name for k, v in plane.stat_metadata.items()}

    def lines(self, prefix: str = "") -> Iterator[Any]:
        return (line for line in self.raw.lines if line.name.startswith(prefix))

    def event_name(self, event: Any) -> str:
        return self._event_names.get(event.metadata_id, "")

    def events(self, line: Any, names: tuple[str, ...] | None = None) -> Iterator[Event]:
        """The line's events (only those whose name starts with one of ``names``, if given)."""
        base = line.timestamp_ns * 1000
        for event in line.events:
            name = self._event_names.get(event.metadata_id, "")
            if names is not None and not name.startswith(names):
                continue
            yield Event(name, base + event.offset_ps, event.duration_ps, self.stats(event))

    def stats(self, event: Any) -> dict[str, Any]:
        """The event's stats and its metadata's, by name (``ref_value`` resolved to a string)."""
        meta = self._event_meta.get(event.metadata_id)
        found: dict[str, Any] = {}
        for stat in [*(meta.stats if meta is not None else ()), *event.stats]:
            kind = stat.WhichOneof("value")
            if kind is None:
                continue
            value = getattr(stat, kind)
            if kind == "ref_value":
                value = self._stat_names.get(value, "")
            found[self._stat_names.get(stat.metadata_id, "")] = value
        return found


def planes(space: Any) -> list[Plane]:
    return [Plane(p) for p in space.planes]
