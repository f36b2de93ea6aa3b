"""Which node-call errors say that nothing was written: only a node the coordinator never
reached. A node lost mid-call may have committed first (a fault run on Citus found starts
answered "nothing done" in history after a worker restarted under them). A node lost is
the database unavailable even when psycopg calls it an InternalError (a fault run found
schedule claims crashing on "failure on connection marked as essential")."""

from __future__ import annotations

import psycopg
import pytest

from statewrightd.store.citus_errors import node_lost, node_never_reached

NODE = "connection to the remote node postgres@127.0.0.1:32945 failed with the following error: "


@pytest.mark.parametrize(
    "reason",
    [
        "Connection refused",
        "FATAL:  the database system is starting up",
        "FATAL:  the database system is not yet accepting connections",
        "FATAL:  the database system is shutting down",
        "could not connect to server",
        "could not establish any connections to the node localhost:9701 after 5000 ms",
    ],
)
def test_a_node_never_reached_wrote_nothing(reason: str) -> None:
    assert node_never_reached(psycopg.OperationalError(NODE + reason))


@pytest.mark.parametrize(
    "reason",
    [
        "connection not open",
        "server closed the connection unexpectedly",
        "SSL SYSCALL error: EOF detected",
    ],
)
def test_a_node_lost_mid_call_leaves_the_outcome_unknown(reason: str) -> None:
    assert not node_never_reached(psycopg.OperationalError(NODE + reason))


def test_errors_of_the_coordinator_itself_are_not_about_a_node() -> None:
    assert not node_never_reached(psycopg.OperationalError("connection refused"))
    assert not node_never_reached(psycopg.OperationalError("canceling statement due to timeout"))


@pytest.mark.parametrize(
    "error",
    [
        psycopg.errors.InternalError_("failure on connection marked as essential: 127.0.0.1:37"),
        psycopg.errors.InternalError_("SSL SYSCALL error: EOF detected"),
        psycopg.OperationalError(NODE + "server closed the connection unexpectedly"),
        psycopg.InterfaceError("the connection is closed"),
    ],
)
def test_a_node_lost_is_the_database_unavailable_whatever_its_class(error: psycopg.Error) -> None:
    assert node_lost(error)


@pytest.mark.parametrize(
    "error",
    [
        psycopg.errors.InternalError_("cache lookup failed for relation 1234"),
        psycopg.errors.UniqueViolation("duplicate key value violates unique constraint"),
    ],
)
def test_a_refusal_is_no_node_lost(error: psycopg.Error) -> None:
    assert not node_lost(error)
