-- Schedules: one row each, its spec, action, policies, state and record of recent fires
-- in one JSON document (read and written whole: a schedule is small and changes rarely).
-- next_fire_time is when a replica should next look at it (NULL: never, paused or
-- ended); claimed_until is the claim of the replica firing it, as for timers; version
-- is bumped by every write, fires included, and every write compares it.
CREATE TABLE schedules (
    schedule_id     TEXT PRIMARY KEY,
    document        TEXT NOT NULL,
    next_fire_time  INTEGER,
    claimed_until   INTEGER,
    version         INTEGER NOT NULL CHECK (version >= 1),
    create_time     INTEGER NOT NULL,
    update_time     INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX schedules_due ON schedules (next_fire_time);
