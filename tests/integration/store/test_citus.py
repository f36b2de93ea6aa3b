"""What only Citus has: the distribution, its refusals, routing by node, and faults.

The contract every backend keeps runs on Citus in the other modules (the ``citus``
parameter); here is what Citus adds to it: the schema distributed by workflow id, the
refusal of clusters the store cannot use, the writer's node grouping (which must agree
with Citus's own hash, and survive a shard map that is out of date), a node call whose
connection is lost, and a worker that restarts under the store.
"""

from __future__ import annotations

import os
import random
import string
import subprocess
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import psycopg
import pytest

from statewrightd.domain import Status
from statewrightd.errors import Conflict, OutcomeUnknown, StorageUnavailable, StoreError
from statewrightd.store import Repository, migrate, open_repository
from statewrightd.store.citus import CitusRepository, plan_calls
from statewrightd.store.citus_routing import Shard, ShardMap, hash_text
from statewrightd.store.codec import encode_op
from statewrightd.store.commands import migrate_command
from statewrightd.store.records import Create, InstanceRecord
from tests.support import citus
from tests.support.pgproxy import PgProxy
from tests.support.store_records import created, history, step

pytestmark = pytest.mark.citus

T0 = datetime(2026, 7, 1, tzinfo=UTC)


def _created(repo: Repository, wid: str) -> InstanceRecord:
    return created(repo, wid, T0)


@pytest.fixture
def repo(citus_url: str) -> Iterator[CitusRepository]:
    repository = open_repository(citus_url, migrate=False, pool_size=4)
    assert isinstance(repository, CitusRepository)
    yield repository
    repository.close()


def _groups_of(url: str, ids: list[str]) -> dict[str, int]:
    with psycopg.connect(url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT w.id, p.groupid FROM unnest(%s::text[]) AS w(id) JOIN pg_dist_placement p"
            " ON p.shardid = get_shard_id_for_distribution_column('workflow_instances', w.id)",
            (ids,),
        ).fetchall()
    return dict(rows)


# -- distribution and refusals -----------------------------------------------------------


def test_migrate_distributes_every_table_by_workflow_id(citus_url: str) -> None:
    with psycopg.connect(citus_url, autocommit=True) as conn:
        tables = conn.execute(
            "SELECT logicalrelid::regclass::text, partmethod, colocationid,"
            " column_to_column_name(logicalrelid, partkey)"
            " FROM pg_dist_partition ORDER BY 1"
        ).fetchall()
        functions = conn.execute(
            "SELECT p.proname FROM pg_dist_object o JOIN pg_proc p ON p.oid = o.objid"
            " WHERE o.classid = 'pg_proc'::regclass AND p.proname LIKE 'statewright_%'"
        ).fetchall()
    hashed = [t for t in tables if t[1] == "h" and t[0] != "batch_items"]
    assert {t[0] for t in hashed} == {
        "workflow_instances",
        "workflow_history",
        "workflow_timers",
        "workflow_tasks",
        "workflow_requests",
        "workflow_tombstones",
        "workflow_search",
        "workflow_children",  # by the child's id
    }
    assert {t[3] for t in hashed} == {"workflow_id"}
    # A batch's items by its id, on one shard, in the same colocation group.
    items = [t for t in tables if t[0] == "batch_items"]
    assert [(t[1], t[3]) for t in items] == [("h", "batch_id")]
    assert len({t[2] for t in hashed + items}) == 1  # one colocation group
    # Reference tables: read whole on every node (schedules and batches are not per
    # instance).
    assert [t[0] for t in tables if t[1] == "n"] == [
        "batch_operations",
        "schedules",
        "workflow_definitions",
    ]
    assert {f[0] for f in functions} >= {"statewright_shard_rows", "statewright_shard_scan"}


def test_a_second_migrate_changes_nothing(
    citus_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert migrate_command(citus_url) == 0
    out = capsys.readouterr().out
    assert "already at version" in out and "already distributed" in out


def test_a_database_without_the_extension_is_refused(citus_server_url: str) -> None:
    name = "sw_citus_noext_" + "".join(random.choices(string.ascii_lowercase, k=8))
    with psycopg.connect(citus_server_url, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}".encode())
    url = citus.with_database(citus_server_url, name)
    try:
        with pytest.raises(StoreError) as refused:
            migrate(url)
        assert refused.value.reason == "CITUS_EXTENSION_MISSING"
        assert "CREATE EXTENSION citus" in refused.value.message
        with psycopg.connect(url, autocommit=True) as conn:
            assert conn.execute("SELECT to_regclass('workflow_instances')").fetchone() == (None,)
    finally:
        with psycopg.connect(citus_server_url, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE {name} WITH (FORCE)".encode())


def test_a_coordinator_without_workers_is_refused(citus_server_url: str) -> None:
    name = "sw_citus_alone_" + "".join(random.choices(string.ascii_lowercase, k=8))
    with psycopg.connect(citus_server_url, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}".encode())
    url = citus.with_database(citus_server_url, name)
    try:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION citus")
        with pytest.raises(StoreError) as refused:
            migrate(url)
        assert refused.value.reason == "CITUS_NO_WORKERS"
        assert "citus_add_node" in refused.value.message
    finally:
        with psycopg.connect(citus_server_url, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE {name} WITH (FORCE)".encode())


def test_a_worker_node_is_refused(citus_url: str, citus_server_url: str) -> None:
    worker = citus.nodes(citus_server_url)[1]
    name = citus_url.rsplit("/", 1)[1]
    with pytest.raises(StoreError) as refused:
        migrate(citus.with_database(worker, name))
    assert refused.value.reason == "CITUS_NOT_COORDINATOR"


# -- routing ---------------------------------------------------------------------------


def test_the_hash_is_citus_s(citus_url: str) -> None:
    words = ["", "a", "w-1", "x" * 11, "y" * 12, "z" * 13, "é✓日本", "order-12345678"]
    words += [
        "".join(random.choices(string.printable, k=random.randint(0, 80))) for _ in range(300)
    ]
    words = [w.replace("\x00", "") for w in words]
    with psycopg.connect(citus_url, autocommit=True) as conn:
        theirs = [
            r[0] for r in conn.execute("SELECT hashtext(w) FROM unnest(%s::text[]) w", (words,))
        ]
    assert [hash_text(w) for w in words] == theirs


def test_a_batch_is_one_call_per_node(repo: CitusRepository, citus_url: str) -> None:
    ids = [f"route-{i}" for i in range(40)]
    repo.apply_batch([Create(r, history(r)) for r in (_rec(w) for w in ids)])
    groups = _groups_of(citus_url, ids)
    ops = [step(repo.load(w)) for w in ids] + [step(step(repo.load(ids[0])).new)]
    encoded = [encode_op(op) for op in ops]
    calls = plan_calls(encoded, range(len(encoded)), repo._shards())
    assert len(calls) == len(set(groups.values())) == 2
    for call in calls:
        assert {groups[ids[i % len(ids)]] for i in call.positions} == {call.group}
    # The instance stepped twice has a second wave in its node's call.
    first = next(c for c in calls if 0 in c.positions)
    assert len(first.statements) == 4  # lock and save, twice
    results = repo.apply_batch(ops)
    assert [r.revision for r in results if isinstance(r, InstanceRecord)] == [2] * 40 + [3]


def _rec(wid: str) -> InstanceRecord:
    return InstanceRecord(wid, "def", 1, "start", Status.RUNNING, {"k": 0}, 1, None, T0, T0)


def test_a_stale_shard_map_costs_a_retry_not_a_wrong_write(
    repo: CitusRepository, citus_url: str
) -> None:
    ids = [f"stale-{i}" for i in range(20)]
    real = repo._shards()
    # Every shard "on" one node: the batch goes as one call, to the node that holds its
    # first row, and the rows of the other node come back misrouted.
    swapped = ShardMap(Shard(s.low, s.high, real.groups[0]) for s in real._shards)
    repo._map = swapped
    results = repo.apply_batch([Create(r, history(r)) for r in (_rec(w) for w in ids)])
    assert all(isinstance(r, InstanceRecord) for r in results), results
    assert repo._map is not swapped  # read anew
    assert [repo.load(w).revision for w in ids] == [1] * 20
    with psycopg.connect(citus_url, autocommit=True) as conn:
        assert conn.execute("SELECT count(*) FROM workflow_history").fetchone() == (20,)


def test_claims_visit_every_shard_group(repo: CitusRepository) -> None:
    """A due timer is claimed whatever shard holds it: claims take every shard's oldest."""
    from tests.integration.store.test_timers_contract import armed_create

    ids = [f"spread-{i}" for i in range(24)]
    for n, wid in enumerate(ids):
        armed_create(repo, wid, T0 + timedelta(seconds=n))
    now = T0 + timedelta(minutes=1)
    claimed: list[str] = []
    for _ in range(10):
        claimed += [t.workflow_id for t in repo.claim_timers(now, now + timedelta(seconds=5), 5)]
    assert sorted(claimed) == sorted(ids)
    # In due order across shards, five at a time.
    assert claimed[:5] == ids[:5]


# -- faults ---------------------------------------------------------------------------


@pytest.fixture
def proxy(citus_url: str) -> Iterator[PgProxy]:
    with PgProxy.for_url(citus_url) as p:
        yield p


@pytest.fixture
def proxied(proxy: PgProxy, citus_url: str) -> Iterator[Repository]:
    repo = open_repository(proxy.url_for(citus_url), migrate=False, pool_size=2)
    yield repo
    repo.close()


def test_a_call_cut_after_it_ran_is_reconciled_as_success(
    proxy: PgProxy, proxied: Repository, repo: CitusRepository
) -> None:
    rec = _created(proxied, "w")
    proxy.arm_cut(forward_commit=True)
    op = step(rec)
    assert proxied.save(op) == 2
    assert proxy.cuts == 1, "the fault was not injected"
    assert repo.load("w") == op.new
    assert proxied.save(step(op.new)) == 3


def test_a_call_cut_before_it_ran_is_a_known_failure(
    proxy: PgProxy, proxied: Repository, repo: CitusRepository
) -> None:
    rec = _created(proxied, "w")
    proxy.arm_cut(forward_commit=False)
    with pytest.raises(StorageUnavailable) as failure:
        proxied.save(step(rec))
    assert not isinstance(failure.value, OutcomeUnknown)
    assert proxy.cuts == 1
    assert repo.load("w") == rec
    assert proxied.save(step(rec)) == 2


def test_an_unreadable_outcome_is_unknown_until_resolved(
    proxy: PgProxy, proxied: Repository, repo: CitusRepository
) -> None:
    rec = _created(proxied, "w")
    proxy.arm_cut(forward_commit=True, refuse=True)
    op = step(rec)
    with pytest.raises(OutcomeUnknown) as caught:
        proxied.save(op)
    # The global pid names the call's processes on the coordinator and on the worker.
    pids = [int(caught.value.metadata["backend_pid"])]
    assert repo.resolve_outcome([op], backend_pids=pids) == [op.new]


def test_a_batch_cut_on_its_first_node_fails_only_what_is_unknown(
    proxy: PgProxy, proxied: Repository, repo: CitusRepository, citus_url: str
) -> None:
    ids = [f"cut-{i}" for i in range(10)]
    for wid in ids:
        _created(proxied, wid)
    # The node calls go in node-group order, and shards may have moved in earlier tests:
    # the conflicting instance is one of the first node's, wherever that is now.
    groups = _groups_of(citus_url, ids)
    assert len(set(groups.values())) > 1, groups
    first = next(w for w in ids if groups[w] == min(groups.values()))
    proxied.save(step(repo.load(first)))  # now at 2: the batch's save of it conflicts
    proxy.arm_cut(forward_commit=False)
    ops = [step(repo.load(w)) if w != first else step(_rec(w), "other") for w in ids]
    results = proxied.apply_batch(ops)
    assert proxy.cuts == 1
    # Nothing reached the database: every row is a known failure, none unknown.
    for op, result in zip(ops, results, strict=True):
        assert isinstance(result, StorageUnavailable | Conflict), result
        assert not isinstance(result, OutcomeUnknown)
        if isinstance(result, StorageUnavailable):
            assert repo.load(op.new.workflow_id).revision == op.expected_revision
    assert isinstance(results[ids.index(first)], Conflict)


def _pg_ctl(data: str, *args: str) -> None:
    """pg_ctl on a node of scripts/with-citus (its port and socket directory kept: a
    plain ``start`` would not reuse them)."""
    as_postgres = ["runuser", "-u", "postgres", "--"] if os.getuid() == 0 else []
    pg_ctl = "/usr/lib/postgresql/15/bin/pg_ctl"
    nodes = os.environ["STATEWRIGHT_TEST_CITUS_DATA"].split()
    port = os.environ["STATEWRIGHT_TEST_CITUS_PORTS"].split()[nodes.index(data)]
    options = f"-p {port} -k {os.path.dirname(data)}"
    subprocess.run(
        [*as_postgres, pg_ctl, "-D", data, "-l", f"{data}.log", "-w", "-o", options, *args],
        check=True,
        capture_output=True,
        timeout=120,
    )


def test_a_stopped_worker_fails_only_its_own_instances_steps(
    repo: CitusRepository, citus_url: str
) -> None:
    """While a worker is down, steps of the instances it holds fail as known failures
    (nothing written, retry later), never as unknown outcomes or wrong answers, and the
    other worker's instances step on; once it is back, everything works again."""
    data = os.environ.get("STATEWRIGHT_TEST_CITUS_DATA", "").split()
    if len(data) < 2:
        pytest.fail("scripts/with-citus exports STATEWRIGHT_TEST_CITUS_DATA", pytrace=False)
    ids = [f"down-{i}" for i in range(16)]
    for wid in ids:
        _created(repo, wid)
    groups = _groups_of(citus_url, ids)
    with psycopg.connect(citus_url, autocommit=True) as conn:
        row = conn.execute(
            "SELECT groupid FROM pg_dist_node WHERE groupid <> 0 ORDER BY nodeid LIMIT 1"
        ).fetchone()
    assert row is not None
    stopped_group = row[0]
    before = {w: repo.load(w) for w in ids}
    _pg_ctl(data[1], "-m", "fast", "stop")
    try:
        results = repo.apply_batch([step(before[w]) for w in ids])
    finally:
        _pg_ctl(data[1], "start")
    for wid, result in zip(ids, results, strict=True):
        if groups[wid] == stopped_group:
            assert isinstance(result, StorageUnavailable), result
            assert not isinstance(result, OutcomeUnknown), result
        else:
            assert isinstance(result, InstanceRecord), result
    after = [repo_load_retrying(repo, w) for w in ids]
    assert [a.revision for a in after] == [2 if groups[w] != stopped_group else 1 for w in ids]
    # Back up: every step goes through, the stopped worker's instances included.
    again = repo.apply_batch([step(a) for a in after])
    assert all(isinstance(r, InstanceRecord) for r in again), again


def test_the_store_rides_out_a_worker_restart(repo: CitusRepository) -> None:
    data = os.environ.get("STATEWRIGHT_TEST_CITUS_DATA", "").split()
    if len(data) < 2:
        pytest.fail("scripts/with-citus exports STATEWRIGHT_TEST_CITUS_DATA", pytrace=False)
    ids = [f"restart-{i}" for i in range(12)]
    for wid in ids:
        _created(repo, wid)
    _pg_ctl(data[1], "-m", "fast", "restart")
    results = repo.apply_batch([step(repo_load_retrying(repo, w)) for w in ids])
    for wid, result in zip(ids, results, strict=True):
        if isinstance(result, InstanceRecord):
            assert repo.load(wid).revision == 2
        else:
            assert isinstance(result, StorageUnavailable), result
            assert not isinstance(result, OutcomeUnknown), result
    again = repo.apply_batch([step(repo.load(w)) for w in ids])
    assert all(isinstance(r, InstanceRecord) for r in again), again


def repo_load_retrying(repo: Repository, wid: str) -> InstanceRecord:
    for _ in range(50):
        try:
            return repo.load(wid)
        except StorageUnavailable:
            time.sleep(0.2)
    return repo.load(wid)


def test_a_search_filter_runs_whole_on_each_shard(citus_url: str) -> None:
    """A filtered, ordered page and a count are pushed down to every shard whole (the
    search rows are colocated with their instances): no part of them is planned through
    the coordinator, and no shard reads its instances or search rows sequentially."""
    from statewrightd.store.sql_builder import POSTGRES, _list_instances
    from tests.integration.store.test_search_plans import compiled_filters, seed

    with psycopg.connect(citus_url, autocommit=True) as conn:
        seed(conn)
        conn.execute("SET citus.explain_all_tasks = on")
        for text, compiled, condition in compiled_filters():
            count = f"SELECT status, count(*) FROM workflow_instances WHERE {condition}"
            page = _list_instances(POSTGRES, "update_time desc", frozenset(), condition)
            params = {**compiled.params, "limit": 101}
            assert conn.execute(page, params).fetchall(), text  # it matches some
            for sql in (f"{count} GROUP BY status", page):
                shown = "\n".join(r[0] for r in conn.execute(f"EXPLAIN {sql}", params))
                assert "Task Count: 4" in shown, (text, shown)
                assert "Subplan" not in shown and "intermediate" not in shown, (text, shown)
                for table in ("workflow_instances", "workflow_search"):
                    assert f"Seq Scan on {table}" not in shown, (text, shown)
