// Repairs of one instance from its page: Retry (a FAILED one), Reset (to a revision
// picked on its timeline), Migrate (to another version of its definition), Pause and
// Unpause. Each dialog shows the dry run first (what the step would do: state, status,
// context changes, timers, task, and a migration's plan), and only then offers to apply it.
import * as api from "../api.js";
import { h, replace } from "../dom.js";
import { errorNotice, pausedBadge, prettyJson, statusBadge, timestamp } from "../format.js";
import type { WorkflowJson } from "@statewright/client/gen/statewright/v1/workflow_pb.js";
import type {
  ContextChangeJson,
  MigrateWorkflowResponseJson,
  MigrationPlanJson,
  PauseWorkflowResponseJson,
  ResetWorkflowResponseJson,
  RetryWorkflowResponseJson,
  UnpauseWorkflowResponseJson,
} from "@statewright/client/gen/statewright/v1/workflow_service_pb.js";

type Repaired =
  | RetryWorkflowResponseJson
  | ResetWorkflowResponseJson
  | MigrateWorkflowResponseJson
  | PauseWorkflowResponseJson
  | UnpauseWorkflowResponseJson;

export interface RepairAsk {
  /** The dialog's ids and the route's last segment. */
  kind: "retry" | "reset" | "migrate" | "pause" | "unpause";
  title: string;
  explain: string;
  confirm: string;
  /** The request body apart from reason and dryRun. */
  body: Record<string, unknown>;
}

function change(c: ContextChangeJson): HTMLElement {
  const side = (value: unknown, present: boolean) => (present ? h("code", {}, JSON.stringify(value)) : h("span", { class: "muted" }, "(none)"));
  return h("li", {}, h("code", {}, c.field ?? ""), ": ", side(c.before, c.before !== undefined), " → ", side(c.after, c.after !== undefined));
}

const TASK_FATES: Record<string, string> = {
  MIGRATION_TASK_FATE_MOVED: "moves: offered anew in the new state, on the same queue",
  MIGRATION_TASK_FATE_CANCELLED: "cancelled: the new state has no task",
};

function names(list: string[] | undefined): HTMLElement {
  return list?.length ? h("span", {}, list.map((n, i) => [i ? ", " : "", h("code", {}, n)])) : h("span", { class: "muted" }, "none");
}

/** A migration's plan: versions, states, fields, timers and the open task's fate. */
function planView(plan: MigrationPlanJson): HTMLElement {
  const fate = TASK_FATES[plan.taskFate ?? ""];
  return h("dl", { class: "facts", "data-plan": "" },
    h("dt", {}, "Version"), h("dd", {}, `${plan.fromVersion ?? ""} → ${plan.toVersion ?? ""}`),
    h("dt", {}, "State"), h("dd", {}, h("code", {}, plan.stateFrom ?? ""), " → ", h("code", {}, plan.stateTo ?? "")),
    h("dt", {}, "Defaulted"), h("dd", { "data-plan-defaulted": "" }, names(plan.defaultedFields)),
    h("dt", {}, "Set"), h("dd", { "data-plan-set": "" }, names(plan.setFields)),
    h("dt", {}, "Removed"), h("dd", { "data-plan-removed": "" }, names(plan.removedFields)),
    h("dt", {}, "Old timers"), h("dd", {}, plan.timersDisarmed ? "disarmed" : h("span", { class: "muted" }, "none")),
    h("dt", {}, "Open task"), h("dd", {}, fate ? [h("code", {}, plan.taskQueue ?? ""), " ", fate] : h("span", { class: "muted" }, "none")),
  );
}

/** What a dry run says the repair would do. */
export function preview(answer: Repaired): HTMLElement {
  const w: WorkflowJson = answer.workflow ?? {};
  const plan = "plan" in answer ? answer.plan : undefined;
  const changes = "contextChanges" in answer ? answer.contextChanges ?? [] : [];
  const timers = w.timers ?? [];
  return h("div", { class: "stack repair-preview", "data-preview": "" },
    plan ? [h("h3", {}, "The plan"), planView(plan), h("h3", {}, "The instance after it")] : [],
    h("dl", { class: "facts" },
      h("dt", {}, "State"), h("dd", {}, h("code", {}, w.state ?? "")),
      h("dt", {}, "Status"), h("dd", {}, statusBadge(w.status), w.paused ? [" ", pausedBadge()] : []),
      h("dt", {}, "Revision"), h("dd", {}, String(w.revision ?? "")),
      h("dt", {}, "Task"), h("dd", {}, w.pendingTask?.queue ? ["a new task on ", h("code", {}, w.pendingTask.queue)] : h("span", { class: "muted" }, "none")),
      h("dt", {}, "Timers"), h("dd", {}, timers.length
        ? h("ul", {}, timers.map((t) => h("li", {}, h("code", {}, t.after ?? ""), " → ", h("code", {}, t.targetState ?? ""), ", due ", timestamp(t.dueTime))))
        : h("span", { class: "muted" }, "none")),
    ),
    h("h3", {}, "Context changes"),
    changes.length ? h("ul", { class: "context-changes" }, changes.map(change)) : h("p", { class: "empty" }, "The context stays as it is."),
    h("details", {}, h("summary", {}, "The context after it"), prettyJson(w.context)),
  );
}

/** Opens the dialog of ``ask`` on the instance at ``path``; ``done`` gets the saved answer. */
export function repairDialog(path: string, revision: string | undefined, ask: RepairAsk, done: (answer: Repaired) => void): void {
  const reason = h("textarea", { id: `${ask.kind}-reason`, rows: 2, maxlength: 1024 });
  const shown = h("div", { "aria-live": "polite" }, h("p", { class: "muted" }, "Asking the server what would happen (a dry run: nothing is saved)…"));
  const apply = h("button", { type: "submit", value: "apply", class: "button primary", id: `confirm-${ask.kind}`, disabled: "" }, ask.confirm) as HTMLButtonElement;
  const dialog = h("dialog", { class: "confirm", "aria-labelledby": `${ask.kind}-title` },
    h("form", { method: "dialog", class: "dialog-form" },
      h("h2", { id: `${ask.kind}-title` }, ask.title),
      h("p", {}, ask.explain),
      shown,
      h("label", { for: `${ask.kind}-reason` }, "Reason ", h("span", { class: "muted" }, "(recorded in its history, with you)")), reason,
      h("div", { class: "dialog-actions" },
        h("button", { type: "submit", value: "keep", class: "button subtle", autofocus: true }, "Leave it as it is"),
        apply,
      ),
    ),
  ) as HTMLDialogElement;
  const post = (dryRun: boolean) => api.post<Repaired>(`${path}/${ask.kind}`, { ...ask.body, reason: reason.value, dryRun, expectedRevision: revision });
  post(true).then(
    (answer) => {
      replace(shown, h("h3", {}, "What would happen"), preview(answer));
      apply.disabled = false;
    },
    (error) => replace(shown, errorNotice(error, "The server refused")),
  );
  dialog.addEventListener("close", () => {
    if (dialog.returnValue === "apply") {
      post(false).then(done, (error) => {
        const notice = document.querySelector(".action-outcome");
        if (notice) replace(notice as HTMLElement, errorNotice(error, "The server refused"));
      });
    }
    dialog.remove();
  });
  document.body.append(dialog);
  dialog.showModal();
}
