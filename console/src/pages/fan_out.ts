// A fan-out's card on the workflow page: its progress (total, open, completed, given up)
// and its items, one page of ListTasks at a time. The numbers follow every step; the items
// are read when the card opens and when someone asks (a step an item would otherwise
// reload the table hundreds of times in a large fan-out).
import * as api from "../api.js";
import { h, replace } from "../dom.js";
import { errorNotice, prettyJson } from "../format.js";
import type { FanOutProgressJson } from "@statewright/client/gen/statewright/v1/workflow_pb.js";
import type { ListTasksResponseJson } from "@statewright/client/gen/statewright/v1/task_service_pb.js";

const ITEMS_PAGE = 25;

/** "37 of 120 open": the progress a graph's caption and the card show. */
export function fanOutSummary(fan: FanOutProgressJson): string {
  const given = fan.givenUp ? `, ${fan.givenUp} given up` : "";
  return `${fan.completed ?? 0} of ${fan.total ?? 0} items completed${given}, ${fan.open ?? 0} open`;
}

export class FanOutCard {
  readonly element: HTMLElement;
  private readonly facts = h("dl", { class: "facts" });
  private readonly bar = h("progress", { max: "1", value: "0", "aria-label": "Items ended" });
  private readonly rows = h("tbody", {});
  private readonly status = h("span", { class: "muted", role: "status" });
  private readonly next = h("button", { type: "button", class: "secondary" }, "Next page");
  private readonly first = h("button", { type: "button", class: "secondary" }, "First page");
  private token = "";
  private nextToken = "";

  constructor(private readonly workflowName: string) {
    this.element = h("div", { class: "fan-out", "data-fan-out": workflowName },
      this.facts,
      this.bar,
      h("div", { class: "table-wrap", tabindex: 0, role: "region", "aria-label": "Items" },
        h("table", { class: "data items" },
          h("thead", {}, h("tr", {}, ["Item", "Status", "Attempt", "Result or error"].map((t) => h("th", { scope: "col" }, t)))),
          this.rows,
        ),
      ),
      h("div", { class: "pager" }, this.first, this.next, this.status),
    );
    this.next.addEventListener("click", () => void this.load(this.nextToken));
    this.first.addEventListener("click", () => void this.load(""));
  }

  /** The progress as of the latest step. */
  show(fan: FanOutProgressJson): void {
    const total = fan.total ?? 0;
    const ended = (fan.completed ?? 0) + (fan.givenUp ?? 0);
    this.bar.setAttribute("max", String(Math.max(1, total)));
    this.bar.setAttribute("value", String(ended));
    replace(this.facts,
      h("dt", {}, "Items"), h("dd", { "data-items-total": String(total) }, String(total)),
      h("dt", {}, "Open"), h("dd", { "data-items-open": String(fan.open ?? 0) }, String(fan.open ?? 0)),
      h("dt", {}, "Completed"), h("dd", { "data-items-completed": String(fan.completed ?? 0) }, String(fan.completed ?? 0)),
      h("dt", {}, "Given up"), h("dd", { "data-items-given-up": String(fan.givenUp ?? 0) }, String(fan.givenUp ?? 0)),
    );
  }

  /** One page of the items (``token``: where it starts; empty: the first). */
  async load(token: string): Promise<void> {
    this.status.textContent = "Loading items…";
    let page: ListTasksResponseJson;
    try {
      page = await api.get<ListTasksResponseJson>("/api/v1/tasks", { workflow: this.workflowName, pageSize: ITEMS_PAGE, pageToken: token });
    } catch (error) {
      replace(this.status, errorNotice(error, "Could not list the items"));
      return;
    }
    this.token = token;
    this.nextToken = page.nextPageToken ?? "";
    const items = (page.tasks ?? []).filter((t) => t.itemIndex !== undefined);
    replace(this.rows, ...items.map((t) => h("tr", { "data-item": String(t.itemIndex) },
      h("td", {}, String(t.itemIndex)),
      h("td", {}, (t.status ?? "").replace("TASK_STATUS_", "").toLowerCase()),
      h("td", {}, String(t.attempt ?? 0)),
      h("td", {}, t.result ? prettyJson(t.result) : t.lastError ? h("code", {}, `${t.lastError.type ?? ""} ${t.lastError.message ?? ""}`) : ""),
    )));
    this.next.toggleAttribute("disabled", !this.nextToken);
    this.first.toggleAttribute("disabled", !this.token);
    this.status.textContent = items.length ? `${items.length} item(s) on this page` : "No items.";
  }
}
