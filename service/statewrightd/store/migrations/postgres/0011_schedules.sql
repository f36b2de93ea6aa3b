-- Schedules: one row each, its spec, action, policies, state and record of recent fires
-- in one JSON document (read and written whole: a schedule is small and changes rarely).
-- next_fire_time is when a replica should next look at it (NULL: never, paused or
-- ended); claimed_until is the claim of the replica firing it, as for timers; version
-- is bumped by every write, fires included, and every write compares it. Not per
-- instance: on Citus it is a reference table.
CREATE TABLE schedules (
    schedule_id     text PRIMARY KEY,
    document        jsonb NOT NULL,
    next_fire_time  timestamptz,
    claimed_until   timestamptz,
    version         bigint NOT NULL CHECK (version >= 1),
    create_time     timestamptz NOT NULL,
    update_time     timestamptz NOT NULL
);
CREATE INDEX schedules_due ON schedules (next_fire_time);
