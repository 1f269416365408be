"""Live dataset → ``Pipeline``: the graph front end.

It reads the dataset's GraphDef for exact parameters and for what each mapped function does
(the op types in its function library), and walks the Python dataset objects alongside for the
element structure of each stage and the call site that created it. Every rule whose scope
includes ``graph`` then runs on the same ``Pipeline`` model the static front end fills.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

import tensorflow as tf

from pipedoctor.capture.sites import made_in_library, site_of
from pipedoctor.graph import graphdef as g
from pipedoctor.graph.ops import OPS
from pipedoctor.pipeline import AUTOTUNE, Files, FunctionFacts, Pipeline, Stage

READER_OPS = {k: v for k, v in OPS.items() if v.endswith("RecordDataset") or v == "TextLineDataset"}
READER_CLASSES = {
    "TFRecordDatasetV2": "TFRecordDataset",
    "TextLineDatasetV2": "TextLineDataset",
    "FixedLengthRecordDatasetV2": "FixedLengthRecordDataset",
}
DECODE_OPS = frozenset(
    """DecodeJpeg DecodePng DecodeImage DecodeBmp DecodeGif DecodeRaw DecodeCompressed DecodeWav
    DecodeCSV DecodeAndCropJpeg DecodeProtoV2 ParseExample ParseExampleV2 ParseSingleExample
    ParseSequenceExample ParseSequenceExampleV2 ParseSingleSequenceExample ParseTensor
    ResizeBilinear ResizeBicubic ResizeNearestNeighbor ResizeArea ScaleAndTranslate""".split()
)
RANDOM_OPS = frozenset(
    """RandomUniform RandomUniformInt RandomStandardNormal TruncatedNormal RandomShuffle
    RandomGamma RandomPoisson RandomPoissonV2 Multinomial RandomCrop StatefulUniform
    StatefulUniformInt StatefulStandardNormalV2 StatefulTruncatedNormal RngReadAndSkip
    RngSkip""".split()
)
STATE_OPS = frozenset({"ReadVariableOp", "AssignVariableOp", "AssignAddVariableOp"})
IMAGE_OPS = frozenset(
    """ReverseV2 AdjustContrastv2 AdjustHue AdjustSaturation ImageProjectiveTransformV3
    CropAndResize RGBToHSV HSVToRGB""".split()
)
PYTHON_OPS = frozenset({"EagerPyFunc", "PyFunc", "PyFuncStateless"})
ELEMENTWISE_OPS = frozenset(
    """Cast Mul AddV2 Add Sub RealDiv Div Maximum Minimum ClipByValue Identity Const Sqrt Rsqrt
    Square Exp Log Neg Abs Pow FloorDiv Sigmoid Tanh NoOp""".split()
)


@dataclass
class GraphStage:
    """A stage with the graph node it came from and what a truncated rebuild needs."""

    stage: Stage
    node: str
    spec: Any
    batched: bool
    internal: bool = False
    """A node the user did not write (a reader's own list of file names)."""
    samples: bool = True
    """Its elements are samples or batches of them, so a rate of its prefix is in samples
    per second (not so for the index bookkeeping before Keras gathers its batches)."""
    in_library: bool = False
    """Made by a library's code inside the user's call (a factory's own ``shuffle``): the
    source can change it only through that call's arguments."""


@dataclass
class GraphPipeline:
    graph: g.GraphDef
    stages: list[GraphStage]
    pipeline: Pipeline
    notes: list[str] = field(default_factory=list)


def function_facts(graph: g.GraphDef, node: g.NodeDef) -> FunctionFacts | None:
    names = g.functions_of(node)
    if not names:
        return None
    ops: list[str] = []
    for name in names:
        ops += g.function_ops(graph, name)
    kinds = set(ops)
    stateless = any(op.startswith("StatelessRandom") for op in kinds)
    random = bool(kinds & RANDOM_OPS) or (stateless and bool(kinds & STATE_OPS))
    reader = next((READER_OPS[op] for op in ops if op in READER_OPS), None)
    return FunctionFacts(
        decodes=bool(kinds & DECODE_OPS),
        random=random,
        augments_images=random and bool(kinds & IMAGE_OPS),
        python=bool(kinds & PYTHON_OPS),
        elementwise=bool(kinds)
        and kinds <= ELEMENTWISE_OPS
        and bool(kinds - {"Identity", "Const", "NoOp"}),
        reader=reader,
        calls=frozenset(kinds),
    )


def python_chain(dataset: Any) -> list[Any]:
    """Dataset objects from source to output, skipping wrappers without a graph node."""
    out = []
    current = dataset
    while current is not None:
        inputs = current._inputs()
        if not (inputs and inputs[0]._variant_tensor is current._variant_tensor):
            out.append(current)
        current = inputs[0] if inputs else None
    return list(reversed(out))


def spec_from_node(node: g.NodeDef) -> Any:
    type_attr, shape_attr = g.element_attrs(node)
    types = [tf.as_dtype(t) for t in type_attr.list.type]
    shapes = [tf.TensorShape(s) for s in shape_attr.list.shape]
    specs = tuple(tf.TensorSpec(s, t) for s, t in zip(shapes, types, strict=False))
    return specs[0] if len(specs) == 1 else specs


def _parallelism(graph: g.GraphDef, node: g.NodeDef) -> Any:
    if node.op in ("MapDataset", "InterleaveDataset", "FlatMapDataset", "BatchDatasetV2"):
        return None
    if node.op == "LegacyParallelInterleaveDatasetV2":
        return g.param(graph, node, "cycle_length")
    return g.param(graph, node, "num_parallel_calls")


def to_stage(graph: g.GraphDef, node: g.NodeDef, obj: Any) -> Stage:
    op = OPS.get(node.op, node.op)
    params: dict[str, Any] = {}
    fn = function_facts(graph, node)
    reader = READER_CLASSES.get(type(obj).__name__) if obj is not None else None
    if reader is not None:
        files = (
            g.string_consts_feeding(graph, g.dataset_inputs(graph, node)[0])
            if g.dataset_inputs(graph, node)
            else []
        )
        params["filenames"] = Files(len(files) or None, literal=bool(files))
        params["file_bytes"] = sum(os.path.getsize(f) for f in files if os.path.isfile(f))
        parallel = _parallelism(graph, node)
        if parallel is not None:
            params["num_parallel_reads"] = AUTOTUNE if parallel == -1 else parallel
        return Stage(reader, params, None, location=site_of(obj))
    if op in ("map", "interleave", "batch"):
        parallel = _parallelism(graph, node)
        if parallel is not None:
            params["num_parallel_calls"] = AUTOTUNE if parallel == -1 else parallel
    for name in ("batch_size", "buffer_size", "cycle_length", "num_shards", "count"):
        value = g.param(graph, node, name)
        if value is not None:
            params[name] = AUTOTUNE if value == -1 and name == "buffer_size" else value
    if op == "cache":
        params["filename"] = g.param(graph, node, "filename") or ""
    if op == "shuffle" and "reshuffle_each_iteration" in node.attr:
        params["reshuffle_each_iteration"] = node.attr["reshuffle_each_iteration"].b
    location = site_of(obj) if obj is not None else None
    return Stage(op, params, fn, location=location)


def prefix_cardinality(gp: GraphPipeline, index: int) -> int:
    """Elements out of stage ``index`` (negative: infinite or unknown), from a truncated rebuild."""
    stage = gp.stages[index]
    return int(g.rebuild(g.truncated(gp.graph, stage.node), stage.spec).cardinality())


def batched_by_spec(stages: list[GraphStage]) -> None:
    """Training is handed batches, even where no ``batch`` op made them: Keras's pipeline
    over in-memory arrays gathers each batch from shuffled indices in a ``map``. The stages
    whose elements look like the ones training gets are taken as batches; what earlier ones
    yield is not known to be samples (indices, a whole permutation), so they are not timed."""
    final = stages[-1].spec if stages else None
    batches = True
    for stage in reversed(stages):
        try:
            batches = batches and stage.spec == final
        except (TypeError, ValueError):
            batches = False
        stage.batched = batches
        stage.samples = batches


def read_dataset(dataset: Any, sink: str | None = "fit") -> GraphPipeline:
    """The dataset as a ``Pipeline``, with its graph nodes and per-stage element specs."""
    graph = g.serialize(dataset)
    nodes = g.chain(graph)
    objects = python_chain(dataset)
    paired = len(objects) == len(nodes)
    notes = [] if paired else ["the dataset's Python objects do not match its graph: no call sites"]
    stages: list[GraphStage] = []
    batched = False
    for i, node in enumerate(nodes):
        obj = objects[i] if paired else None
        stage = to_stage(graph, node, obj)
        if stage.op in ("batch", "padded_batch", "map_and_batch"):
            batched = True
        elif stage.op == "unbatch":
            batched = False
        spec = obj.element_spec if obj is not None else spec_from_node(node)
        if (
            stage.op in READER_CLASSES.values()
            and stages
            and stages[-1].stage.op == "from_tensor_slices"
        ):
            stages[-1].internal = True
        in_library = obj is not None and made_in_library(obj)
        stages.append(GraphStage(stage, node.name, spec, batched, in_library=in_library))
    if sink == "fit" and not any(s.batched for s in stages):
        batched_by_spec(stages)
    pipeline = Pipeline(tuple(s.stage for s in stages if not s.internal), sink)
    return GraphPipeline(graph, stages, pipeline, notes)
