"""The definition the restart tests (engine and e2e) run: each run's first step counts
itself in `starts` (an entry action of the initial state) and waits for `approve`, which
finishes it; `notes` appends, so a restart's input shows going through the reducers."""

RERUN = """
name: rerun
version: 1
context:
  customer: {type: string, default: ""}
  amount:   {type: int, default: 0}
  starts:   {type: int, default: 0}
  notes:    {type: list, reducer: append, default: []}
initial: begin
states:
  begin:
    entry:
      - set: {starts: "context.starts + 1"}
  waiting:
    wait: true
transitions:
  - {from: begin, to: waiting}
  - {from: waiting, on: approve, to: __finish__}
"""
