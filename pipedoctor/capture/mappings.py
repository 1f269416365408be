"""Make the user's memory-mapped files private to the process, where they stand.

A ``numpy.memmap`` (or ``mmap``) opened for writing before a custom loop writes through memory:
no system call, no audit event, nothing the write guard can see. When the guard is armed, each
shared writable mapping of a file is replaced, at the same address, by a private (copy-on-write)
mapping of the same file range: the process reads what it read before, and what it writes from
then on stays in its own memory. The script's process ends after its loop is timed, so nothing
needs those writes back. Linux only (``/proc/self/maps``, ``mmap`` with ``MAP_FIXED``);
elsewhere nothing changes.
"""

from __future__ import annotations

import ctypes
import mmap
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Mapping:
    """One line of ``/proc/self/maps``: a shared, writable mapping of a file."""

    start: int
    end: int
    offset: int
    path: str


def shared_writable(maps_text: str) -> list[Mapping]:
    """The shared, writable file mappings in ``/proc/<pid>/maps`` text (``rw-s``), files only:
    no anonymous memory, no ``[heap]``-style pseudo-paths, no deleted files."""
    found = []
    for line in maps_text.splitlines():
        parts = line.split(maxsplit=5)
        if len(parts) < 6:
            continue
        span, perms, offset, _device, inode, path = parts
        if len(perms) < 4 or perms[1] != "w" or perms[3] != "s" or inode == "0":
            continue
        if not path.startswith("/") or path.endswith(" (deleted)"):
            continue
        start, _, end = span.partition("-")
        found.append(Mapping(int(start, 16), int(end, 16), int(offset, 16), path))
    return found


def privatize(exempt: Callable[[str], bool]) -> list[str]:
    """Remap every shared writable mapping of a file that ``exempt`` does not pass as private
    copy-on-write memory at the same address; the paths remapped. A mapping that cannot be
    remapped is left as it was (and not named)."""
    if not sys.platform.startswith("linux"):
        return []
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as handle:
            mappings = shared_writable(handle.read())
    except OSError:
        return []
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = (
        ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long,
    )  # fmt: skip
    done = []
    for found in mappings:
        if exempt(found.path):
            continue
        try:
            fd = os.open(found.path, os.O_RDONLY)
        except OSError:
            continue
        try:
            address = libc.mmap(
                found.start,
                found.end - found.start,
                mmap.PROT_READ | mmap.PROT_WRITE,
                mmap.MAP_PRIVATE | MAP_FIXED,
                fd,
                found.offset,
            )
        finally:
            os.close(fd)
        if address == found.start:
            done.append(found.path)
    return done


MAP_FIXED = getattr(mmap, "MAP_FIXED", 0x10)
"""``MAP_FIXED`` (Python 3.13 names it; its value on Linux before that)."""
