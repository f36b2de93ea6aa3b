"""The engine's answers turned into response messages."""

from __future__ import annotations

import weakref
from collections.abc import Sequence

from statewright.v1 import workflow_pb2
from statewright.v1 import workflow_service_pb2 as pb

from statewrightd.api.convert import (
    STATUS_TO_PB,
    context_patch_pb,
    definition_pb,
    dict_to_struct,
    transitions_pb,
    workflow_pb,
)
from statewrightd.app.migrate import Migrated
from statewrightd.app.repair import Repaired
from statewrightd.app.workflows import Deleted
from statewrightd.definitions.registry import Loaded
from statewrightd.domain import Status
from statewrightd.engine import migration
from statewrightd.engine.answers import Outcome, Rejection
from statewrightd.engine.loading import Found
from statewrightd.engine.watch import StepEvent
from statewrightd.store.records import InstanceRecord, Page

_REJECTIONS = {
    None: pb.SIGNAL_REJECTION_UNSPECIFIED,
    Rejection.NOT_RUNNING: pb.SIGNAL_REJECTION_NOT_RUNNING,
    Rejection.PERSISTING: pb.SIGNAL_REJECTION_PERSISTING,
    Rejection.RECOVERY_REQUIRED: pb.SIGNAL_REJECTION_RECOVERY_REQUIRED,
    Rejection.SHUTTING_DOWN: pb.SIGNAL_REJECTION_SHUTTING_DOWN,
    Rejection.WORKFLOW_PAUSED: pb.SIGNAL_REJECTION_WORKFLOW_PAUSED,
}


def outcome_workflow(outcome: Outcome) -> workflow_pb2.Workflow:
    return workflow_pb(outcome.record, outcome.loaded.definition, outcome.timers, outcome.task)


def found_workflow(found: Found) -> workflow_pb2.Workflow:
    return workflow_pb(
        found.record, found.loaded.definition, found.timers, found.task, family=found.family
    )


def start_response(outcome: Outcome) -> pb.StartWorkflowResponse:
    return pb.StartWorkflowResponse(
        workflow=workflow_pb(
            outcome.record, outcome.loaded.definition, outcome.timers, outcome.task
        ),
        transitions=transitions_pb(outcome.transitions),
        created=outcome.created,
    )


def resume_response(outcome: Outcome) -> pb.ResumeWorkflowResponse:
    return pb.ResumeWorkflowResponse(
        workflow=workflow_pb(
            outcome.record, outcome.loaded.definition, outcome.timers, outcome.task
        ),
        transitions=transitions_pb(outcome.transitions),
    )


def signal_response(outcome: Outcome) -> pb.SignalWorkflowResponse:
    return pb.SignalWorkflowResponse(
        accepted=outcome.accepted,
        reason=_REJECTIONS[outcome.rejection],
        workflow=workflow_pb(
            outcome.record, outcome.loaded.definition, outcome.timers, outcome.task
        ),
        transitions=transitions_pb(outcome.transitions),
    )


def signal_with_start_response(outcome: Outcome) -> pb.SignalWithStartWorkflowResponse:
    return pb.SignalWithStartWorkflowResponse(
        workflow=workflow_pb(
            outcome.record, outcome.loaded.definition, outcome.timers, outcome.task
        ),
        # Only a creation is saved at revision 1, and a replay rebuilds that revision.
        started=outcome.saved and outcome.record.revision == 1,
        accepted=outcome.accepted,
        reason=_REJECTIONS[outcome.rejection],
        transitions=transitions_pb(outcome.transitions),
    )


def cancel_response(outcome: Outcome) -> pb.CancelWorkflowResponse:
    return pb.CancelWorkflowResponse(
        workflow=workflow_pb(
            outcome.record, outcome.loaded.definition, outcome.timers, outcome.task
        )
    )


def _context_changes(repaired: Repaired) -> list[pb.ContextChange]:
    before, after = repaired.before, repaired.outcome.record.context
    changes = []
    for name in sorted(before.keys() | after.keys()):
        if name in before and name in after and before[name] == after[name]:
            continue
        values = {k: m[name] for k, m in (("before", before), ("after", after)) if name in m}
        change = pb.ContextChange(field=name)
        struct = dict_to_struct(values)
        for key in values:
            getattr(change, key).CopyFrom(struct.fields[key])
        changes.append(change)
    return changes


def retry_response(repaired: Repaired) -> pb.RetryWorkflowResponse:
    return pb.RetryWorkflowResponse(
        workflow=outcome_workflow(repaired.outcome),
        context_changes=_context_changes(repaired),
        dry_run=repaired.dry_run,
    )


def reset_response(repaired: Repaired) -> pb.ResetWorkflowResponse:
    return pb.ResetWorkflowResponse(
        workflow=outcome_workflow(repaired.outcome),
        context_changes=_context_changes(repaired),
        dry_run=repaired.dry_run,
    )


_TASK_FATES = {
    migration.TASK_NONE: pb.MIGRATION_TASK_FATE_NONE,
    migration.TASK_MOVED: pb.MIGRATION_TASK_FATE_MOVED,
    migration.TASK_CANCELLED: pb.MIGRATION_TASK_FATE_CANCELLED,
}


def migrate_response(migrated: Migrated) -> pb.MigrateWorkflowResponse:
    plan, repaired = migrated.plan, migrated.repaired
    return pb.MigrateWorkflowResponse(
        workflow=outcome_workflow(repaired.outcome),
        plan=pb.MigrationPlan(
            from_version=plan.from_version,
            to_version=plan.to_version,
            state_from=plan.state_from,
            state_to=plan.state_to,
            defaulted_fields=[a.field for a in plan.assigned if a.source == "default"],
            set_fields=[a.field for a in plan.assigned if a.source == "set"],
            removed_fields=list(plan.removed),
            timers_disarmed=plan.timers_disarmed,
            task_fate=_TASK_FATES[plan.task],
            task_queue=plan.task_queue,
        ),
        context_changes=_context_changes(repaired),
        dry_run=repaired.dry_run,
    )


def pause_response(repaired: Repaired) -> pb.PauseWorkflowResponse:
    return pb.PauseWorkflowResponse(
        workflow=outcome_workflow(repaired.outcome), dry_run=repaired.dry_run
    )


def unpause_response(repaired: Repaired) -> pb.UnpauseWorkflowResponse:
    return pb.UnpauseWorkflowResponse(
        workflow=outcome_workflow(repaired.outcome), dry_run=repaired.dry_run
    )


def delete_response(deleted: Deleted | None) -> pb.DeleteWorkflowResponse:
    if deleted is None:  # allow_missing, and nothing was there
        return pb.DeleteWorkflowResponse()
    return pb.DeleteWorkflowResponse(
        workflow=workflow_pb(deleted.record, deleted.loaded.definition),
        cancelled=deleted.cancelled,
    )


def get_response(found: Found) -> pb.GetWorkflowResponse:
    return pb.GetWorkflowResponse(workflow=found_workflow(found))


def list_response(page: Page[InstanceRecord], found: Sequence[Found]) -> pb.ListWorkflowsResponse:
    return pb.ListWorkflowsResponse(
        workflows=[found_workflow(f) for f in found],
        next_page_token=page.next_page_token,
    )


def count_response(counts: dict[str, int]) -> pb.CountWorkflowsResponse:
    return pb.CountWorkflowsResponse(
        total=sum(counts.values()),
        by_status=[
            pb.StatusCount(status=STATUS_TO_PB[Status(s)], count=n)
            for s, n in sorted(counts.items())
        ],
    )


def definitions_response(
    page: Sequence[Loaded], next_page_token: str
) -> pb.ListDefinitionsResponse:
    return pb.ListDefinitionsResponse(
        definitions=[definition_pb(item) for item in page], next_page_token=next_page_token
    )


class WatchMessages:
    """Step events as watch messages. A live step is shared by every watcher of its
    instance: its message is built once, for all of them, and forgotten with the event."""

    def __init__(self) -> None:
        self._built: weakref.WeakKeyDictionary[StepEvent, pb.WatchWorkflowResponse] = (
            weakref.WeakKeyDictionary()
        )

    def __call__(self, event: StepEvent) -> pb.WatchWorkflowResponse:
        message = self._built.get(event)
        if message is None:
            message = self._build(event)
            self._built[event] = message
        return message

    @staticmethod
    def _build(event: StepEvent) -> pb.WatchWorkflowResponse:
        workflow = workflow_pb(event.record, event.loaded.definition, event.timers)
        if event.current:
            return pb.WatchWorkflowResponse(
                type=pb.WATCH_EVENT_TYPE_CURRENT, revision=event.record.revision, workflow=workflow
            )
        return pb.WatchWorkflowResponse(
            type=pb.WATCH_EVENT_TYPE_STEP,
            revision=event.record.revision,
            transitions=transitions_pb(event.transitions, event.actor),
            workflow=workflow,
            event=event.event or "",
            actor=event.actor or "",
            input=None if event.input is None else dict_to_struct(event.input),
            context_patch=(
                () if event.before is None else context_patch_pb(event.before, event.record.context)
            ),
        )
