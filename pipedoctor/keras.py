"""Keras integration: ``from pipedoctor.keras import Monitor``, then ``fit(callbacks=[Monitor()])``.

Importing this module imports Keras; the rest of pipedoctor (the static gate above all) never
does.
"""

from pipedoctor.monitor.callback import Monitor

__all__ = ["Monitor"]
