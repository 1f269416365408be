"""Profiles, the third source of measurements: write one with step markers that TensorBoard's
Profile tab can read (``capture``), and read one taken anywhere into the measurements dict the
check fills (``reader``), so the same rules and renderers judge it (``doctor``)."""

from pipedoctor.profile.xspace import ProfileError

__all__ = ["ProfileError"]
