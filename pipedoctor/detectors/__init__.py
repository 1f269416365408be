"""Every detector module; importing this package registers one detector per rule."""

from pipedoctor.detectors import (
    distribution_rules,
    keras_distribution_rules,
    monitor_rules,
    pipeline_rules,
    runtime_rules,
)

__all__ = [
    "distribution_rules",
    "keras_distribution_rules",
    "monitor_rules",
    "pipeline_rules",
    "runtime_rules",
]
