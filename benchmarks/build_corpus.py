"""Fetch the public repositories that ``tests/corpus/labels.csv`` was judged on.

For each repository and commit named in the labels, fetches that commit and copies its
``.py`` and ``.ipynb`` files into ``OUT_DIR/owner+name/`` at their paths in the repository (for
keras-team/keras only ``examples/`` and ``guides/``: the rest is the library itself). The files
stay outside this repository: they are other people's code, read only to measure the lint.

    python benchmarks/build_corpus.py OUT_DIR [--remote https://github.com/{repository}]

Needs ``git`` and network access to the remote.
"""

from __future__ import annotations

import argparse
import csv
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

LABELS = Path(__file__).resolve().parent.parent / "tests" / "corpus" / "labels.csv"
ONLY = {"keras-team/keras": ("examples/", "guides/")}
"""Repositories of which only some folders are training code written as users write it."""


def repositories(labels: Path = LABELS) -> dict[str, str]:
    with labels.open(newline="", encoding="utf-8") as handle:
        return {row["repository"]: row["commit"] for row in csv.DictReader(handle)}


def fetch(repository: str, commit: str, remote: str, out: Path) -> int:
    """Copy the commit's Python files and notebooks into ``out``; returns how many."""
    with tempfile.TemporaryDirectory() as scratch:
        work = Path(scratch)
        git = ["git", "-C", str(work)]
        subprocess.run([*git, "init", "-q"], check=True)
        subprocess.run([*git, "fetch", "-q", "--depth", "1", remote, commit], check=True)
        subprocess.run([*git, "checkout", "-q", "FETCH_HEAD"], check=True)
        copied = 0
        for path in sorted(work.rglob("*")):
            relative = path.relative_to(work).as_posix()
            if relative.startswith(".git/") or path.suffix not in (".py", ".ipynb"):
                continue
            if not path.is_file() or not relative.startswith(ONLY.get(repository, ("",))):
                continue
            target = out / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, target)
            copied += 1
        return copied


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--remote", default="https://github.com/{repository}")
    args = parser.parse_args()
    failed = []
    for repository, commit in sorted(repositories().items()):
        folder = args.out / repository.replace("/", "+", 1)
        if folder.exists():
            print(f"{repository}: {folder} exists, kept")
            continue
        remote = args.remote.format(repository=repository, folder=folder.name)
        try:
            count = fetch(repository, commit, remote, folder)
        except subprocess.CalledProcessError as exc:
            print(f"{repository}: git failed ({exc})", file=sys.stderr)
            failed.append(repository)
            continue
        print(f"{repository} @ {commit[:12]}: {count} files")
    if failed:
        sys.exit(f"could not fetch {len(failed)} repositories: {', '.join(failed)}")


if __name__ == "__main__":
    main()
