"""Shared pytest configuration."""

from __future__ import annotations

import os

# Tests read fresh corpora and compare reads with each other: the facts cache stays off unless a
# test turns it on with an explicit directory (tests/test_cache.py).
os.environ["SUBAGENT_CATALOG_CACHE"] = "off"

from hypothesis import HealthCheck, settings

settings.register_profile(
    "default", deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)
settings.register_profile(
    "long",
    deadline=None,
    max_examples=2000,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))
