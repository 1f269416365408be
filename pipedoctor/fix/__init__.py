"""Fixes as data: the edit a finding's rule makes to the user's source, and one place that
applies edits, keeping the file's formatting and comments.

A finding points at a span of the source (``line:column`` to ``end_line:end_column``). For the
rules whose fix is mechanical, :func:`plan` turns that span into an :class:`Edit`: the exact
text to put there, in the names the file already uses (its alias for TensorFlow, an
``AUTOTUNE`` constant it defines), with the rule's fix safety. :func:`apply` writes edits
through a temporary file and a rename, so a failure leaves the original intact. The source is
read with libcst, a concrete syntax tree, so nothing but the edited span changes.
"""

from __future__ import annotations

from pipedoctor.fix.edits import Edit, FixError, apply, apply_text, plan

__all__ = ["Edit", "FixError", "apply", "apply_text", "plan"]
