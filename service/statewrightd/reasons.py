"""Every reason the server gives in an ErrorInfo: one table of named reasons.

A reason is the stable identifier a client branches on (UPPER_SNAKE, with the error's
dynamic values in its metadata); the error's class gives its code, through the one map
from errors to codes (api/status.py). Errors are raised with a member of this table,
never a string of their own, so that the documentation's table of reasons and the
clients' error classes can be checked against it (tests/unit/docs). A bottom module:
every layer names its reasons from here.
"""

from __future__ import annotations

import enum


class Reason(enum.StrEnum):
    # -- Answers to requests.
    ALREADY_TERMINAL = "ALREADY_TERMINAL"  # a cancel of an instance that has already ended
    # a context over --max-context-size (a start refused; or a step's failure)
    CONTEXT_TOO_LARGE = "CONTEXT_TOO_LARGE"
    # a recorded definition version no longer compiles on this server
    DEFINITION_INVALID = "DEFINITION_INVALID"
    DEFINITION_NOT_FOUND = "DEFINITION_NOT_FOUND"  # no such definition, or no such version of it
    # the event is declared, but not from the state the instance is in
    EVENT_NOT_ALLOWED = "EVENT_NOT_ALLOWED"
    FIELD_REQUIRED = "FIELD_REQUIRED"  # a request field that must be set is empty
    GUARD_REJECTED = "GUARD_REJECTED"  # a resume whose event's every guard is false
    # a start or resume input value of the wrong type for its field
    INPUT_TYPE_MISMATCH = "INPUT_TYPE_MISMATCH"
    INVALID_FIELD = "INVALID_FIELD"  # a request field with a malformed or out-of-range value
    # a start's recursion_limit below zero
    INVALID_RECURSION_LIMIT = "INVALID_RECURSION_LIMIT"
    # a start's recursion_limit above its definition's (it can only lower it)
    RECURSION_LIMIT_TOO_HIGH = "RECURSION_LIMIT_TOO_HIGH"
    INVALID_FILTER = "INVALID_FILTER"  # a list filter that does not parse or names no field
    INVALID_INPUT = "INVALID_INPUT"  # an input that is not a map of context fields
    INVALID_ORDER_BY = "INVALID_ORDER_BY"  # a list order_by that is not one of the orders
    INVALID_PAGE_TOKEN = "INVALID_PAGE_TOKEN"  # a page_token this server did not hand out
    INVALID_PAYLOAD = "INVALID_PAYLOAD"  # a signal payload that cannot be stored
    INVALID_RESULT = "INVALID_RESULT"  # a task result that cannot be stored
    INVALID_SCHEDULE = "INVALID_SCHEDULE"  # a schedule spec, action or policy that cannot fire
    # a worker's lease_token is no longer the task's current lease
    LEASE_SUPERSEDED = "LEASE_SUPERSEDED"
    MALFORMED_REQUEST = "MALFORMED_REQUEST"  # a request body that does not decode
    NOT_WAITING = "NOT_WAITING"  # a resume of an instance that is not WAITING
    NOT_FAILED = "NOT_FAILED"  # a retry of an instance that is not FAILED
    # a migration to another definition version that cannot apply (its problems listed)
    MIGRATION_INVALID = "MIGRATION_INVALID"
    # a step of a paused instance other than its unpause or cancel (PauseWorkflow)
    WORKFLOW_PAUSED = "WORKFLOW_PAUSED"
    ALREADY_PAUSED = "ALREADY_PAUSED"  # a pause of an instance that is paused already
    NOT_PAUSED = "NOT_PAUSED"  # an unpause of an instance that is not paused
    # a reset to a revision that history does not hold (never saved, or removed)
    REVISION_NOT_FOUND = "REVISION_NOT_FOUND"
    # a repair naming a state the instance's definition version does not declare
    STATE_NOT_FOUND = "STATE_NOT_FOUND"
    # a cancel of a batch operation that has completed (every instance was tried)
    BATCH_FINISHED = "BATCH_FINISHED"
    # a start of a batch operation whose id is taken by one started with another request
    BATCH_EXISTS = "BATCH_EXISTS"
    BATCH_NOT_FOUND = "BATCH_NOT_FOUND"  # no such batch operation
    # a batch operation whose filter matches more instances than one batch may hold
    BATCH_TOO_LARGE = "BATCH_TOO_LARGE"
    # a fire missed: older than the catch-up window when a replica could run it
    SCHEDULE_CATCHUP_PASSED = "SCHEDULE_CATCHUP_PASSED"
    SCHEDULE_CHANGED = "SCHEDULE_CHANGED"  # an update naming a revision the schedule has left
    SCHEDULE_EXISTS = "SCHEDULE_EXISTS"  # a create of a schedule id that is taken
    SCHEDULE_NOT_FOUND = "SCHEDULE_NOT_FOUND"  # no such schedule
    # a fire skipped by the overlap policy: the schedule's previous instance is still open
    SCHEDULE_OVERLAP = "SCHEDULE_OVERLAP"
    # the database connection was lost around the commit of the step
    OUTCOME_UNKNOWN = "OUTCOME_UNKNOWN"
    OVERLOADED = "OVERLOADED"  # the server's queues are full
    # no role of the caller allows this call on this definition or queue
    PERMISSION_DENIED = "PERMISSION_DENIED"
    # the instance's last save has an unknown outcome that the server is still re-checking
    RECOVERY_REQUIRED = "RECOVERY_REQUIRED"
    RATE_LIMITED = "RATE_LIMITED"  # the caller is over its --rate-limit
    REQUEST_ID_REUSED = "REQUEST_ID_REUSED"  # a request_id already used for a different request
    REQUEST_IN_DOUBT = "REQUEST_IN_DOUBT"  # a retry of a request whose original did not complete
    # a signal or resume with task_failed or task_completed, which only tasks fire
    RESERVED_EVENT = "RESERVED_EVENT"
    REVISION_MISMATCH = "REVISION_MISMATCH"  # expected_revision is not the stored revision
    # a watch after_revision beyond the current revision
    REVISION_OUT_OF_RANGE = "REVISION_OUT_OF_RANGE"
    SCHEMA_NOT_MIGRATED = "SCHEMA_NOT_MIGRATED"  # the database schema is behind this server
    SHUTTING_DOWN = "SHUTTING_DOWN"  # the server is draining
    # the database is known to be down, or did not answer
    STORAGE_UNAVAILABLE = "STORAGE_UNAVAILABLE"
    TASK_CANCELLED = "TASK_CANCELLED"  # the task's state was left
    TASK_NOT_FOUND = "TASK_NOT_FOUND"  # no such task
    # a JWT, correctly signed, with a claim the server reads missing or of the wrong type
    TOKEN_CLAIM_INVALID = "TOKEN_CLAIM_INVALID"
    TOO_MANY_WATCHES = "TOO_MANY_WATCHES"  # the caller already has --max-watches watch streams open
    UNAUTHENTICATED = "UNAUTHENTICATED"  # no credentials, or credentials the server does not accept
    UNKNOWN_EVENT = "UNKNOWN_EVENT"  # an event the definition does not declare at all
    UNKNOWN_FIELD = "UNKNOWN_FIELD"  # an input key that is not a context field of the definition
    UNSERIALIZABLE_VALUE = "UNSERIALIZABLE_VALUE"  # a value that cannot be stored as sent
    # a value nested more than 20 levels deep (a request refused; or a step's failure)
    VALUE_TOO_DEEP = "VALUE_TOO_DEEP"
    VALUE_TOO_LARGE = "VALUE_TOO_LARGE"  # an input, payload or result over a size limit
    # a start with an id that is taken (no matching request_id or if_exists)
    WORKFLOW_ALREADY_EXISTS = "WORKFLOW_ALREADY_EXISTS"
    WORKFLOW_BUSY = "WORKFLOW_BUSY"  # another request on the same instance is executing
    # the workflow finished and was removed when its retention passed
    WORKFLOW_EXPIRED = "WORKFLOW_EXPIRED"
    # a DeleteWorkflow of an instance that has not finished, without force
    WORKFLOW_NOT_FINISHED = "WORKFLOW_NOT_FINISHED"
    WORKFLOW_NOT_FOUND = "WORKFLOW_NOT_FOUND"  # no such workflow
    # a signal-with-start naming a definition other than the one the instance runs
    DEFINITION_DIFFERS = "DEFINITION_DIFFERS"
    # a signal-with-start whose new instance's first step does not rest RUNNING
    SIGNAL_NOT_DELIVERABLE = "SIGNAL_NOT_DELIVERABLE"
    # a resume of an instance whose delayed start has not run yet; also its Workflow.error
    START_DELAYED = "START_DELAYED"

    # -- Why a step failed an instance (in Workflow.error; the RPC itself succeeds).
    CANCELLED = "CANCELLED"  # the instance was cancelled
    # an expression ran more than 10,000 comprehension iterations
    EVALUATION_BUDGET_EXCEEDED = "EVALUATION_BUDGET_EXCEEDED"
    EVALUATION_ERROR = "EVALUATION_ERROR"  # an expression failed at run time
    # a `map` list longer than the server's max_map_items
    MAP_TOO_LARGE = "MAP_TOO_LARGE"
    NO_TRANSITION_MATCHED = "NO_TRANSITION_MATCHED"  # no automatic transition's guard was true
    RECURSION_LIMIT = "RECURSION_LIMIT"  # more than recursion_limit transitions in one step
    STEP_FAILED = "STEP_FAILED"  # a saved failure that names no reason of its own
    TASK_FAILED = "TASK_FAILED"  # a task gave up, and no task_failed transition took it
    # A child workflow ended FAILED or CANCELLED (or could not start), and no
    # child_failed transition took it.
    CHILD_FAILED = "CHILD_FAILED"
    TASK_TIMED_OUT = "TASK_TIMED_OUT"  # as TASK_FAILED, when the last attempt timed out
    # an after_expr that gave a delay longer than the longest wait (100 years)
    TIMER_OUT_OF_RANGE = "TIMER_OUT_OF_RANGE"
    # a value of the wrong type for its field, a guard that gave no bool
    TYPE_MISMATCH = "TYPE_MISMATCH"

    # -- The generic reason of each code, for errors nothing more specific describes.
    ABORTED = "ABORTED"  # a conflict nothing more specific describes
    ALREADY_EXISTS = "ALREADY_EXISTS"  # something that exists already
    DEADLINE_EXCEEDED = "DEADLINE_EXCEEDED"  # the server gave up waiting
    # a request that does not apply in the instance's present status or state
    FAILED_PRECONDITION = "FAILED_PRECONDITION"
    INTERNAL = "INTERNAL"  # an unexpected error in the server
    INVALID_ARGUMENT = "INVALID_ARGUMENT"  # a request that is wrong in itself
    NOT_FOUND = "NOT_FOUND"  # something that does not exist
    NOT_IMPLEMENTED = "NOT_IMPLEMENTED"  # a call this server does not serve
    OUT_OF_RANGE = "OUT_OF_RANGE"  # a value past the end of what exists
    UNAVAILABLE = "UNAVAILABLE"  # the server cannot serve it now

    # -- Only the HTTP API gives these, about HTTP requests gRPC cannot receive.
    CROSS_ORIGIN = "CROSS_ORIGIN"  # a request from a page of another origin
    ENDPOINT_NOT_FOUND = "ENDPOINT_NOT_FOUND"  # a path that is no endpoint of the API
    # a Host header that names neither the listen address nor an allowed host
    HOST_NOT_ALLOWED = "HOST_NOT_ALLOWED"
    METHOD_NOT_ALLOWED = "METHOD_NOT_ALLOWED"  # an HTTP method the path does not answer
    REQUEST_TOO_LARGE = "REQUEST_TOO_LARGE"  # a request body larger than the server accepts
    # an action's body not sent as application/json
    UNSUPPORTED_MEDIA_TYPE = "UNSUPPORTED_MEDIA_TYPE"

    # -- The server's own: how its parts tell each other what happened. A client that sees one
    # has found a defect.
    AUTH_CONFIG_INVALID = "AUTH_CONFIG_INVALID"  # an --auth-config file with problems
    # a database that loads Citus without the extension: migrate refuses it
    CITUS_EXTENSION_MISSING = "CITUS_EXTENSION_MISSING"
    CITUS_NO_WORKERS = "CITUS_NO_WORKERS"  # a Citus coordinator without workers
    CITUS_NOT_COORDINATOR = "CITUS_NOT_COORDINATOR"  # a Citus worker's URL, not the coordinator's
    # the workflow tables' shards kept in more than one copy: migrate refuses them
    CITUS_SHARD_REPLICAS = "CITUS_SHARD_REPLICAS"
    # a step was asked of a definition version the instance does not run
    DEFINITION_MISMATCH = "DEFINITION_MISMATCH"
    # two sources of one (name, version) differ: the server refuses to start
    DEFINITION_VERSION_CONFLICT = "DEFINITION_VERSION_CONFLICT"
    # the store has the (name, version) with other content
    DEFINITION_VERSION_EXISTS = "DEFINITION_VERSION_EXISTS"
    INCONSISTENT_OPERATION = "INCONSISTENT_OPERATION"  # a save built wrongly
    INVALID_DATABASE_URL = "INVALID_DATABASE_URL"  # a database URL the store cannot open
    INVALID_LIMIT = "INVALID_LIMIT"  # a history read of a nonsensical size
    INVALID_PAGE_SIZE = "INVALID_PAGE_SIZE"  # a page size the store cannot apply
    # a signal to an instance that is not RUNNING: answered accepted false, never raised
    NOT_RUNNING = "NOT_RUNNING"
    REQUEST_EXISTS = "REQUEST_EXISTS"  # a request id recorded by a concurrent save
    REVISION_CONFLICT = "REVISION_CONFLICT"  # a compare-and-swap lost to another writer
    STORE_CLOSED = "STORE_CLOSED"  # the store was closed
    STORE_ERROR = "STORE_ERROR"  # the database failed in a way that is not a lost connection
    TIMER_GONE = "TIMER_GONE"  # a timer that another replica fired or consumed first
    TIMER_STALE = "TIMER_STALE"  # a timer of a state the instance has left
    WRITER_STOPPED = "WRITER_STOPPED"  # the database writer stopped
