"""Statewright client: generated ``statewright.v1`` stubs plus ergonomic helpers."""
