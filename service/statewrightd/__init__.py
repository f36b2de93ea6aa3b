"""Statewright: durable finite-state-machine workflows served over gRPC."""

__version__ = "0.1.0"
