// The batches (ListBatchOperations, newest first) and one batch's progress
// (GetBatchOperation, read every second while it runs), with its failures and a Cancel.
import * as api from "../api.js";
import { h, link, onPick, replace } from "../dom.js";
import { ago, errorNotice, icon, number, prettyJson, timestamp, toneBadge } from "../format.js";
import type {
  BatchItemFailureJson,
  BatchOperationJson,
  BatchStateJson,
  CancelBatchOperationResponseJson,
  GetBatchOperationResponseJson,
  ListBatchOperationsResponseJson,
} from "@statewright/client/gen/statewright/v1/batch_service_pb.js";
import { navigate, type Page } from "../router.js";
import { connection } from "../status.js";
import { OPERATION_KINDS, OPERATIONS, type OperationKind } from "./batch_start.js";

const PAGE_SIZE = 25;
const FAILURES_PAGE_SIZE = 25;
// How often a running batch is read again: its progress moves at its rate, up to 1000 a
// second, so once a second shows it moving without asking much of the server.
const POLL_MS = 1000;
// The list is read again this often while a batch on it runs, and this often otherwise
// (a batch started elsewhere appears).
const LIST_POLL_MS = 2000;
const LIST_IDLE_MS = 10_000;

const STATES: Record<string, [string, string]> = {
  BATCH_STATE_RUNNING: ["running", "Running"],
  BATCH_STATE_COMPLETED: ["completed", "Completed"],
  BATCH_STATE_CANCELLED: ["cancelled", "Cancelled"],
};

function stateBadge(state: BatchStateJson | undefined): HTMLElement {
  const [tone, label] = STATES[state ?? ""] ?? ["unknown", "Unknown"];
  return toneBadge(tone, label);
}

export function batchId(batch: BatchOperationJson): string {
  return (batch.name ?? "").replace(/^batches\//, "");
}

function operationOf(batch: BatchOperationJson): OperationKind | null {
  return OPERATION_KINDS.find((k) => batch[k] !== undefined) ?? null;
}

/** The operation in a few words: "Signal approve", "Migrate to v3", "Delete (force)". */
function operationText(batch: BatchOperationJson): (Node | string)[] {
  const kind = operationOf(batch);
  if (kind === null) return ["—"];
  const label = OPERATIONS[kind].label;
  if (kind === "signal") return [label, " ", h("code", {}, batch.signal?.event ?? "")];
  if (kind === "reset") return batch.reset?.enteredState ? [label, " to entering ", h("code", {}, batch.reset.enteredState)] : [label, " to before it failed"];
  if (kind === "migrate") return [label, ` to v${batch.migrate?.toVersion ?? "?"}`];
  if (kind === "delete") return [label, batch.delete?.force ? " (force)" : ""];
  return [label];
}

function scopeText(batch: BatchOperationJson): (Node | string)[] {
  const out: (Node | string)[] = [batch.definition ? h("code", {}, batch.definition) : h("span", { class: "muted" }, "every definition")];
  if (batch.filter) out.push(" · ", h("code", {}, batch.filter));
  if (batch.idPrefix) out.push(" · ids starting with ", h("code", {}, batch.idPrefix));
  return out;
}

function counts(batch: BatchOperationJson): { matched: number; done: number; failed: number } {
  return { matched: Number(batch.matched ?? 0), done: Number(batch.done ?? 0), failed: Number(batch.failed ?? 0) };
}

/** Done and failed as two lengths of one bar, and in words for whoever does not see it. */
function progressBar(batch: BatchOperationJson, label: string): HTMLElement {
  const { matched, done, failed } = counts(batch);
  const tried = done + failed;
  const share = (n: number) => `${matched ? Math.min(100, (100 * n) / matched) : 0}%`;
  const doneBar = h("span", { class: "bar-done" });
  const failedBar = h("span", { class: "bar-failed" });
  doneBar.style.width = share(done);
  failedBar.style.width = share(failed);
  return h("div", {
    class: "batch-bar", role: "progressbar", "aria-label": label,
    "aria-valuemin": 0, "aria-valuemax": matched, "aria-valuenow": tried,
    "aria-valuetext": `${number(tried)} of ${number(matched)} tried: ${number(done)} done, ${number(failed)} failed`,
  }, doneBar, failedBar);
}

function progressWords(batch: BatchOperationJson): string {
  const { matched, done, failed } = counts(batch);
  return `${number(done + failed)} of ${number(matched)} · ${number(done)} done · ${number(failed)} failed`;
}

export function batchesPage(query: URLSearchParams): Page {
  const state = query.get("state") ?? "";
  return {
    title: "Batches",
    render(main) {
      const stateSelect = h("select", { id: "batch-state", name: "state" },
        h("option", { value: "" }, "Any state"),
        Object.entries(STATES).map(([value, [, label]]) => h("option", { value, selected: value === state }, label)),
      ) as HTMLSelectElement;
      const filters = h("form", { class: "filters", role: "search", "aria-label": "Filter batches" },
        h("div", { class: "field" }, h("label", { for: "batch-state" }, "State"), stateSelect),
        h("button", { type: "submit", class: "button" }, "Filter"),
      );
      const apply = (event?: Event) => {
        event?.preventDefault();
        navigate(`/batches${stateSelect.value ? `?state=${stateSelect.value}` : ""}`);
      };
      filters.addEventListener("submit", apply);
      onPick(stateSelect, apply);
      const problem = h("div", {});
      const rows = h("tbody", {});
      const pager = h("nav", { class: "pager", "aria-label": "Pages" });
      main.append(
        h("div", { class: "page-head" }, h("h1", {}, "Batches"),
          h("p", { class: "lede" }, "Operations applied to every instance a filter matched, newest first. Start one from the ", link("/workflows", "workflows list"), "'s “Apply to all matching”.")),
        filters,
        problem,
        h("div", { class: "table-wrap", tabindex: 0, role: "region", "aria-label": "Batches" },
          h("table", { class: "data", id: "batches" },
            h("thead", {}, h("tr", {}, ["Batch", "Operation", "Instances of", "State", "Progress", "Reason", "Actor", "Started"].map((t) => h("th", { scope: "col" }, t)))),
            rows,
          ),
        ),
        pager,
      );
      // The page tokens of the pages before this one (the first page's is ""): in the page,
      // not the URL, since a batch list is looked at, not shared.
      const trail: string[] = [];
      let token = "";
      let timer = 0;
      let closed = false;
      const draw = (page: ListBatchOperationsResponseJson) => {
        const batches = page.batches ?? [];
        replace(rows, batches.length ? batches.map((b) => {
          const id = batchId(b);
          return h("tr", { "data-batch": id, "data-state": b.state ?? "" },
            h("th", { scope: "row" }, link(`/batches/${encodeURIComponent(id)}`, h("code", {}, id))),
            h("td", {}, operationText(b)),
            h("td", { class: "wrap" }, scopeText(b)),
            h("td", {}, stateBadge(b.state)),
            h("td", {}, progressBar(b, `Batch ${id}`), h("span", { class: "muted small" }, progressWords(b))),
            h("td", { class: "wrap" }, b.reason ?? ""),
            h("td", {}, b.actor || h("span", { class: "muted" }, "—")),
            h("td", {}, ago(b.createTime)),
          );
        }) : h("tr", {}, h("td", { colspan: 8, class: "empty" }, state ? "No batch is in this state." : "No batch has been started.")));
        const next = page.nextPageToken ?? "";
        const button = (text: string, go: () => void) => h("button", { type: "button", class: "button subtle", onclick: go }, text);
        replace(pager,
          trail.length ? button("← Previous", () => show(trail.pop() ?? "")) : h("span", { class: "muted", "aria-disabled": "true" }, "← Previous"),
          h("span", { class: "page-number" }, `Page ${trail.length + 1}`),
          next ? button("Next →", () => {
            trail.push(token);
            show(next);
          }) : h("span", { class: "muted", "aria-disabled": "true" }, "Next →"),
        );
        return batches.some((b) => b.state === "BATCH_STATE_RUNNING");
      };
      const read = () => {
        window.clearTimeout(timer);
        api.get<ListBatchOperationsResponseJson>("/api/v1/batches", { pageSize: PAGE_SIZE, pageToken: token, state }).then(
          (page) => {
            if (closed) return;
            problem.replaceChildren();
            const running = draw(page);
            timer = window.setTimeout(read, running ? LIST_POLL_MS : LIST_IDLE_MS);
          },
          (error) => {
            if (!closed) replace(problem, errorNotice(error, "Batches could not be listed"));
          },
        );
      };
      const show = (pageToken: string) => {
        token = pageToken;
        read();
      };
      show("");
      return () => {
        closed = true;
        window.clearTimeout(timer);
      };
    },
  };
}

function failureRow(f: BatchItemFailureJson): HTMLElement {
  const id = (f.workflow ?? "").replace(/^workflows\//, "");
  return h("tr", { "data-failure": id },
    h("th", { scope: "row" }, link(`/workflows/${encodeURIComponent(id)}`, h("code", {}, id))),
    h("td", {}, h("code", {}, f.code ?? "")),
    h("td", {}, f.reason ? h("code", {}, f.reason) : h("span", { class: "muted" }, "—")),
    h("td", { class: "wrap" }, f.message ?? ""),
    h("td", {}, timestamp(f.time)),
  );
}

/** What the operation carries besides its name: a signal's payload, a migration's maps. */
function operationDetail(batch: BatchOperationJson): HTMLElement | null {
  if (batch.signal?.payload && Object.keys(batch.signal.payload).length) return h("details", {}, h("summary", {}, "Payload"), prettyJson(batch.signal.payload));
  const m = batch.migrate;
  if (m && (Object.keys(m.stateMap ?? {}).length || Object.keys(m.set ?? {}).length)) return h("details", {}, h("summary", {}, "States and fields"), prettyJson({ stateMap: m.stateMap ?? {}, set: m.set ?? {} }));
  return null;
}

export function batchPage(id: string): Page {
  return {
    title: `Batch ${id}`,
    render(main) {
      const path = `/api/v1/batches/${encodeURIComponent(id)}`;
      const head = h("div", { class: "head-facts" });
      const facts = h("dl", { class: "facts", id: "batch-facts" });
      const bar = h("div", {});
      const words = h("p", { class: "batch-counts", id: "batch-counts", role: "status", "aria-live": "polite" });
      const outcome = h("div", { "aria-live": "assertive" });
      const cancelButton = h("button", { type: "button", class: "button danger", id: "batch-cancel", hidden: true, onclick: () => confirmCancel() }, "Cancel batch…") as HTMLButtonElement;
      const failureRows = h("tbody", {});
      const failurePager = h("nav", { class: "pager", "aria-label": "Pages of failures" });
      const body = h("div", { "aria-busy": "true" }, h("p", { class: "muted" }, "Loading…"));
      main.append(
        h("nav", { class: "crumbs", "aria-label": "Breadcrumb" }, h("ol", {}, h("li", {}, link("/batches", "Batches")), h("li", { "aria-current": "page", class: "crumb-id", title: id }, id))),
        body,
      );
      let closed = false;
      let timer = 0;
      const trail: string[] = [];
      let failuresToken = "";

      const draw = (answer: GetBatchOperationResponseJson) => {
        const batch = answer.batch ?? {};
        const running = batch.state === "BATCH_STATE_RUNNING";
        replace(head, stateBadge(batch.state), h("span", { class: "chip" }, operationText(batch)));
        head.dataset.state = batch.state ?? "";
        replace(facts,
          h("dt", {}, "Operation"), h("dd", { id: "batch-operation-text" }, operationText(batch), operationDetail(batch)),
          h("dt", {}, "Instances of"), h("dd", {}, scopeText(batch)),
          h("dt", {}, "Reason"), h("dd", { id: "batch-reason-text" }, batch.reason ?? ""),
          h("dt", {}, "Started by"), h("dd", {}, batch.actor || h("span", { class: "muted" }, "—")),
          h("dt", {}, "Rate"), h("dd", {}, `${number(Number(batch.rate ?? 0))} a second`),
          h("dt", {}, "Started"), h("dd", {}, timestamp(batch.createTime)),
          h("dt", {}, "Last progress"), h("dd", {}, timestamp(batch.updateTime)),
          batch.endTime ? [h("dt", {}, batch.state === "BATCH_STATE_CANCELLED" ? "Cancelled" : "Ended"), h("dd", {}, timestamp(batch.endTime))] : null,
          batch.cancelReason ? [h("dt", {}, "Cancellation"), h("dd", { id: "batch-cancel-reason" }, batch.cancelReason)] : null,
        );
        replace(bar, progressBar(batch, `Progress of batch ${id}`));
        const { matched, done, failed } = counts(batch);
        words.textContent = progressWords(batch);
        Object.assign(words.dataset, { matched: String(matched), done: String(done), failed: String(failed) });
        cancelButton.hidden = !running;
        const failures = answer.failures ?? [];
        replace(failureRows, failures.length ? failures.map(failureRow)
          : h("tr", {}, h("td", { colspan: 5, class: "empty" }, failed ? "No more failures." : "No instance has failed.")));
        const next = answer.nextFailuresPageToken ?? "";
        const button = (text: string, go: () => void) => h("button", { type: "button", class: "button subtle", onclick: go }, text);
        replace(failurePager,
          trail.length ? button("← Previous", () => showFailures(trail.pop() ?? "")) : null,
          trail.length || next ? h("span", { class: "page-number" }, `Page ${trail.length + 1}`) : null,
          next ? button("Next →", () => {
            trail.push(failuresToken);
            showFailures(next);
          }) : null,
        );
        connection(running ? "live" : "ended");
        return running;
      };

      let first = true;
      // Read again every second while the batch runs; its last answer stays once it ends.
      const read = () => {
        window.clearTimeout(timer);
        api.get<GetBatchOperationResponseJson>(path, { failuresPageSize: FAILURES_PAGE_SIZE, failuresPageToken: failuresToken }).then(
          (answer) => {
            if (closed) return;
            if (first) layout();
            const running = draw(answer);
            if (running) timer = window.setTimeout(read, POLL_MS);
          },
          (error) => {
            if (closed) return;
            if (first) return void replace(body, errorNotice(error, `Batch ${id} could not be read`));
            // A missed read while it runs (a restart, a dropped connection): say so, try again.
            connection("reconnecting", error);
            timer = window.setTimeout(read, POLL_MS * 3);
          },
        );
      };
      const showFailures = (token: string) => {
        failuresToken = token;
        read();
      };
      const layout = () => {
        first = false;
        body.removeAttribute("aria-busy");
        replace(body,
          h("div", { class: "page-head" }, h("h1", { class: "id-heading" }, h("code", {}, id)), head),
          h("div", { class: "grid two" },
            h("section", { class: "card", "aria-labelledby": "progress-title" },
              h("h2", { id: "progress-title" }, "Progress"), bar, words, outcome, h("div", {}, cancelButton)),
            h("section", { class: "card", "aria-labelledby": "batch-details-title" }, h("h2", { id: "batch-details-title" }, "Batch"), facts),
            h("section", { class: "card span-2", "aria-labelledby": "failures-title" },
              h("h2", { id: "failures-title" }, "Failures"),
              h("p", { class: "muted" }, "Instances the operation could not be applied to, by workflow id, with the server's code, reason and message. The others are left as they were."),
              h("div", { class: "table-wrap", tabindex: 0, role: "region", "aria-label": "Failures" },
                h("table", { class: "data", id: "batch-failures" },
                  h("thead", {}, h("tr", {}, ["Workflow", "Code", "Reason", "Message", "Time"].map((t) => h("th", { scope: "col" }, t)))),
                  failureRows,
                ),
              ),
              failurePager,
            ),
          ),
        );
      };

      const confirmCancel = () => {
        const reason = h("textarea", { id: "batch-cancel-reason-input", rows: 2, maxlength: 1024, required: true }) as HTMLTextAreaElement;
        const problem = h("div", { "aria-live": "polite" });
        const dialog = h("dialog", { class: "confirm", "aria-labelledby": "batch-cancel-title", "aria-describedby": "batch-cancel-text" },
          h("form", { class: "dialog-form", onsubmit: (e: Event) => e.preventDefault() },
            h("h2", { id: "batch-cancel-title" }, `Cancel batch ${id}?`),
            h("p", { id: "batch-cancel-text" }, "No instance is started on after it; the operations already applied stay applied."),
            h("label", { for: "batch-cancel-reason-input" }, "Reason ", h("span", { class: "muted" }, "(required)")), reason,
            problem,
            h("div", { class: "dialog-actions" },
              h("button", { type: "button", class: "button subtle", onclick: () => dialog.close() }, "Keep it running"),
              h("button", { type: "button", class: "button danger", id: "confirm-batch-cancel", onclick: () => {
                if (!reason.value.trim()) return void replace(problem, errorNotice({ code: "REASON_REQUIRED", reason: "NOT_SENT", message: "Give a reason for the cancellation." }, "Not sent"));
                dialog.close();
                api.post<CancelBatchOperationResponseJson>(`${path}:cancel`, { reason: reason.value.trim() }).then(
                  () => {
                    replace(outcome, h("p", { class: "notice notice-ok", role: "status", id: "batch-cancelled" }, icon("completed"), " Cancelled: no instance is started on from now."));
                    read();
                  },
                  (error) => replace(outcome, errorNotice(error, "The cancellation was refused")),
                );
              } }, "Cancel batch"),
            ),
          ),
        ) as HTMLDialogElement;
        dialog.addEventListener("close", () => {
          dialog.remove();
          if (!cancelButton.hidden) cancelButton.focus();
        });
        document.body.append(dialog);
        dialog.showModal();
        reason.focus();
      };

      read();
      return () => {
        closed = true;
        window.clearTimeout(timer);
        connection(null);
      };
    },
  };
}
