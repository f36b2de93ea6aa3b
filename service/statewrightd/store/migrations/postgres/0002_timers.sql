-- Armed timers: one row per timer transition of the state an instance rests in. The step
-- that enters the state inserts them and the step that leaves it deletes them, each in
-- its own compare-and-swap transaction; a fired or consumed timer is deleted, so the
-- table holds what is armed and nothing else. timer_id is "{revision}.{transition}":
-- the revision of the step that armed it, so a re-entered state arms fresh ids.
CREATE TABLE workflow_timers (
    workflow_id    text NOT NULL REFERENCES workflow_instances (workflow_id) ON DELETE CASCADE,
    timer_id       text NOT NULL,
    revision       bigint NOT NULL CHECK (revision >= 1),
    transition     integer NOT NULL CHECK (transition >= 0),
    target         text NOT NULL,
    after          text NOT NULL,
    due_time       timestamptz NOT NULL,
    -- A replica that claims a due timer holds it until then; a claim that lapses (the
    -- replica died or stalled) lets another replica claim it.
    claimed_until  timestamptz,
    PRIMARY KEY (workflow_id, timer_id)
);
-- The one index the claim query needs: due timers in due order.
CREATE INDEX workflow_timers_due ON workflow_timers (due_time);

-- What a step armed, so that history shows an instance's timers as of each revision.
ALTER TABLE workflow_history ADD COLUMN timers jsonb;
