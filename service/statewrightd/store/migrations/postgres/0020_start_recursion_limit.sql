-- A start's own recursion limit: the most transitions one step of the instance may take
-- (at most its definition's, checked when it starts). NULL: the definition's. Written by
-- the create only; every step of the instance reads it.
ALTER TABLE workflow_instances ADD COLUMN recursion_limit integer;
