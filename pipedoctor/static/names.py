"""Resolve what a name in user code refers to, through every import spelling TensorFlow allows.

``tf.data.Dataset``, ``tfd.Dataset`` (``from tensorflow import data as tfd``),
``Dataset`` (``from tensorflow.data import Dataset``) and ``tf.compat.v2.data.Dataset`` all
resolve to the canonical ``tensorflow.data.Dataset``; Keras spellings resolve to ``keras.*``.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from functools import lru_cache

TRACKED_ROOTS = frozenset(
    {
        "tensorflow",
        "keras",
        "tf_keras",
        "tensorflow_datasets",
        "tensorflow_decision_forests",
        "numpy",
    }
)
"""Top-level packages whose names the analysis follows; anything else stays opaque."""
HELPER_ROOTS = frozenset(
    {"glob", "sklearn", "keras_hub", "keras_nlp", "tensorflow_text", "pandas", "byteps", "sonnet"}
)
"""Packages whose names are resolved too, for what they tell about a pipeline (files a glob
lists, a toy data set, a library that prepares its own input, a tokeniser, a library's own
``tf.distribute`` strategy), though a module naming only them has nothing for the rules."""
RESOLVED_ROOTS = TRACKED_ROOTS | HELPER_ROOTS

_PREFIX_REWRITES: tuple[tuple[str, str], ...] = (
    ("tensorflow.compat.v1.", "tensorflow."),
    ("tensorflow.compat.v2.", "tensorflow."),
    ("tensorflow.contrib.data.", "tensorflow.data.experimental."),  # TF1's contrib, the same ops
    ("tensorflow.python.keras.", "keras."),
    ("tensorflow.keras.", "keras."),
    ("tf_keras.", "keras."),
    ("keras.src.", "keras."),
    ("keras.api.", "keras."),
    ("keras.layers.experimental.preprocessing.", "keras.layers."),
    (
        "keras.preprocessing.image_dataset_from_directory",
        "keras.utils.image_dataset_from_directory",
    ),
    ("keras.preprocessing.text_dataset_from_directory", "keras.utils.text_dataset_from_directory"),
    (
        "keras.preprocessing.timeseries_dataset_from_array",
        "keras.utils.timeseries_dataset_from_array",
    ),
    ("tensorflow.data.experimental.AUTOTUNE", "tensorflow.data.AUTOTUNE"),
    (
        "tensorflow.data.experimental.sample_from_datasets",
        "tensorflow.data.Dataset.sample_from_datasets",
    ),
    (
        "tensorflow.data.experimental.choose_from_datasets",
        "tensorflow.data.Dataset.choose_from_datasets",
    ),
    ("tensorflow.data.experimental.Counter", "tensorflow.data.Dataset.counter"),
    ("tensorflow.experimental.numpy.", "tensorflow.numpy."),
)


@lru_cache(maxsize=4096)
def canonical(dotted: str) -> str:
    """The one spelling of a TensorFlow/Keras name that the rest of the analysis compares."""
    dotted = dotted + "."
    changed = True
    while changed:
        changed = False
        for prefix, replacement in _PREFIX_REWRITES:
            if dotted.startswith(prefix) and not dotted.startswith(replacement + "."):
                dotted = replacement + dotted[len(prefix) :]
                if not dotted.endswith("."):
                    dotted += "."
                changed = True
    return dotted.rstrip(".")


def import_statements(tree: ast.Module) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import statement of a module, at any depth.

    Walks statements only (imports are statements), which is far cheaper than ``ast.walk``.
    """
    pending: list[ast.stmt] = list(tree.body)
    while pending:
        node = pending.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
            continue
        for field in ("body", "orelse", "finalbody", "handlers", "cases"):
            children = getattr(node, field, None)
            if children:
                pending.extend(children)


def import_table(tree: ast.Module) -> dict[str, str]:
    """Local name → canonical dotted path, for imports of the tracked packages, at any depth."""
    table: dict[str, str] = {}
    for node in import_statements(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                root = alias.name.split(".")[0]
                if root not in RESOLVED_ROOTS:
                    continue
                if alias.asname:
                    table[alias.asname] = canonical(alias.name)
                else:
                    table[root] = root
        else:
            if not node.module or node.level or node.module.split(".")[0] not in RESOLVED_ROOTS:
                continue
            for alias in node.names:
                if alias.name != "*":
                    table[alias.asname or alias.name] = canonical(f"{node.module}.{alias.name}")
    return table


NOT_PROJECT_ROOTS = frozenset(sys.stdlib_module_names) | {
    "absl",
    "cv2",
    "h5py",
    "jax",
    "librosa",
    "matplotlib",
    "PIL",
    "scipy",
    "seaborn",
    "six",
    "tensorflow_addons",
    "tensorflow_hub",
    "tensorflow_io",
    "tfx",
    "torch",
    "tqdm",
    "transformers",
    "wandb",
    "yaml",
}
"""Packages that are never a module of the user's project (the standard library, and the
libraries training code imports most), besides those the analysis resolves."""


def project_import_table(tree: ast.Module) -> dict[str, str]:
    """Local name → dotted name as imported, for imports that may be modules of the user's
    own project: relative ones (``from .data import make_ds`` → ``.data.make_ds``) and
    absolute ones of packages that are not known libraries. Which of them are files of the
    project is for the project pass to find."""
    table: dict[str, str] = {}
    for node in import_statements(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                root = alias.name.split(".")[0]
                if root in RESOLVED_ROOTS or root in NOT_PROJECT_ROOTS:
                    continue
                if alias.asname:
                    table[alias.asname] = alias.name
                else:
                    table[root] = root
        else:
            module = node.module or ""
            root = module.split(".")[0]
            if not node.level and (root in RESOLVED_ROOTS or root in NOT_PROJECT_ROOTS):
                continue
            prefix = "." * node.level + module
            for alias in node.names:
                if alias.name != "*":
                    dot = "." if module else ""
                    table[alias.asname or alias.name] = f"{prefix}{dot}{alias.name}"
    return table


def dotted_name(node: ast.expr) -> str | None:
    """``a.b.c`` for a chain of attributes on a plain name; ``None`` for anything else."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None
