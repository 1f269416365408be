"""What the static front end knows about the TensorFlow and Keras APIs, by canonical name."""

from __future__ import annotations

DATASET = "tensorflow.data.Dataset"

SOURCES: dict[str, str] = {
    f"{DATASET}.from_tensor_slices": "from_tensor_slices",
    f"{DATASET}.from_tensors": "from_tensors",
    f"{DATASET}.range": "range",
    f"{DATASET}.from_generator": "from_generator",
    f"{DATASET}.list_files": "list_files",
    f"{DATASET}.zip": "zip",
    f"{DATASET}.sample_from_datasets": "sample_from_datasets",
    f"{DATASET}.choose_from_datasets": "choose_from_datasets",
    f"{DATASET}.counter": "counter",
    f"{DATASET}.load": "load",
    "tensorflow.data.TFRecordDataset": "TFRecordDataset",
    "tensorflow.data.TextLineDataset": "TextLineDataset",
    "tensorflow.data.FixedLengthRecordDataset": "FixedLengthRecordDataset",
    "keras.utils.image_dataset_from_directory": "image_dataset_from_directory",
    "keras.utils.text_dataset_from_directory": "text_dataset_from_directory",
    "keras.utils.audio_dataset_from_directory": "audio_dataset_from_directory",
    "keras.utils.timeseries_dataset_from_array": "timeseries_dataset_from_array",
    "tensorflow_datasets.load": "tfds.load",
    "tensorflow.data.experimental.make_csv_dataset": "make_csv_dataset",
    "tensorflow.data.experimental.make_batched_features_dataset": "make_batched_features_dataset",
}

POSITIONAL: dict[str, tuple[str, ...]] = {
    "map": ("map_func", "num_parallel_calls", "deterministic"),
    "interleave": ("map_func", "cycle_length", "block_length", "num_parallel_calls"),
    "flat_map": ("map_func",),
    "filter": ("predicate",),
    "batch": ("batch_size", "drop_remainder", "num_parallel_calls", "deterministic"),
    "padded_batch": ("batch_size", "padded_shapes", "padding_values", "drop_remainder"),
    "ragged_batch": ("batch_size", "drop_remainder"),
    "shuffle": ("buffer_size", "seed", "reshuffle_each_iteration"),
    "cache": ("filename",),
    "prefetch": ("buffer_size",),
    "shard": ("num_shards", "index"),
    "repeat": ("count",),
    "take": ("count",),
    "skip": ("count",),
    "with_options": ("options",),
    "apply": ("transformation_func",),
    "TFRecordDataset": ("filenames", "compression_type", "buffer_size", "num_parallel_reads"),
    "TextLineDataset": ("filenames", "compression_type", "buffer_size", "num_parallel_reads"),
    "FixedLengthRecordDataset": (
        "filenames",
        "record_bytes",
        "header_bytes",
        "footer_bytes",
        "buffer_size",
        "compression_type",
        "num_parallel_reads",
    ),
    "list_files": ("file_pattern", "shuffle", "seed"),
    "from_generator": ("generator", "output_types", "output_shapes", "args", "output_signature"),
    "image_dataset_from_directory": ("directory",),
    "text_dataset_from_directory": ("directory",),
    "tfds.load": ("name",),
    "make_csv_dataset": ("file_pattern", "batch_size", "column_names", "column_defaults"),
    "make_batched_features_dataset": (
        "file_pattern",
        "batch_size",
        "features",
        "reader",
        "label_key",
        "reader_args",
        "num_epochs",
        "shuffle",
        "shuffle_buffer_size",
        "shuffle_seed",
        "prefetch_buffer_size",
        "reader_num_threads",
    ),
    "parallel_interleave": ("map_func", "cycle_length", "block_length", "sloppy"),
    "map_and_batch": ("map_func", "batch_size", "num_parallel_batches", "drop_remainder"),
}

TRANSFORMATIONS = frozenset(
    {
        "map",
        "flat_map",
        "interleave",
        "filter",
        "batch",
        "padded_batch",
        "ragged_batch",
        "sparse_batch",
        "unbatch",
        "rebatch",
        "shuffle",
        "cache",
        "prefetch",
        "repeat",
        "take",
        "skip",
        "shard",
        "with_options",
        "concatenate",
        "zip",
        "enumerate",
        "window",
        "scan",
        "group_by_window",
        "bucket_by_sequence_length",
        "snapshot",
        "take_while",
        "unique",
        "ignore_errors",
        "assert_cardinality",
        "rejection_resample",
        "apply",
        "map_with_legacy_function",
        "filter_with_legacy_function",
        "prefetch_to_device",
        "shuffle_and_repeat",
    }
)
"""``Dataset`` methods that return a new dataset (so the receiver is extended, not used)."""

TRAINING_SINKS = frozenset(
    {"fit", "evaluate", "predict", "fit_generator", "experimental_distribute_dataset"}
)
RECORD_READER_NAMES = frozenset({"TFRecordDataset", "TextLineDataset", "FixedLengthRecordDataset"})

MULTI_REPLICA_STRATEGIES = frozenset(
    {
        "MirroredStrategy",
        "MultiWorkerMirroredStrategy",
        "TPUStrategy",
        "CentralStorageStrategy",
        "ParameterServerStrategy",
    }
)
STRATEGIES = MULTI_REPLICA_STRATEGIES | {"OneDeviceStrategy"}
STRATEGY_SUBCLASSES = {
    "sonnet.distribute.Replicator": "MirroredStrategy",
    "sonnet.distribute.TpuReplicator": "TPUStrategy",
}
"""Libraries' own subclasses of a ``tf.distribute`` strategy under other names, by the class
they extend. A class of a ``tf.distribute`` name in a library's ``distribute`` module (BytePS's
``byteps.tensorflow.distribute.MirroredStrategy``) extends that class too."""


def strategy_class(name: str) -> str | None:
    """The ``tf.distribute`` strategy class a call of ``name`` makes, if it makes one."""
    short = name.rsplit(".", 1)[-1]
    if name.startswith("tensorflow.distribute.") or ".distribute." in name:
        if short in STRATEGIES:
            return short
    return STRATEGY_SUBCLASSES.get(name)


KERAS_DISTRIBUTIONS = frozenset({"DataParallel", "ModelParallel"})
"""``keras.distribution`` classes a script sets with ``set_distribution``."""

PYTHON_CALLS = frozenset(
    {"tensorflow.py_function", "tensorflow.numpy_function", "tensorflow.py_func"}
)

_ELEMENTWISE_MATH = frozenset(
    [
        "abs",
        "add",
        "subtract",
        "multiply",
        "divide",
        "truediv",
        "floordiv",
        "mod",
        "pow",
        "sqrt",
        "rsqrt",
        "square",
        "exp",
        "log",
        "log1p",
        "maximum",
        "minimum",
        "negative",
        "sign",
        "sigmoid",
        "tanh",
        "round",
        "floor",
        "ceil",
        "reciprocal",
        "divide_no_nan",
        "multiply_no_nan",
        "scalar_mul",
        "clip_by_value",
        "cast",
    ]
)


def is_elementwise(name: str) -> bool:
    """``tf.cast``, ``tf.math.sqrt``, ``tf.clip_by_value``: ops that work the same on a batch."""
    for prefix in ("tensorflow.math.", "tensorflow."):
        if name.startswith(prefix) and name[len(prefix) :] in _ELEMENTWISE_MATH:
            return True
    return name == "tensorflow.image.convert_image_dtype"


_CHEAP = frozenset(
    [
        "expand_dims",
        "squeeze",
        "reshape",
        "transpose",
        "identity",
        "one_hot",
        "stack",
        "concat",
        "zeros_like",
        "ones_like",
        "ensure_shape",
        "shape",
        "gather",
        "where",
        "equal",
        "not_equal",
        "logical_and",
        "logical_or",
        "logical_not",
        "greater",
        "less",
        "argmax",
        "reduce_max",
        "reduce_min",
        "reduce_mean",
        "reduce_sum",
        "to_number",
        "newaxis",
        "constant",
        "range",
        "size",
        "tile",
        "normal",
        "uniform",
        "random_normal",
        "random_uniform",
        "truncated_normal",
        "pad",
        "slice",
        "strided_slice",
        "split",
        "unstack",
        "boolean_mask",
        "broadcast_to",
        "fill",
        "gather_nd",
        "squeeze",
        "set_shape",
        "cumsum",
        "to_dense",
        "reverse",
        "clip_by_norm",
        "l2_normalize",
        "to_hash_bucket",
        "to_hash_bucket_fast",
        "to_hash_bucket_strong",
        "length",
        "zeros",
        "ones",
        "name_scope",
        "FixedLenFeature",
        "VarLenFeature",
        "FixedLenSequenceFeature",
        "SparseFeature",
        "RaggedFeature",
        "shape_n",
        "rank",
        "py_function_spec",
    ]
)
TF1_WORK = {
    "decode_csv": "parses",
    "decode_raw": "decodes",
    "decode_base64": "decodes",
    "decode_json_example": "parses",
    "parse_single_example": "parses",
    "parse_example": "parses",
    "parse_single_sequence_example": "parses",
    "parse_sequence_example": "parses",
    "read_file": "reads files",
    "string_split": "runs string ops",
    "substr": "runs string ops",
    "regex_replace": "runs string ops",
}
"""TensorFlow 1's top-level names of work that TensorFlow 2 keeps under ``tf.io`` and
``tf.strings`` (``tf.decode_csv``, ``tf.parse_single_example``)."""
TABLE_OPS = frozenset({"lookup", "insert", "remove", "export"})
"""Methods of a ``tf.lookup`` table, whose ops are stateful."""
TABLE_LAYERS = frozenset({"StringLookup", "IntegerLookup", "TextVectorization"})
"""Keras layers that look values up in a hash table: stateful ops in a mapped function."""
CHEAP_LAYERS = frozenset({"Rescaling", "Normalization"})
"""Keras preprocessing layers that only scale or shift their input."""
CHEAP_BUILTINS = frozenset(
    {"int", "float", "bool", "str", "dict", "tuple", "list", "len", "zip", "range", "print"}
)


def is_cheap(name: str) -> bool:
    """Ops that pick, reshape, cast or do arithmetic: a ``map`` of only these is cheap."""
    if work_of(name) is not None:
        return False  # ``tf.strings.split`` is string work, whatever ``tf.split`` is
    short = name.rsplit(".", 1)[-1]
    if name.startswith("keras.ops."):  # Keras 3's backend-neutral ops, as ``tf.*``'s
        return short in _CHEAP or short in _ELEMENTWISE_MATH
    return is_elementwise(name) or name.startswith("tensorflow.") and short in _CHEAP


_STRING_STRUCTURE = frozenset(
    {"to_hash_bucket", "to_hash_bucket_fast", "to_hash_bucket_strong", "length", "to_number"}
)
"""``tf.strings`` ops that do one small thing to one string: hashing a key is no real work."""
_CHEAP_IMAGE = frozenset(
    {
        "convert_image_dtype",
        "per_image_standardization",
        "rgb_to_grayscale",
        "grayscale_to_rgb",
        "flip_left_right",
        "flip_up_down",
        "random_flip_left_right",
        "random_flip_up_down",
        "stateless_random_flip_left_right",
        "stateless_random_flip_up_down",
        "rot90",
        "transpose",
        "adjust_brightness",
        "adjust_contrast",
        "adjust_saturation",
        "adjust_hue",
        "adjust_gamma",
        "random_brightness",
        "random_contrast",
        "random_saturation",
        "random_hue",
        "stateless_random_brightness",
        "stateless_random_contrast",
        "stateless_random_saturation",
        "stateless_random_hue",
    }
)
"""``tf.image`` ops that are arithmetic on the pixels or a reordering of them (flips,
brightness, contrast): element-wise, as cheap as any cast. Resizing, cropping with
resampling and decoding are work."""
CHEAP_RANDOM_LAYERS = frozenset(
    {"RandomFlip", "RandomBrightness", "RandomContrast", "RandomGrayscale", "RandomHue"}
    | {"RandomSaturation"}
)
"""Keras augmentation layers that are element-wise on the pixels (their resampling kin,
``RandomRotation``, ``RandomZoom``, ``RandomTranslation``, are work)."""
WORK_LAYERS = {
    "TextVectorization": "tokenises text",
    "StringLookup": "looks strings up in a vocabulary",
    "IntegerLookup": "looks integers up in a vocabulary",
    "Hashing": "hashes strings",
    "Resizing": "resizes images",
    "CenterCrop": "crops images",
    "Discretization": "buckets values",
}
"""Keras preprocessing layers that do real work per element (the random image layers are
image work too: see ``random_layer``)."""


def work_of(name: str) -> str | None:
    """What real work per element a TensorFlow or Keras call does, in a few words; None for a
    call that is cheap (``is_cheap``) or that this cost model does not know.

    Decoding, parsing, file reads, image and signal ops, string ops, Python, tokenisers and
    lookups are work; picking, reshaping, casting and arithmetic are not."""
    short = name.rsplit(".", 1)[-1]
    if is_decode(name):
        return "decodes" if "decode" in short else ("resizes" if "resize" in short else "parses")
    if name in PYTHON_CALLS:
        return "runs Python"
    if name in ("tensorflow.io.read_file", "tensorflow.io.gfile.GFile") or short == "read_file":
        return "reads files"
    if name.startswith("tensorflow.io.") and short.startswith(("parse_", "decode_")):
        return "parses"
    if name.startswith("tensorflow.image."):
        return None if short in _CHEAP_IMAGE else "runs image ops"
    if name.startswith(("tensorflow.signal.", "tensorflow.audio.")):
        return "runs signal ops"
    if name.startswith("tensorflow.strings."):
        return None if short in _STRING_STRUCTURE else "runs string ops"
    if name.startswith(("tensorflow_text.", "tensorflow.text.")):
        return "tokenises text"
    if name.startswith("tensorflow.lookup."):
        return "looks values up"
    if name.startswith("tensorflow.sparse.") and short not in ("to_dense", "reshape"):
        return "runs sparse ops"
    if name == f"tensorflow.{short}" and short in TF1_WORK:
        return TF1_WORK[short]
    return None


def is_decode(name: str) -> bool:
    """Decode, parse or resize: the deterministic expensive work that caching saves."""
    short = name.rsplit(".", 1)[-1]
    if name.startswith(("tensorflow.io.", "tensorflow.image.", "tensorflow.audio.")):
        if short.startswith("decode_") or short.startswith("resize"):
            return True
    if name.startswith("tensorflow.io.parse_") and ("example" in short or short == "parse_tensor"):
        return True
    return name in {"tensorflow.io.decode_raw", "tensorflow.strings.unicode_decode"}


def is_random(name: str) -> bool:
    """Random ops, stateful or seeded per call (stateless ones are judged by their seed)."""
    short = name.rsplit(".", 1)[-1]
    return (
        name.startswith("tensorflow.random.")
        or name.startswith("tensorflow.image.random_")
        or (
            name.startswith("tensorflow.")
            and short in {"random_uniform", "random_normal", "random_crop", "random_shuffle"}
        )
    )


def is_stateless_random(name: str) -> bool:
    return name.startswith(("tensorflow.image.stateless_random_", "tensorflow.random.stateless_"))


def is_image_augmentation(name: str) -> bool:
    return name.startswith(("tensorflow.image.random_", "tensorflow.image.stateless_random_"))


_RANDOM_IMAGE_LAYERS = frozenset(
    [
        "RandomFlip",
        "RandomRotation",
        "RandomZoom",
        "RandomCrop",
        "RandomTranslation",
        "RandomContrast",
        "RandomBrightness",
        "RandomHeight",
        "RandomWidth",
        "RandomGrayscale",
        "RandomHue",
        "RandomSaturation",
        "RandomColorJitter",
        "RandomShear",
        "RandomPerspective",
        "RandomErasing",
        "RandomGaussianBlur",
        "RandomSharpness",
        "RandomInvert",
        "RandomPosterization",
        "RandomColorDegeneration",
        "RandAugment",
        "AugMix",
        "CutMix",
        "MixUp",
        "RandomElasticTransform",
    ]
)


def random_layer(name: str) -> tuple[bool, bool]:
    """(is a Keras random layer, is an image augmentation layer) for a layer class name."""
    if not name.startswith("keras.layers."):
        return False, False
    short = name.rsplit(".", 1)[-1]
    if short in _RANDOM_IMAGE_LAYERS:
        return True, True
    return False, False


KERAS_MODELS = frozenset(
    {"keras.Sequential", "keras.Model", "keras.models.Sequential", "keras.models.Model"}
)
BATCHNORM = frozenset({"keras.layers.BatchNormalization", "keras.layers.SyncBatchNormalization"})
LOADED_MODELS = frozenset({"keras.models.load_model", "keras.saving.load_model"})
