import * as api from "../api.js";
import { append, h, link, replace } from "../dom.js";
import { clockTime, copyButton, countdown, errorNotice, icon, pairs, parseJson, pausedBadge, prettyJson, seconds, statusBadge, statusLabel, terminal, timestamp } from "../format.js";
import type { TaskJson } from "@statewright/client/gen/statewright/v1/task_pb.js";
import type { WorkflowJson } from "@statewright/client/gen/statewright/v1/workflow_pb.js";
import type {
  CancelWorkflowResponseJson,
  ContextPatchOperationJson,
  GetDefinitionResponseJson,
  GetDiagnosticsResponseJson,
  GetWorkflowResponseJson,
  ResumeWorkflowResponseJson,
  SignalWorkflowResponseJson,
  WatchWorkflowResponseJson,
} from "@statewright/client/gen/statewright/v1/workflow_service_pb.js";
import { isTaskState, type Outcome, StateGraph } from "../graph.js";
import { FanOutCard, fanOutSummary } from "./fan_out.js";
import { navigate, type Page } from "../router.js";
import { repairDialog } from "./repair.js";
import { connection } from "../status.js";

// The timeline opens with this many revisions at most (a watch replays only these); "Load
// earlier" adds as many again each time it is pressed.
const HISTORY_SHOWN = 200;
// How a finished instance ended, as its graph colours the state it ended in.
const OUTCOMES: Record<string, Outcome> = {
  WORKFLOW_STATUS_COMPLETED: "completed",
  WORKFLOW_STATUS_FAILED: "failed",
  WORKFLOW_STATUS_CANCELLED: "cancelled",
};
const TASK_POLL_MS = 3000;
// How often a task waiting for a worker has its queue's health looked at (diagnostics).
const QUEUE_CHECK_MS = 10_000;
// Task statuses in which the task waits for a worker to poll its queue.
const WAITING_FOR_WORKER = new Set(["TASK_STATUS_SCHEDULED", "TASK_STATUS_BACKOFF"]);

/** "13 min", "2 h 5 min": how long a queue has gone unpolled, to the minute. */
function minutes(ms: number): string {
  const total = Math.max(1, Math.floor(ms / 60_000));
  return total < 60 ? `${total} min` : `${Math.floor(total / 60)} h ${total % 60} min`;
}

const TASK_STATUS: Record<string, string> = {
  TASK_STATUS_SCHEDULED: "Scheduled",
  TASK_STATUS_LEASED: "Leased",
  TASK_STATUS_BACKOFF: "Backing off",
  TASK_STATUS_COMPLETED: "Completed",
  TASK_STATUS_FAILED: "Failed",
  TASK_STATUS_CANCELLED: "Cancelled",
  TASK_STATUS_TIMED_OUT: "Timed out",
};

// The step that cancelled the instance: it left it CANCELLED, and says why in its input.
function isCancellation(step: WatchWorkflowResponseJson): boolean {
  return step.workflow?.status === "WORKFLOW_STATUS_CANCELLED" && step.input !== undefined && "reason" in (step.input ?? {});
}

function patchOperation(op: ContextPatchOperationJson): HTMLElement {
  const verb = op.op ?? "";
  return h("li", { class: `patch-op patch-${verb}` },
    h("span", { class: "patch-verb" }, verb), " ",
    op.from !== undefined && op.from !== "" ? [h("code", {}, op.from), " → "] : null,
    h("code", {}, op.path || "/"),
    verb === "add" || verb === "replace" ? [" = ", h("code", { class: "patch-value" }, JSON.stringify(op.value ?? null))] : null,
  );
}

// What a step took and what it changed, shown when its row is opened.
function historyDetail(step: WatchWorkflowResponseJson, cancelled: boolean): HTMLElement {
  const patch = step.contextPatch ?? [];
  const input = step.input;
  return h("div", { class: "history-detail-body" },
    h("div", {},
      h("h3", {}, cancelled ? "Cancellation reason" : "Input"),
      input === undefined
        ? h("p", { class: "empty" }, "Not recorded for this step.")
        : cancelled
          ? h("p", { class: "cancel-reason" }, String((input as { reason?: unknown }).reason || "no reason given"))
          : prettyJson(input)),
    h("div", {},
      h("h3", {}, "Context change"),
      patch.length
        ? h("ol", { class: "patch", "aria-label": "JSON Patch operations" }, patch.map(patchOperation))
        : h("p", { class: "empty" }, "The context did not change.")),
  );
}

/** A child's parent and a parent's live children, as rows of the status facts: each a
 * link to its workflow page, and to the list of every child. */
function family(workflow: WorkflowJson): HTMLElement[] {
  const rows: HTMLElement[] = [];
  const parentId = (workflow.parent?.name ?? "").replace(/^workflows\//, "");
  if (parentId) {
    rows.push(h("dt", {}, "Parent"), h("dd", { "data-parent": parentId },
      link(`/workflows/${encodeURIComponent(parentId)}`, h("code", {}, parentId)),
      h("span", { class: "muted" }, ` from state ${workflow.parent?.state ?? ""}`)));
  }
  const open = Number(workflow.children?.open ?? 0);
  if (open > 0) {
    const names = (workflow.children?.names ?? []).map((n) => n.replace(/^workflows\//, ""));
    const all = `/workflows?filter=${encodeURIComponent(`parent = "${workflow.name ?? ""}"`)}`;
    rows.push(h("dt", {}, "Children"), h("dd", { "data-children": String(open) },
      h("ul", { class: "chips" }, names.map((c) => h("li", { class: "chip" }, link(`/workflows/${encodeURIComponent(c)}`, h("code", {}, c))))),
      link(all, `all ${open} open`)));
  }
  return rows;
}

export function workflowPage(id: string): Page {
  return {
    title: id,
    render(main) {
      const path = `/api/v1/workflows/${encodeURIComponent(id)}`;
      const body = h("div", { "aria-busy": "true" }, h("p", { class: "muted" }, "Loading…"));
      main.append(
        h("nav", { class: "crumbs", "aria-label": "Breadcrumb" }, h("ol", {}, h("li", {}, link("/workflows", "Workflows")), h("li", { "aria-current": "page", class: "crumb-id", title: id }, id))),
        body,
      );
      let closed = false;
      let stream: api.Stream | null = null;
      let ticker = 0;
      let taskPoll = 0;
      let queueCheck = 0;
      let refreshTimer = 0;

      api.get<GetWorkflowResponseJson>(path).then(async (got) => {
        let workflow: WorkflowJson = got.workflow ?? {};
        const def = await api.get<GetDefinitionResponseJson>(`/api/v1/definitions/${encodeURIComponent(workflow.definition ?? "")}/versions/${workflow.version}`);
        if (closed) return;
        const mermaidSource = def.definition?.mermaid ?? "";
        body.removeAttribute("aria-busy");

        const headFacts = h("div", { class: "head-facts" });
        const heading = h("div", { class: "page-head" }, h("h1", { class: "id-heading" }, h("code", {}, id), copyButton(id, "workflow id")), headFacts);
        const graph = new StateGraph(mermaidSource, `State graph of ${workflow.definition} version ${workflow.version}, current state highlighted, the path taken outlined`);
        const facts = h("dl", { class: "facts" });
        const accepted = h("div", {});
        const context = h("div", {});
        const timers = h("div", {});
        const task = h("div", {});
        const queueHealth = h("div", { class: "queue-health", "aria-live": "polite" });
        const actions = h("div", {});
        const outcome = h("div", { class: "action-outcome", "aria-live": "assertive" });
        const historyRows = h("tbody", {});
        const earlier = h("p", { class: "muted", id: "history-earlier" });
        const earlierButton = h("button", { type: "button", class: "secondary", id: "load-earlier" }, "Load earlier") as HTMLButtonElement;
        const earlierStatus = h("span", { class: "muted small", role: "status" });
        // Revisions 1 to `hiddenBefore - 1` are not in the table yet; the live feed may
        // add rows above without ever trimming ones a person asked for.
        let hiddenBefore = 1;
        let rowCap = HISTORY_SHOWN;
        let pendingTask: TaskJson | undefined = workflow.pendingTask;

        replace(
          body,
          heading,
          h("div", { class: "grid workflow-top" },
            h("section", { class: "card graph-card", "aria-labelledby": "graph-title" }, h("h2", { id: "graph-title" }, "State graph"), graph.element),
            h("div", { class: "side" },
              h("section", { class: "card", "aria-labelledby": "details-title" }, h("h2", { id: "details-title" }, "Status"), facts, accepted),
              h("section", { class: "card", "aria-labelledby": "actions-title" }, h("h2", { id: "actions-title" }, "Actions"), outcome, actions),
            ),
          ),
          h("div", { class: "grid two" },
            h("section", { class: "card", "aria-labelledby": "timers-title" }, h("h2", { id: "timers-title" }, "Armed timers"), timers),
            h("section", { class: "card", "aria-labelledby": "task-title" }, h("h2", { id: "task-title" }, "Pending task"), queueHealth, task),
            h("section", { class: "card span-2", "aria-labelledby": "context-title" }, h("h2", { id: "context-title" }, "Context"), context),
            h("section", { class: "card span-2", "aria-labelledby": "history-title" },
              h("h2", { id: "history-title" }, "History"),
              h("div", { class: "table-wrap", tabindex: 0, role: "region", "aria-label": "History" },
                h("table", { class: "data timeline" },
                  h("thead", {}, h("tr", {}, ["Revision", "Event", "Transitions", "Actor", "Time"].map((t) => h("th", { scope: "col" }, t)))),
                  historyRows,
                ),
              ),
              h("div", { class: "pager history-pager" }, earlier, earlierStatus, earlierButton),
            ),
          ),
        );

        // A delayed start (StartWorkflow start_delay) waits on a timer of its own: until it
        // fires the instance is WAITING with the reason START_DELAYED and accepts nothing.
        const startTimer = () => (workflow.timers ?? []).find((t) => (t.after ?? "").startsWith("start_delay"));
        const drawTimers = () => {
          const list = workflow.timers ?? [];
          const now = Date.now();
          replace(timers, list.length
            ? h("ul", { class: "timers" }, list.map((t) =>
                h("li", {},
                  h("span", { class: "timer-target" }, "→ ", h("code", {}, t.targetState ?? "")),
                  h("span", { class: "muted" }, ` after ${t.after ?? ""}`),
                  h("span", { class: "countdown", "data-due": t.dueTime ?? "" }, countdown(t.dueTime, now)),
                  h("span", { class: "muted small" }, "due ", clockTime(t.dueTime)),
                )))
            : h("p", { class: "empty" }, "No timer is armed."));
        };
        let fanOut: FanOutCard | null = null;
        const drawTask = () => {
          const fan = workflow.fanOut;
          if (fan) {
            // A fan-out: its progress and its items, not one pending task.
            if (!fanOut) {
              fanOut = new FanOutCard(workflow.name ?? `workflows/${workflow.workflowId}`);
              replace(task, fanOut.element);
              void fanOut.load("");
            }
            fanOut.show(fan);
            return;
          }
          fanOut = null;
          const t = pendingTask;
          if (!t || !WAITING_FOR_WORKER.has(t.status ?? "")) replace(queueHealth);
          if (!t) {
            replace(task, h("p", { class: "empty" }, "No task is pending."));
            return;
          }
          replace(task, h("dl", { class: "facts" },
            h("dt", {}, "Queue"), h("dd", {}, h("code", {}, t.queue ?? "")),
            h("dt", {}, "Status"), h("dd", {}, TASK_STATUS[t.status ?? ""] ?? t.status ?? ""),
            h("dt", {}, "Attempt"), h("dd", { "data-attempt": String(t.attempt ?? 0) }, String(t.attempt ?? 0)),
            h("dt", {}, "Lease"), h("dd", {}, t.leaseExpireTime ? h("span", { class: "countdown", "data-due": t.leaseExpireTime }, countdown(t.leaseExpireTime)) : "not leased"),
            h("dt", {}, "Deadline"), h("dd", {}, timestamp(t.deadline)),
            t.lastError ? [h("dt", {}, "Last error"), h("dd", {}, h("code", {}, t.lastError.type ?? ""), " ", t.lastError.message ?? "")] : null,
          ));
        };
        // A task waiting for a worker, on a queue the server reports stalled (a backlog
        // and no poll for a minute): say so, with how long, since a workflow that does
        // not move for want of a worker looks the same as one that is slow. The server's
        // diagnostics are its own process's polls; a caller without access to them (a
        // scoped key) is shown nothing.
        const checkQueue = async () => {
          const t = pendingTask;
          if (!t?.queue || !WAITING_FOR_WORKER.has(t.status ?? "")) return void replace(queueHealth);
          let d: GetDiagnosticsResponseJson;
          try {
            d = await api.get<GetDiagnosticsResponseJson>("/api/v1/diagnostics");
          } catch {
            return void replace(queueHealth);
          }
          if (closed) return;
          const q = (d.taskQueues ?? []).find((x) => x.queue === t.queue);
          if (!q?.stalled || pendingTask?.queue !== t.queue || !WAITING_FOR_WORKER.has(pendingTask.status ?? "")) return void replace(queueHealth);
          const now = Date.now();
          const polled = q.lastPollTime ? Date.parse(q.lastPollTime) : null;
          const since = polled ?? now - seconds(d.uptime) * 1000;
          const words = polled === null
            ? ["No worker has polled ", h("code", {}, t.queue), ` since this server started ${minutes(now - since)} ago`]
            : ["No worker has polled ", h("code", {}, t.queue), ` for ${minutes(now - since)}`];
          replace(queueHealth, h("div", { class: "notice notice-warn", role: "status", "data-stalled-queue": t.queue },
            h("p", {}, ...words, "."),
            h("p", {}, "The task waits until one does. ", link("/runtime", "Task queues on the runtime page")),
          ));
        };
        // The Actions card is built once and then updated in place: a step landing while
        // someone types into a form must not take their input, their caret or their focus.
        // Only what can work is offered: Resume on a waiting instance with its wait state's
        // events, Signal on a running one with its state's events, Cancel while it is live.
        const resumeEvent = h("select", { id: "resume-event", name: "event" });
        const resumeInput = h("textarea", { id: "resume-input", rows: 3, spellcheck: "false", class: "code-input", placeholder: "{}" });
        const resume = h("form", { class: "stack", "aria-labelledby": "resume-title", "data-action": "resume" },
          h("h3", { id: "resume-title" }, "Resume"),
          h("label", { for: "resume-event" }, "Event"), resumeEvent,
          h("label", { for: "resume-input" }, "Input ", h("span", { class: "muted" }, "(JSON object, optional)")), resumeInput,
          h("div", {}, h("button", { type: "submit", class: "button primary", id: "resume-button" }, "Resume")),
        );
        resume.addEventListener("submit", (event) => {
          event.preventDefault();
          const input = parseJson(resumeInput.value, "input");
          if (!input.ok) return void replace(outcome, errorNotice(input.error, "Not sent"));
          act(`Resumed with ${resumeEvent.value}`, api.post<ResumeWorkflowResponseJson>(`${path}/resume`, { event: resumeEvent.value, input: input.value, expectedRevision: workflow.revision }));
        });
        const signalEvent = h("select", { id: "signal-event", name: "event" });
        const signalPayload = h("textarea", { id: "signal-payload", rows: 2, spellcheck: "false", class: "code-input", placeholder: "{}" });
        const signal = h("form", { class: "stack", "aria-labelledby": "signal-title", "data-action": "signal" },
          h("h3", { id: "signal-title" }, "Signal"),
          h("label", { for: "signal-event" }, "Event"), signalEvent,
          h("label", { for: "signal-payload" }, "Payload ", h("span", { class: "muted" }, "(JSON object, optional)")), signalPayload,
          h("div", {}, h("button", { type: "submit", class: "button", id: "signal-button" }, "Send signal")),
        );
        signal.addEventListener("submit", (event) => {
          event.preventDefault();
          const payload = parseJson(signalPayload.value, "payload");
          if (!payload.ok) return void replace(outcome, errorNotice(payload.error, "Not sent"));
          act(`Signal ${signalEvent.value}`, api.post<SignalWorkflowResponseJson>(`${path}/signal`, { event: signalEvent.value, payload: payload.value }));
        });
        const idle = h("p", { class: "muted", id: "actions-idle" });
        const cancel = h("div", { class: "stack", "data-action": "cancel" },
          h("h3", {}, "Cancel"),
          h("div", {}, h("button", { type: "button", class: "button danger", id: "cancel-button", onclick: () => confirmCancel() }, "Cancel workflow…")),
        );
        const ended = h("p", { class: "empty", id: "actions-ended" });
        // Repairs: Retry on a FAILED instance here; Reset from any revision of the timeline.
        const repaired = () => navigate(location.pathname + location.search, true);
        const retry = h("div", { class: "stack", "data-action": "retry" },
          h("h3", {}, "Retry"),
          h("p", { class: "muted" }, "Puts it back into the state it failed in: a task that gave up is scheduled anew."),
          h("div", {}, h("button", { type: "button", class: "button", id: "retry-button", onclick: () => repairDialog(path, workflow.revision, {
            kind: "retry",
            title: `Retry ${id}?`,
            explain: `It re-enters ${workflow.state ?? "the state"} it failed in, as one saved step.`,
            confirm: "Retry workflow",
            body: {},
          }, repaired) }, "Retry workflow…")),
        );
        // Migrate: a RUNNING or WAITING instance to another version of its definition.
        const migrateVersion = h("input", { id: "migrate-version", type: "number", min: "1", required: "", value: String((workflow.version ?? 1) + 1) }) as HTMLInputElement;
        const migrateMap = h("textarea", { id: "migrate-map", rows: 2, spellcheck: "false", class: "code-input", placeholder: "old_state=new_state" }) as HTMLTextAreaElement;
        const migrateSet = h("textarea", { id: "migrate-set", rows: 2, spellcheck: "false", class: "code-input", placeholder: "field=context.other + 1" }) as HTMLTextAreaElement;
        const migrate = h("form", { class: "stack", "aria-labelledby": "migrate-title", "data-action": "migrate" },
          h("h3", { id: "migrate-title" }, "Migrate"),
          h("p", { class: "muted" }, "Moves it to another version of its definition; the dry run shows the plan first."),
          h("label", { for: "migrate-version" }, "To version"), migrateVersion,
          h("label", { for: "migrate-map" }, "States ", h("span", { class: "muted" }, "(old=new, one a line; unmapped states keep their name)")), migrateMap,
          h("label", { for: "migrate-set" }, "Set fields ", h("span", { class: "muted" }, "(field=CEL over the old context, one a line)")), migrateSet,
          h("div", {}, h("button", { type: "submit", class: "button", id: "migrate-button" }, "Migrate workflow…")),
        );
        migrate.addEventListener("submit", (event) => {
          event.preventDefault();
          const to = Number(migrateVersion.value);
          repairDialog(path, workflow.revision, {
            kind: "migrate",
            title: `Migrate ${id} to version ${to}?`,
            explain: `It moves from ${workflow.definition} v${workflow.version} to v${to}, as one saved step.`,
            confirm: "Migrate workflow",
            body: { toVersion: to, stateMap: pairs(migrateMap.value), set: pairs(migrateSet.value) },
          }, repaired);
        });
        // Pause holds a live instance still (nothing steps it) until Unpause.
        const pauseAsk = (paused: boolean) => ({
          kind: paused ? "unpause" as const : "pause" as const,
          title: `${paused ? "Unpause" : "Pause"} ${id}?`,
          explain: paused
            ? "It goes on as one saved step: timers that came due meanwhile fire, and its task is offered to workers again."
            : "Nothing steps it until it is unpaused: its timers wait, its task is not offered, resumes and signals are refused.",
          confirm: paused ? "Unpause workflow" : "Pause workflow",
          body: {},
        });
        const pauseButton = h("button", { type: "button", class: "button", id: "pause-button", onclick: () => repairDialog(path, workflow.revision, pauseAsk(Boolean(workflow.paused)), repaired) });
        const pauseText = h("p", { class: "muted" });
        const pause = h("div", { class: "stack", "data-action": "pause" }, h("h3", {}, "Pause"), pauseText, h("div", {}, pauseButton));
        append(actions, resume, signal, idle, cancel, pause, retry, migrate, ended);
        const offer = (select: HTMLSelectElement, events: string[]) => {
          const now = [...select.options].map((o) => o.value);
          if (now.length === events.length && now.every((e, i) => e === events[i])) return;
          const kept = select.value;
          select.replaceChildren(...events.map((e) => h("option", { value: e }, e)));
          if (events.includes(kept)) select.value = kept;
        };
        const drawActions = () => {
          const over = terminal(workflow.status);
          const waiting = workflow.status === "WORKFLOW_STATUS_WAITING";
          const running = workflow.status === "WORKFLOW_STATUS_RUNNING";
          const events = workflow.acceptedEvents ?? [];
          offer(resumeEvent, waiting ? events : []);
          offer(signalEvent, running ? events : []);
          const paused = Boolean(workflow.paused);
          resume.hidden = paused || !(waiting && events.length);
          signal.hidden = paused || !(running && events.length);
          idle.hidden = over || (!paused && events.length > 0);
          const starts = startTimer();
          idle.textContent = paused
            ? `This workflow is paused${workflow.pause?.actor ? ` by ${workflow.pause.actor}` : ""}: nothing steps it (no event, signal, timer or task) until it is unpaused.`
            : starts
            ? `This workflow has not started yet: its first step runs ${countdown(starts.dueTime, Date.now())} (${clockTime(starts.dueTime)}). It takes no event until then; cancel it to keep it from starting.`
            : running
              ? "The current state accepts no signal: it moves on by itself (a task, a timer or an automatic transition)."
              : "The current state accepts no event.";
          cancel.hidden = over;
          pause.hidden = over;
          pauseButton.textContent = paused ? "Unpause workflow…" : "Pause workflow…";
          pauseText.textContent = paused
            ? `Paused${workflow.pause?.reason ? `: ${workflow.pause.reason}` : ""}. Unpausing lets its due timers fire and its task be offered again.`
            : "Holds it still: its timers wait and its task is not offered until it is unpaused.";
          ended.hidden = !over;
          retry.hidden = workflow.status !== "WORKFLOW_STATUS_FAILED";
          migrate.hidden = !(waiting || running) || Boolean(startTimer());
          ended.textContent = over ? `This workflow is ${statusLabel(workflow.status).toLowerCase()}: nothing can act on it any more, unless it is repaired (a reset to a revision of its history below).` : "";
          actions.dataset.status = workflow.status ?? "";
        };
        const confirmCancel = () => {
          const reason = h("textarea", { id: "cancel-reason", rows: 2, maxlength: 1024 });
          const dialog = h("dialog", { class: "confirm", "aria-labelledby": "cancel-title", "aria-describedby": "cancel-text" },
            h("form", { method: "dialog", class: "dialog-form" },
              h("h2", { id: "cancel-title" }, `Cancel ${id}?`),
              h("p", { id: "cancel-text" }, "A cancelled workflow stops for good: no event, signal or timer moves it again."),
              h("label", { for: "cancel-reason" }, "Reason ", h("span", { class: "muted" }, "(recorded with the cancellation)")), reason,
              h("div", { class: "dialog-actions" },
                h("button", { type: "submit", value: "keep", class: "button subtle", autofocus: true }, "Keep it running"),
                h("button", { type: "submit", value: "cancel", class: "button danger", id: "confirm-cancel" }, "Cancel workflow"),
              ),
            ),
          );
          dialog.addEventListener("close", () => {
            if (dialog.returnValue === "cancel") {
              act("Cancelled", api.post<CancelWorkflowResponseJson>(`${path}/cancel`, { reason: reason.value, expectedRevision: workflow.revision }));
            }
            dialog.remove();
            document.getElementById("cancel-button")?.focus();
          });
          document.body.append(dialog);
          dialog.showModal();
        };
        const act = (done: string, call: Promise<{ workflow?: WorkflowJson; accepted?: boolean; reason?: string }>) => {
          replace(outcome, h("p", { class: "muted" }, "Sending…"));
          call.then(
            (answer) => {
              if (answer.accepted === false) {
                replace(outcome, errorNotice({ code: "NOT_ACCEPTED", reason: answer.reason, message: "The signal was not accepted." }, "Not accepted"));
              } else {
                replace(outcome, h("p", { class: "notice notice-ok", role: "status" }, icon("completed"), ` ${done}: now revision ${answer.workflow?.revision ?? "?"}.`));
              }
              if (answer.workflow) apply(answer.workflow, true);
            },
            (error) => replace(outcome, errorNotice(error, "The server refused")),
          );
        };
        const apply = (next: WorkflowJson, full: boolean) => {
          const revision = Number(next.revision ?? 0);
          if (revision < Number(workflow.revision ?? 0)) return;
          // A step's message has no family (a read's has): keep what the last read showed.
          if (!full) next = { ...next, parent: next.parent ?? workflow.parent, children: next.children ?? workflow.children };
          workflow = next;
          if (full) pendingTask = next.pendingTask;
          draw();
          if (!full && isTaskState(mermaidSource, next.state ?? "")) scheduleRefresh();
          else if (!full) pendingTask = undefined;
          drawTask();
        };
        const draw = () => {
          replace(headFacts,
              statusBadge(workflow.status),
              workflow.paused ? pausedBadge() : [],
              h("span", { class: "chip" }, "state ", h("code", { id: "current-state" }, workflow.state ?? "")),
              h("span", { class: "chip" }, link(`/definitions/${encodeURIComponent(workflow.definition ?? "")}?version=${workflow.version}`, `${workflow.definition} v${workflow.version}`)),
              h("span", { class: "chip" }, "revision ", h("strong", { id: "current-revision" }, workflow.revision ?? "0")),
              // A restarted instance (a start with if_exists RESTART) is in a later run.
              (workflow.run ?? 1) > 1 ? h("span", { class: "chip" }, "run ", h("strong", { id: "current-run" }, String(workflow.run))) : null,
          );
          const progress = workflow.fanOut ? `, ${fanOutSummary(workflow.fanOut)}` : "";
          void graph.highlight(workflow.state ?? "", statusLabel(workflow.status) + progress, OUTCOMES[String(workflow.status)] ?? null);
          replace(facts,
            h("dt", {}, "Status"), h("dd", {}, statusBadge(workflow.status), workflow.paused ? [" ", pausedBadge()] : []),
            workflow.paused
              ? [h("dt", {}, "Paused"), h("dd", { id: "pause-facts" }, "by ", h("code", {}, workflow.pause?.actor ?? ""), " ", timestamp(workflow.pause?.pauseTime), workflow.pause?.reason ? ` — ${workflow.pause.reason}` : "")]
              : [],
            h("dt", {}, "State"), h("dd", {}, h("code", {}, workflow.state ?? "")),
            h("dt", {}, "Revision"), h("dd", {}, workflow.revision ?? "0"),
            h("dt", {}, "Run"), h("dd", { id: "run" }, String(workflow.run ?? 1), " ", h("span", { class: "muted" }, (workflow.run ?? 1) > 1 ? "(restarted: the earlier runs' revisions stay in its history)" : "")),
            h("dt", {}, "Created"), h("dd", {}, timestamp(workflow.createTime)),
            h("dt", {}, "Updated"), h("dd", {}, timestamp(workflow.updateTime)),
            family(workflow),
            startTimer()
              ? [h("dt", {}, "Starts"), h("dd", { id: "start-time" }, timestamp(startTimer()?.dueTime), " ", h("span", { class: "muted" }, "(delayed start: its first step has not run yet)"))]
              : workflow.error
              ? workflow.status === "WORKFLOW_STATUS_CANCELLED"
                ? [h("dt", {}, "Cancelled"), h("dd", {}, workflow.error.message ?? "")]
                : [h("dt", {}, "Error"), h("dd", { class: "error-text" }, workflow.error.message ?? "")]
              : null,
          );
          replace(accepted, h("h3", {}, "Accepted events"), (workflow.acceptedEvents ?? []).length
            ? h("ul", { class: "chips" }, (workflow.acceptedEvents ?? []).map((e) => h("li", { class: "chip" }, h("code", {}, e))))
            : h("p", { class: "empty" }, "None in this state."));
          replace(context, prettyJson(workflow.context));
          drawTimers();
          drawActions();
        };
        // One step as two rows: its summary, with a disclosure button, and below it (hidden
        // until opened) what the step took and how it changed the context.
        const historyEntry = (step: WatchWorkflowResponseJson): HTMLElement[] => {
          const transitions = step.transitions ?? [];
          // A first step starts in the initial state, whether or not it moved on from it.
          const initial = Number(step.revision) === 1 ? transitions[0]?.fromState || step.workflow?.state || "" : null;
          void graph.trace(transitions, initial);
          const revision = String(step.revision ?? "");
          const cancelled = isCancellation(step);
          const detailId = `history-detail-${revision}`;
          const toggle = h("button", { type: "button", class: "disclosure", "aria-expanded": "false", "aria-controls": detailId, "aria-label": `Revision ${revision}: input and context change` }, revision) as HTMLButtonElement;
          const resetButton = h("button", { type: "button", class: "button subtle", "data-reset-revision": revision, onclick: () => repairDialog(path, workflow.revision, {
            kind: "reset",
            title: `Reset ${id} to revision ${revision}?`,
            explain: `It goes back to revision ${revision}'s state and context as one new step: that state's timers are armed anew and its task scheduled anew. What it has open now is cancelled. Work done since (by tasks, outside it) is not undone.`,
            confirm: `Reset to revision ${revision}`,
            body: { toRevision: revision },
          }, repaired) }, `Reset to revision ${revision}…`);
          const detail = h("tr", { class: "history-detail", id: detailId, hidden: "" },
            h("td", { colspan: "5" }, historyDetail(step, cancelled), h("div", { class: "repair-from-here" }, resetButton)));
          toggle.addEventListener("click", () => {
            const open = toggle.getAttribute("aria-expanded") !== "true";
            toggle.setAttribute("aria-expanded", String(open));
            detail.hidden = !open;
          });
          const row = h("tr", { "data-revision": revision, class: "history-row" },
            h("td", { class: "num" }, toggle),
            h("td", {}, cancelled
              ? h("span", { class: "chip cancellation" }, "cancelled")
              : step.event === "restart" ? h("span", { class: "chip" }, `restart: run ${step.workflow?.run ?? ""} begins`)
              : step.event ? h("code", {}, step.event) : h("span", { class: "muted" }, Number(step.revision) === 1 ? "start" : "automatic")),
            h("td", {}, transitions.length
              ? h("ol", { class: "transitions" }, transitions.map((t) => h("li", {}, h("code", {}, t.fromState || "∅"), " → ", h("code", {}, t.toState ?? ""), t.event ? h("span", { class: "muted" }, ` on ${t.event}`) : null)))
              : h("span", { class: "muted" }, "none")),
            h("td", {}, step.actor || h("span", { class: "muted" }, "—")),
            h("td", {}, timestamp(step.workflow?.updateTime)),
          );
          return [row, detail];
        };
        const addHistory = (step: WatchWorkflowResponseJson) => {
          historyRows.prepend(...historyEntry(step));
          while (historyRows.querySelectorAll("tr.history-row").length > rowCap) {
            historyRows.lastElementChild?.remove();
            historyRows.lastElementChild?.remove();
            hiddenBefore = Number(historyRows.lastElementChild?.previousElementSibling?.getAttribute("data-revision") ?? hiddenBefore);
          }
          showEarlier();
        };
        const showEarlier = () => {
          const hidden = hiddenBefore - 1;
          earlier.textContent = hidden > 0 ? `Revisions 1 to ${hidden} are not shown.` : "";
          earlierButton.hidden = hidden <= 0;
        };
        // The revisions just before the oldest shown, read by a watch of their own that
        // is closed once it reaches the oldest shown one.
        const loadEarlier = () => {
          const until = hiddenBefore;
          const after = Math.max(0, until - 1 - HISTORY_SHOWN);
          if (until <= 1) return;
          earlierButton.disabled = true;
          earlierStatus.textContent = "Loading…";
          const steps: WatchWorkflowResponseJson[] = [];
          const done = (error?: unknown) => {
            page.close();
            earlierButton.disabled = false;
            if (error !== undefined) {
              earlierStatus.textContent = "";
              replace(earlierStatus, errorNotice(error, "Earlier revisions could not be read"));
              return;
            }
            for (const step of steps) historyRows.append(...historyEntry(step));
            rowCap += steps.length;
            hiddenBefore = after + 1;
            earlierStatus.textContent = `Loaded revisions ${after + 1} to ${until - 1}.`;
            showEarlier();
          };
          let finished = false;
          const page = api.stream(`${path}/watch?afterRevision=${after}`, {
            event(type, data) {
              if (finished || type !== "step") return;
              const step = data as WatchWorkflowResponseJson;
              const revision = Number(step.revision ?? 0);
              if (revision < until) steps.unshift(step);
              if (revision >= until - 1) {
                finished = true;
                done();
              }
            },
            state(state, error) {
              if (finished) return;
              if (state === "failed" || state === "ended") {
                finished = true;
                done(state === "failed" ? error : undefined);
              }
            },
          });
        };
        earlierButton.addEventListener("click", loadEarlier);
        const scheduleRefresh = () => {
          if (refreshTimer) return;
          refreshTimer = window.setTimeout(() => {
            refreshTimer = 0;
            api.get<GetWorkflowResponseJson>(path).then((fresh) => fresh.workflow && !closed && apply(fresh.workflow, true), () => undefined);
          }, 250);
        };

        draw();
        drawTask();
        const from = Math.max(0, Number(workflow.revision ?? 0) - HISTORY_SHOWN);
        hiddenBefore = from + 1;
        showEarlier();
        stream = api.stream(`${path}/watch?afterRevision=${from}`, {
          event(type, data) {
            if (type !== "step") return;
            const step = data as WatchWorkflowResponseJson;
            addHistory(step);
            if (step.workflow) apply(step.workflow, false);
          },
          state: connection,
        });
        ticker = window.setInterval(() => {
          const now = Date.now();
          for (const el of main.querySelectorAll<HTMLElement>(".countdown[data-due]")) el.textContent = countdown(el.dataset.due, now);
        }, 1000);
        void checkQueue();
        queueCheck = window.setInterval(() => void checkQueue(), QUEUE_CHECK_MS);
        taskPoll = window.setInterval(() => {
          if (!terminal(workflow.status) && isTaskState(mermaidSource, workflow.state ?? "")) scheduleRefresh();
        }, TASK_POLL_MS);
      }).catch((error) => replace(body, errorNotice(error, `Workflow ${id} could not be read`)));

      return () => {
        closed = true;
        stream?.close();
        window.clearInterval(ticker);
        window.clearInterval(taskPoll);
        window.clearInterval(queueCheck);
        window.clearTimeout(refreshTimer);
        connection(null);
      };
    },
  };
}
