"""PostgreSQL and SQLite give the same answers, to the letter, for one script of calls.

The contract tests check each backend on its own; this one runs a script on both and
compares every answer: the records read back (whatever each driver hands over for JSON and
times) and every error's type, message, reason and metadata, which reach clients as is.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path

import pytest

from statewrightd.errors import Conflict, StatewrightError, StoreError
from statewrightd.store import Repository, open_repository
from statewrightd.store.postgres import PostgresRepository
from statewrightd.store.records import Create, DefinitionRecord, InstanceRecord, Operation
from tests.integration.store.test_repository_contract import (
    T0,
    create_op,
    history_of,
    instance,
    save_op,
)


def _answer(call: Callable[[], object]) -> object:
    """What a call returned, or the parts of its error a client sees."""
    try:
        return call()
    except StatewrightError as exc:
        return _error(exc)


def _error(exc: StatewrightError) -> tuple[object, ...]:
    actual = exc.actual_revision if isinstance(exc, Conflict) else None
    return (type(exc).__name__, exc.message, exc.reason, exc.metadata, actual)


def _each(results: list[InstanceRecord | StoreError]) -> list[object]:
    return [_error(r) if isinstance(r, StoreError) else r for r in results]


def _batch(repo: Repository, ops: list[Operation]) -> list[object]:
    return _each(repo.apply_batch(ops))


def _definition(version: int, digest: str, source_name: str) -> DefinitionRecord:
    return DefinitionRecord("mail", version, "name: mail\n", digest, source_name, T0)


def _script(repo: Repository) -> list[object]:
    out: list[object] = []
    a = repo.create(create_op("a", request_id="r-a"))
    b = repo.create(create_op("b"))
    rec = dataclasses.replace(instance("e"), error={"code": 3, "message": "é"})
    out.append(repo.create(Create(rec, history_of(rec))))
    out.append(_answer(lambda: repo.save(save_op(b, request_id="r-b"))))
    out.append(_answer(lambda: repo.save(save_op(b))))  # conflict: b is at 2
    out.append(_answer(lambda: repo.save(save_op(instance("ghost")))))
    out.append(_answer(lambda: repo.create(create_op("a"))))
    out.append(_answer(lambda: repo.save(save_op(a, request_id="r-a"))))
    out.append(_answer(lambda: repo.load("ghost")))
    b2 = repo.load("b")
    # One id per row and no request ids (PostgreSQL's set-based statements) ...
    out.append(_batch(repo, [save_op(a), save_op(b2), save_op(instance("ghost")), create_op("c")]))
    # ... and the per-row path: two steps of one instance (and request ids).
    c = repo.load("c")
    c2 = save_op(c, request_id="r-c")
    out.append(_batch(repo, [c2, save_op(c2.new), save_op(c, state="late"), create_op("e")]))
    for wid in ("a", "b", "c", "e"):
        out.append(repo.load(wid))
        out.append(repo.history_after(wid, 0, 10))
    out.append(_answer(lambda: repo.history_after("a", 0, 0)))
    out.append(
        [
            repo.lookup_request(wid, rid)
            for wid, rid in (("a", "r-a"), ("b", "r-b"), ("c", "r-c"), ("a", "none"), ("b", "r-a"))
        ]
    )
    out.append(repo.purge_requests(T0 + timedelta(days=1)))
    out.append(repo.put_definition(_definition(1, "d1", "mail.yaml")))
    out.append(repo.put_definition(_definition(1, "d1", "again.yaml")))
    out.append(_answer(lambda: repo.put_definition(_definition(1, "d2", "changed.yaml"))))
    out.append(repo.put_definition(_definition(2, "d2", "mail.yaml")))
    out.append(repo.get_definition("mail"))
    out.append(repo.get_definition("mail", 1))
    out.append(_answer(lambda: repo.get_definition("mail", 9)))
    out.append(_answer(lambda: repo.get_definition("nope")))
    out.append(repo.list_definitions())
    out.append(
        _each(repo.resolve_outcome([save_op(b2), save_op(instance("ghost")), create_op("fresh")]))
    )
    pages = []
    token = ""
    for _ in range(10):
        page = repo.list(page_size=2, page_token=token)
        pages.append(page.items)
        token = page.next_page_token
        if not token:
            break
    out.append(pages)
    out.append(repo.list(status="RUNNING", definition="mail-approval").items)
    out.append(_answer(lambda: repo.list(status="NOPE")))
    return out


@pytest.fixture
def both(postgres_url: str, tmp_path: Path) -> Iterator[tuple[Repository, Repository]]:
    # Set-based from two steps, so that the script's batches take those statements.
    pg = PostgresRepository(postgres_url, pool_size=2, set_based_from=2)
    lite = open_repository(f"sqlite:///{tmp_path / 'agree.db'}")
    yield pg, lite
    pg.close()
    lite.close()


def test_both_backends_answer_a_script_alike(both: tuple[Repository, Repository]) -> None:
    pg, lite = both
    on_pg, on_lite = _script(pg), _script(lite)
    assert len(on_pg) == len(on_lite)
    for i, (x, y) in enumerate(zip(on_pg, on_lite, strict=True)):
        assert x == y, f"answer {i} differs:\n  postgres: {x!r}\n  sqlite:   {y!r}"
    # The script met every refusal it is meant to compare, not only successes.
    errors = {e[2] for e in _flatten(on_pg) if isinstance(e, tuple)}
    assert {
        "REVISION_CONFLICT",
        "NOT_FOUND",
        "ALREADY_EXISTS",
        "REQUEST_EXISTS",
        "DEFINITION_NOT_FOUND",
        "DEFINITION_VERSION_EXISTS",
        "INVALID_LIMIT",
        "INVALID_FILTER",
    } <= errors, errors


def _flatten(answers: list[object]) -> Iterator[object]:
    for a in answers:
        if isinstance(a, list):
            yield from _flatten(a)
        else:
            yield a
