-- Retention on Citus keeps a finished child until its parent has taken its end: the
-- purge's shard templates read the child links (colocated with the instances) as %8$s,
-- so the shard group's tables now include them, last.
CREATE OR REPLACE FUNCTION statewright_shard_tables(shard bigint) RETURNS text[]
LANGUAGE sql STABLE AS $fn$
    SELECT array_agg(shard_name(t.rel, c.shardid) ORDER BY t.ord)
      FROM unnest(ARRAY['workflow_instances', 'workflow_history', 'workflow_timers',
                        'workflow_tasks', 'workflow_requests', 'workflow_tombstones',
                        'workflow_search', 'workflow_children']::regclass[])
           WITH ORDINALITY AS t(rel, ord)
      JOIN pg_dist_shard c ON c.logicalrelid = t.rel
       AND c.shardminvalue = (SELECT shardminvalue FROM pg_dist_shard WHERE shardid = shard)
$fn$;
