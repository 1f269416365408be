"""The static front end: source text → ``Analysis`` with the standard library's ``ast`` only.

It never imports TensorFlow and never imports or executes the code it reads.
"""

from __future__ import annotations

import ast

from pipedoctor.pipeline import Analysis
from pipedoctor.static.interpreter import analyze, analyze_module
from pipedoctor.static.names import TRACKED_ROOTS

__all__ = ["analyze", "analyze_module", "analyze_source", "worth_analysing"]

TRIGGERS = (
    "Dataset",
    "dataset_from",
    "make_csv_dataset",
    "make_batched_features_dataset",
    "tensorflow_datasets",
    "Strategy",
    "DataParallel",
    "ModelParallel",
    "set_distribution",
    ".fit(",
    "apply_gradients",
    "input_fn",
)
"""Every pipeline source, every strategy and every Keras distribution has one of these in its
name; a module that trains on what another module's function returns, one of the last three
(the project pass reads where that dataset goes)."""


def worth_analysing(text: str) -> bool:
    """Cheap pre-check on the text: a module that names neither TensorFlow/Keras nor a dataset
    or strategy API has nothing the rules look at, so only its syntax is checked. One that
    names a dataset or an input function without TensorFlow may pass another module's dataset
    on to its callers (``def get_train(): return make_dataset(...)``): the project pass
    follows it."""
    if any(t in text for t in TRIGGERS) and any(root in text for root in TRACKED_ROOTS):
        return True
    return ("dataset" in text or "input_fn" in text) and "import" in text


def analyze_source(text: str, path: str = "<string>") -> Analysis:
    """Parse and analyse one module; raises ``SyntaxError`` when it does not parse."""
    tree = ast.parse(text, filename=path)
    if not worth_analysing(text):
        return Analysis(path)
    return analyze_module(tree, path, text)
