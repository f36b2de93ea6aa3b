-- Search fields on Citus: a step's batch call writes its instance's search rows in the
-- same local transaction as its compare-and-swap save, on the node that holds both
-- (workflow_search is colocated with the instances). Its templates name the search
-- shard as %7$s, so the shard group's tables now include it, last.
CREATE OR REPLACE FUNCTION statewright_shard_tables(shard bigint) RETURNS text[]
LANGUAGE sql STABLE AS $fn$
    SELECT array_agg(shard_name(t.rel, c.shardid) ORDER BY t.ord)
      FROM unnest(ARRAY['workflow_instances', 'workflow_history', 'workflow_timers',
                        'workflow_tasks', 'workflow_requests', 'workflow_tombstones',
                        'workflow_search']::regclass[])
           WITH ORDINALITY AS t(rel, ord)
      JOIN pg_dist_shard c ON c.logicalrelid = t.rel
       AND c.shardminvalue = (SELECT shardminvalue FROM pg_dist_shard WHERE shardid = shard)
$fn$;
