-- Statewright on Citus: the statements of a step, a batch, a claim or a purge run on the
-- node that holds the shards they touch, inside one call of a distributed function that
-- Citus delegates to that node (the call's first argument picks the node: a workflow id,
-- or a route key of a shard on it). The caller passes the statements in as templates
-- whose %1$s .. %6$s name the shards of one shard group (instances, history, timers,
-- tasks, requests, tombstones); each runs on plain shard tables, so that a call is one
-- local transaction with a one-phase commit and no distributed planning per statement.
--
-- A shard being moved or split: Citus blocks writes to it by taking its metadata lock
-- exclusively; these functions take it shared (as Citus's own writes do) before they
-- touch a shard and then check that it is still here. Rows whose shard is elsewhere are
-- answered "misrouted" and not written; the caller sends them again.

-- The shard tables of the shard group that ``shard`` (a shard of workflow_instances)
-- belongs to, in template order.
CREATE OR REPLACE FUNCTION statewright_shard_tables(shard bigint) RETURNS text[]
LANGUAGE sql STABLE AS $fn$
    SELECT array_agg(shard_name(t.rel, c.shardid) ORDER BY t.ord)
      FROM unnest(ARRAY['workflow_instances', 'workflow_history', 'workflow_timers',
                        'workflow_tasks', 'workflow_requests', 'workflow_tombstones']::regclass[])
           WITH ORDINALITY AS t(rel, ord)
      JOIN pg_dist_shard c ON c.logicalrelid = t.rel
       AND c.shardminvalue = (SELECT shardminvalue FROM pg_dist_shard WHERE shardid = shard)
$fn$;

-- Which of ``shards`` are placed on this node, once their metadata lock is held (a move
-- that finished while we waited has changed the placement, and we see that here).
CREATE OR REPLACE FUNCTION statewright_lock_local_shards(shards bigint[]) RETURNS bigint[]
LANGUAGE plpgsql AS $fn$
DECLARE
    here bigint[];
BEGIN
    IF coalesce(array_length(shards, 1), 0) = 0 THEN
        RETURN '{}';
    END IF;
    -- ShareLock (5): what Citus's own writes take; a move or split takes ExclusiveLock.
    PERFORM lock_shard_metadata(5, (SELECT array_agg(s ORDER BY s) FROM unnest(shards) s));
    SELECT coalesce(array_agg(p.shardid), '{}') INTO here
      FROM pg_dist_placement p
     WHERE p.shardid = ANY(shards)
       AND p.groupid = (SELECT groupid FROM pg_dist_local_group);
    RETURN here;
END $fn$;

-- Rows: ``statements`` (a JSON array of shard templates) and ``batches`` (a JSON array of
-- JSON arrays) come as plain text, which the coordinator forwards as it is (a json[]
-- parameter would cost it a parse and an escape of every quote). The i-th statement runs
-- on the rows of the i-th batch (objects with a workflow_id and a position n), once per
-- shard group, with the group's rows as $1 and
-- $2 = how many rows are still wanted of the call (a claim stops at ``wanted``; a row
-- with a "taken" field counts that many). A write answers one row per input row with at
-- least n and changed; a row it did not change whose request id was free (a
-- compare-and-swap or a fence that refused it) is looked up again with ``detail`` in a
-- statement of its own, which sees what the refusing step committed. Parts run in
-- order, so a later part sees what an earlier one wrote.
CREATE OR REPLACE FUNCTION statewright_shard_rows(
    route text, statements text, batches text, detail text, wanted int)
RETURNS SETOF json LANGUAGE plpgsql AS $fn$
DECLARE
    templates text[] := ARRAY(SELECT json_array_elements_text(statements::json));
    parts json[] := ARRAY(SELECT json_array_elements(batches::json));
    part int;
    grp record;
    res record;
    doc json;
    local_shards bigint[];
    refused json[];
    remaining int := wanted;
BEGIN
    FOR part IN 1 .. coalesce(array_length(templates, 1), 0) LOOP
        FOR grp IN
            SELECT x.shard, json_agg(x.doc ORDER BY x.i) AS docs
              FROM (SELECT get_shard_id_for_distribution_column(
                               'workflow_instances', d.doc->>'workflow_id') AS shard,
                           d.doc, d.i
                      FROM json_array_elements(parts[part]) WITH ORDINALITY AS d(doc, i)) x
             GROUP BY x.shard
             ORDER BY x.shard
        LOOP
            EXIT WHEN remaining <= 0;
            local_shards := statewright_lock_local_shards(ARRAY[grp.shard]);
            IF NOT grp.shard = ANY(local_shards) THEN
                RETURN QUERY
                    SELECT json_build_object('n', e->'n', 'misrouted', true)
                      FROM json_array_elements(grp.docs) AS e;
                CONTINUE;
            END IF;
            refused := '{}';
            FOR res IN EXECUTE format(templates[part], VARIADIC statewright_shard_tables(grp.shard))
                       USING grp.docs, remaining LOOP
                doc := to_json(res);
                RETURN NEXT doc;
                remaining := remaining - coalesce((doc->>'taken')::int, 1);
                IF (doc->>'changed') = 'false' AND (doc->>'free') = 'true' THEN
                    refused := refused || doc;
                END IF;
            END LOOP;
            IF array_length(refused, 1) > 0 THEN
                FOR res IN EXECUTE format(detail, VARIADIC statewright_shard_tables(grp.shard))
                           USING array_to_json(refused) LOOP
                    RETURN NEXT to_json(res);
                END LOOP;
            END IF;
        END LOOP;
    END LOOP;
END $fn$;

-- Scan: ``statement`` runs on this node's shard groups one after the other, starting at
-- the ``start``-th (callers rotate it, so that replicas spread over the shard groups and
-- none is left behind), with $1 = ``params`` and $2 = how many rows are still wanted,
-- until ``wanted`` rows have come back (a row with a "taken" field counts that many).
CREATE OR REPLACE FUNCTION statewright_shard_scan(
    route text, statement text, params text, wanted int, start int)
RETURNS SETOF json LANGUAGE plpgsql AS $fn$
DECLARE
    shards bigint[];
    here bigint[];
    shard bigint;
    res record;
    doc json;
    remaining int := wanted;
    n int;
    i int;
BEGIN
    SELECT coalesce(array_agg(p.shardid ORDER BY p.shardid), '{}') INTO shards
      FROM pg_dist_placement p
      JOIN pg_dist_shard s ON s.shardid = p.shardid
     WHERE s.logicalrelid = 'workflow_instances'::regclass
       AND p.groupid = (SELECT groupid FROM pg_dist_local_group);
    n := coalesce(array_length(shards, 1), 0);
    FOR i IN 0 .. n - 1 LOOP
        EXIT WHEN remaining <= 0;
        shard := shards[1 + (i + greatest(start, 0)) % n];
        here := statewright_lock_local_shards(ARRAY[shard]);
        CONTINUE WHEN NOT shard = ANY(here);
        FOR res IN EXECUTE format(statement, VARIADIC statewright_shard_tables(shard))
                   USING params::json, remaining LOOP
            doc := to_json(res);
            RETURN NEXT doc;
            remaining := remaining - coalesce((doc->>'taken')::int, 1);
        END LOOP;
    END LOOP;
END $fn$;

SELECT create_distributed_function('statewright_shard_tables(bigint)');
SELECT create_distributed_function('statewright_lock_local_shards(bigint[])');
SELECT create_distributed_function(
    'statewright_shard_rows(text, text, text, text, int)', '$1',
    colocate_with := 'workflow_instances');
SELECT create_distributed_function(
    'statewright_shard_scan(text, text, text, int, int)', '$1',
    colocate_with := 'workflow_instances');
