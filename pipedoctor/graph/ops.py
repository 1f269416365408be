"""TensorFlow dataset op types and the pipeline model's names for them, without importing
TensorFlow: the graph front end reads them from a GraphDef, the profile reader from the
dataset names that tf.data iterator events carry (``MapDataset:1``)."""

from __future__ import annotations

OPS: dict[str, str] = {
    "TensorSliceDataset": "from_tensor_slices",
    "TensorDataset": "from_tensors",
    "RangeDataset": "range",
    "MapDataset": "map",
    "ParallelMapDatasetV2": "map",
    "ParallelMapDataset": "map",
    "FilterDataset": "filter",
    "FlatMapDataset": "flat_map",
    "InterleaveDataset": "interleave",
    "ParallelInterleaveDatasetV4": "interleave",
    "LegacyParallelInterleaveDatasetV2": "interleave",
    "BatchDatasetV2": "batch",
    "ParallelBatchDataset": "batch",
    "PaddedBatchDatasetV2": "padded_batch",
    "MapAndBatchDataset": "map_and_batch",
    "ShuffleDatasetV3": "shuffle",
    "ShuffleDatasetV2": "shuffle",
    "ShuffleAndRepeatDatasetV2": "shuffle",
    "CacheDatasetV2": "cache",
    "CacheDataset": "cache",
    "PrefetchDataset": "prefetch",
    "ShardDataset": "shard",
    "RepeatDataset": "repeat",
    "TakeDataset": "take",
    "SkipDataset": "skip",
    "OptionsDataset": "with_options",
    "ZipDataset": "zip",
    "ConcatenateDataset": "concatenate",
    "UnbatchDataset": "unbatch",
    "DirectedInterleaveDataset": "sample_from_datasets",
    "TFRecordDataset": "TFRecordDataset",
    "TFRecordDatasetV2": "TFRecordDataset",
    "TextLineDataset": "TextLineDataset",
    "FixedLengthRecordDataset": "FixedLengthRecordDataset",
    "FixedLengthRecordDatasetV2": "FixedLengthRecordDataset",
}
