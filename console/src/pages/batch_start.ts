// "Apply to all matching" on the workflows list: one operation (cancel, signal, reset,
// retry, migrate, pause, unpause or delete) on every instance the list's definition and
// filter match, as a batch (StartBatchOperation). The dialog first asks for a dry run (how
// many match, and the first of them), and only then offers to start the batch, whose page
// it then opens.
import * as api from "../api.js";
import { h, link, replace } from "../dom.js";
import { errorNotice, number, pairs, parseJson } from "../format.js";
import type { JsonObject } from "@bufbuild/protobuf";
import type { StartBatchOperationRequestJson, StartBatchOperationResponseJson } from "@statewright/client/gen/statewright/v1/batch_service_pb.js";
import { navigate } from "../router.js";

export type OperationKind = "cancel" | "signal" | "reset" | "retry" | "migrate" | "pause" | "unpause" | "delete";

/** Each operation: its name, what it does to each instance, and the role it needs (the
 * role its single RPC needs: StartBatchOperation asks the same of its caller). */
export const OPERATIONS: Record<OperationKind, { label: string; does: string; role: string }> = {
  cancel: { label: "Cancel", does: "Cancels each instance, with the reason below.", role: "client" },
  signal: { label: "Signal", does: "Signals each instance; one busy for the moment is tried again, and one not running or paused fails its item.", role: "client" },
  reset: { label: "Reset", does: "Resets each instance to a revision of its history: the latest one where it entered the state named below, or (none named) the last before it failed.", role: "operator" },
  retry: { label: "Retry", does: "Retries each FAILED instance in the state it failed in; any other is a failure of the batch.", role: "operator" },
  migrate: { label: "Migrate", does: "Moves each instance to another version of its definition.", role: "operator" },
  pause: { label: "Pause", does: "Pauses each instance: nothing steps it until it is unpaused.", role: "operator" },
  unpause: { label: "Unpause", does: "Unpauses each paused instance.", role: "operator" },
  delete: { label: "Delete", does: "Deletes each finished instance and its history (with Force, running and waiting ones too).", role: "admin" },
};
export const OPERATION_KINDS = Object.keys(OPERATIONS) as OperationKind[];

/** What the list shows, as a batch can match it. */
export interface BatchScope {
  definition: string;
  filter: string;
  idPrefix: string;
}

/** The list's status and filter as one AIP-160 filter (the status's short name, as the
 * filter language spells it). */
export function scopeFilter(status: string, filter: string): string {
  const parts: string[] = [];
  if (status) parts.push(`status = ${status.replace(/^WORKFLOW_STATUS_/, "")}`);
  if (filter.trim()) parts.push(status ? `(${filter.trim()})` : filter.trim());
  return parts.join(" AND ");
}

/** An id for the batch, made once per dialog: a confirmation sent twice (a double click,
 * an answer lost on the way) starts one batch, as the server answers the same request
 * with the batch that exists. */
function batchId(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(8));
  return `console-${[...bytes].map((b) => b.toString(16).padStart(2, "0")).join("")}`;
}

const RATE_MAX = 1000;

function field(id: string, label: string, control: HTMLElement, hint?: string): HTMLElement {
  return h("div", { class: "stack field" }, h("label", { for: id }, label, hint ? [" ", h("span", { class: "muted" }, hint)] : null), control);
}

/** Opens the dialog for ``scope``; ``shown`` is how many the list counts ("12", "12+"). */
export function batchDialog(scope: BatchScope, shown: string): void {
  const operation = h("select", { id: "batch-operation", name: "operation" },
    OPERATION_KINDS.map((k) => h("option", { value: k }, OPERATIONS[k].label))) as HTMLSelectElement;
  const does = h("p", { class: "muted", id: "batch-does" });
  const event = h("input", { id: "batch-event", type: "text", autocomplete: "off", spellcheck: "false", maxlength: 128 }) as HTMLInputElement;
  const payload = h("textarea", { id: "batch-payload", rows: 2, spellcheck: "false", class: "code-input", placeholder: "{}" }) as HTMLTextAreaElement;
  const entered = h("input", { id: "batch-entered-state", type: "text", autocomplete: "off", spellcheck: "false", maxlength: 128 }) as HTMLInputElement;
  const toVersion = h("input", { id: "batch-to-version", type: "number", min: "1", step: "1" }) as HTMLInputElement;
  const stateMap = h("textarea", { id: "batch-state-map", rows: 2, spellcheck: "false", class: "code-input", placeholder: "old_state=new_state" }) as HTMLTextAreaElement;
  const sets = h("textarea", { id: "batch-set", rows: 2, spellcheck: "false", class: "code-input", placeholder: "field=context.other + 1" }) as HTMLTextAreaElement;
  const force = h("input", { id: "batch-force", type: "checkbox" }) as HTMLInputElement;
  const reason = h("textarea", { id: "batch-reason", rows: 2, maxlength: 1024, required: true }) as HTMLTextAreaElement;
  const rate = h("input", { id: "batch-rate", type: "number", min: "0", max: String(RATE_MAX), step: "any", placeholder: "50" }) as HTMLInputElement;
  // The fields of each operation that has any; shown only while it is picked.
  const extras: Partial<Record<OperationKind, HTMLElement>> = {
    signal: h("div", { class: "stack", "data-fields": "signal" },
      field("batch-event", "Event", event), field("batch-payload", "Payload", payload, "(JSON object, optional)")),
    reset: h("div", { class: "stack", "data-fields": "reset" },
      field("batch-entered-state", "Entered state", entered, "(optional: empty resets a FAILED instance to before it failed)")),
    migrate: h("div", { class: "stack", "data-fields": "migrate" },
      field("batch-to-version", "To version", toVersion),
      field("batch-state-map", "States", stateMap, "(old=new, one a line)"),
      field("batch-set", "Set fields", sets, "(field=CEL over the old context, one a line)")),
    delete: h("div", { class: "stack check", "data-fields": "delete" },
      h("label", { for: "batch-force" }, force, " Force: delete running and waiting instances too")),
  };
  const scopeText = [
    scope.definition ? ["definition ", h("code", {}, scope.definition)] : "every definition",
    scope.filter ? [", filter ", h("code", {}, scope.filter)] : ", no filter",
    scope.idPrefix ? [", ids starting with ", h("code", {}, scope.idPrefix)] : "",
  ];
  const result = h("div", { "aria-live": "polite", id: "batch-preview" });
  const dryRun = h("button", { type: "button", class: "button", id: "batch-dry-run" }, "Dry run") as HTMLButtonElement;
  const confirm = h("button", { type: "button", class: "button primary", id: "batch-start", disabled: true }, "Start batch") as HTMLButtonElement;
  const dialog = h("dialog", { class: "confirm batch-dialog", "aria-labelledby": "batch-title" },
    h("form", { class: "dialog-form", onsubmit: (e: Event) => e.preventDefault() },
      h("h2", { id: "batch-title" }, `Apply to all ${shown} matching`),
      h("p", { id: "batch-scope" }, "Instances of ", scopeText, ", matched once when the batch starts (one that matches later is not in it)."),
      field("batch-operation", "Operation", operation), does,
      Object.values(extras),
      field("batch-reason", "Reason", reason, "(required: recorded in each instance's history, with you)"),
      field("batch-rate", "Rate", rate, `(instances a second, up to ${RATE_MAX}; empty: 50)`),
      result,
      h("div", { class: "dialog-actions" },
        // No submit button: Enter in a field must not close the dialog (Escape does).
        h("button", { type: "button", class: "button subtle", id: "batch-close", onclick: () => dialog.close() }, "Close"),
        dryRun,
        confirm,
      ),
    ),
  ) as HTMLDialogElement;

  const id = batchId();
  const request = (): { ok: true; body: StartBatchOperationRequestJson } | { ok: false; error: unknown } => {
    const kind = operation.value as OperationKind;
    const body: StartBatchOperationRequestJson = { definition: scope.definition, filter: scope.filter, reason: reason.value.trim() };
    if (scope.idPrefix) body.idPrefix = scope.idPrefix;
    if (!body.reason) return { ok: false, error: { code: "REASON_REQUIRED", reason: "NOT_SENT", message: "Give a reason: each instance's history records it." } };
    const perSecond = rate.value.trim() === "" ? 0 : Number(rate.value);
    if (!Number.isFinite(perSecond) || perSecond < 0 || perSecond > RATE_MAX) {
      return { ok: false, error: { code: "INVALID_RATE", reason: "NOT_SENT", message: `The rate is a number of instances a second, from 0 to ${RATE_MAX}.` } };
    }
    body.rate = perSecond;
    if (kind === "signal") {
      const parsed = parseJson(payload.value, "payload");
      if (!parsed.ok) return parsed;
      body.signal = { event: event.value.trim(), payload: parsed.value as JsonObject };
    } else if (kind === "reset") body.reset = entered.value.trim() ? { enteredState: entered.value.trim() } : {};
    else if (kind === "migrate") body.migrate = { toVersion: Number(toVersion.value), stateMap: pairs(stateMap.value), set: pairs(sets.value) };
    else if (kind === "delete") body.delete = { force: force.checked };
    else body[kind] = {};
    return { ok: true, body };
  };

  // What is changed after a dry run needs another (the operation decides the role asked
  // for, the filter what matches): the confirmation starts only what the dry run showed.
  // The reason and the rate change neither.
  const stale = () => {
    confirm.disabled = true;
    replace(result);
  };
  const pick = () => {
    const kind = operation.value as OperationKind;
    does.textContent = `${OPERATIONS[kind].does} Needs the ${OPERATIONS[kind].role} role.`;
    for (const [k, element] of Object.entries(extras)) if (element) element.hidden = k !== kind;
    stale();
  };
  operation.addEventListener("change", pick);
  dialog.querySelector("form")?.addEventListener("input", (e) => {
    if (e.target !== operation && e.target !== reason && e.target !== rate) stale();
  });

  const refused = (error: unknown, title: string) => {
    const denied = (error as { code?: string }).code === "PERMISSION_DENIED";
    const kind = operation.value as OperationKind;
    replace(result, errorNotice(error, title),
      denied ? h("p", { class: "muted", id: "batch-denied" }, `A batch ${OPERATIONS[kind].label.toLowerCase()} needs the ${OPERATIONS[kind].role} role${scope.definition ? ` on ${scope.definition}` : " on every definition"}; your token does not have it.`) : null);
  };

  dryRun.addEventListener("click", () => {
    const asked = request();
    if (!asked.ok) return void refused(asked.error, "Not sent");
    confirm.disabled = true;
    dryRun.disabled = true;
    replace(result, h("p", { class: "muted" }, "Asking the server what would match (a dry run: nothing is saved)…"));
    api.post<StartBatchOperationResponseJson>("/api/v1/batches", { ...asked.body, dryRun: true }).then(
      (answer) => {
        const matched = Number(answer.batch?.matched ?? 0);
        const sample = (answer.sample ?? []).map((n) => n.replace(/^workflows\//, ""));
        replace(result,
          h("p", { class: "notice notice-ok", role: "status", id: "batch-matched", "data-matched": String(matched) },
            matched ? `${number(matched)} instance${matched === 1 ? "" : "s"} match now.` : "No instance matches: there is nothing to start."),
          sample.length ? [
            h("h3", {}, matched > sample.length ? `The first ${sample.length}, in the order the batch takes them` : "Matched instances"),
            h("ul", { class: "chips batch-sample", id: "batch-sample" }, sample.map((w) => h("li", { class: "chip" }, link(`/workflows/${encodeURIComponent(w)}`, h("code", {}, w))))),
          ] : null,
        );
        confirm.disabled = matched === 0;
        confirm.textContent = `Start batch on ${number(matched)}`;
      },
      (error) => refused(error, "The server refused"),
    ).finally(() => {
      dryRun.disabled = false;
    });
  });

  confirm.addEventListener("click", () => {
    const asked = request();
    if (!asked.ok) return void refused(asked.error, "Not sent");
    confirm.disabled = true;
    api.post<StartBatchOperationResponseJson>("/api/v1/batches", { ...asked.body, batchId: id, dryRun: false }).then(
      (answer) => {
        dialog.close();
        const name = answer.batch?.name ?? `batches/${id}`;
        navigate(`/batches/${encodeURIComponent(name.replace(/^batches\//, ""))}`);
      },
      (error) => {
        refused(error, "The batch was not started");
        confirm.disabled = false;
      },
    );
  });

  dialog.addEventListener("close", () => dialog.remove());
  document.body.append(dialog);
  pick();
  dialog.showModal();
  operation.focus();
}
