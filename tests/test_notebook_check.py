"""`pipedoctor.check(dataset, model)` in a real Jupyter kernel, as a notebook user calls it.

The kernel compiles each cell from a temporary file (``/tmp/ipykernel_.../123.py``); the
findings must name the cell as IPython does (``Cell In[2], line 7``) without any call but
``import pipedoctor``, whether pipedoctor or TensorFlow was imported first.
"""

from __future__ import annotations

import json

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")
pytest.importorskip("tensorflow")

PIPELINE = """\
import numpy as np
import tensorflow as tf
import keras

x = np.random.default_rng(0).normal(size=(4096, 64)).astype("float32")
y = np.zeros((4096,), "int32")
ds = tf.data.Dataset.from_tensor_slices((x, y))
ds = ds.map(lambda a, b: (tf.sort(tf.math.cumsum(tf.tile(a, [8]))[:64]), b))
ds = ds.batch(32)
"""
MODEL = """\
model = keras.Sequential([keras.Input((64,)), keras.layers.Dense(10)])
model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
"""
CHECK = """\
import json
from pipedoctor.render.text import render_text
report = pipedoctor.check(ds, model, timeout=20)
print(json.dumps([[f.rule, f.path, f.line] for f in report.findings]))
print(json.dumps(render_text(report) + report._repr_html_()))
"""


def run(cells: list[str]) -> list[str]:
    """Each cell's stdout, after a real kernel ran them in order."""
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    nbclient.NotebookClient(notebook, timeout=240, kernel_name="python3").execute()
    return [
        "".join(o.get("text", "") for o in cell.outputs if o.get("name") == "stdout")
        for cell in notebook.cells
    ]


@pytest.mark.parametrize("pipedoctor_first", [True, False], ids=["pipedoctor-first", "tf-first"])
def test_findings_name_the_cell_that_built_the_pipeline(pipedoctor_first: bool) -> None:
    first = "import pipedoctor\n" if pipedoctor_first else "import tensorflow\nimport pipedoctor\n"
    if not pipedoctor_first:
        # One check is enough to see the findings placed; the other order only needs the sites.
        outputs = run([first, PIPELINE, SITE])
        assert json.loads(outputs[2]) == ["Cell In[2]", 9]
        return
    outputs = run([first, PIPELINE, MODEL, CHECK])
    findings, text = outputs[3].splitlines()
    placed = [f for f in json.loads(findings) if f[1]]
    assert placed, findings
    assert all(path == "Cell In[2]" and 7 <= line <= 9 for _, path, line in placed), placed
    shown = json.loads(text)
    assert "Cell In[2], line " in shown and "Cell In[2]:" not in shown  # as IPython says it
    assert "ipykernel" not in findings + text


SITE = """\
import json
from pipedoctor.capture.sites import site_of
print(json.dumps([site_of(ds).path, site_of(ds).line]))
"""
