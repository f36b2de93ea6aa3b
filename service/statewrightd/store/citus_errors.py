"""What a Citus coordinator's errors say about its nodes.

The coordinator words a node it could not reach at all as "connection to the remote node
H:P failed with the following error: ..." (libpq's or the node's reason): such a call
never left the coordinator. A node lost in the middle of a statement surfaces as an
OperationalError, or, when the coordinator had marked that connection essential to the
transaction, as an InternalError ("failure on connection marked as essential", "SSL
SYSCALL error"): not a refusal of the statement, but the database being unavailable,
with the outcome of anything already committing unknown.
"""

from __future__ import annotations

import psycopg

_NEVER_REACHED = (
    "connection refused",
    "could not connect",
    "could not establish",
    "could not translate host name",
    "no route to host",
    "the database system is starting up",
    "the database system is shutting down",
    "the database system is not yet accepting connections",
    "the database system is in recovery mode",
)
_LOST = (
    "failure on connection marked as essential",
    "ssl syscall error",
    "remote node",
    "connection not open",
    "server closed the connection unexpectedly",
)


def node_never_reached(exc: psycopg.Error) -> bool:
    """Whether a node call's error says that the coordinator never reached the node."""
    text = str(exc).lower()
    return "remote node" in text and any(words in text for words in _NEVER_REACHED)


def node_lost(exc: psycopg.Error) -> bool:
    """Whether an error is the loss of a node (or of the coordinator's connection to
    it), whatever class psycopg gave it, rather than the database refusing a statement."""
    if isinstance(exc, psycopg.OperationalError | psycopg.InterfaceError):
        return True
    text = str(exc).lower()
    return isinstance(exc, psycopg.InternalError) and any(words in text for words in _LOST)
