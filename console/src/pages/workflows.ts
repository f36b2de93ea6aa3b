import * as api from "../api.js";
import { h, link, onPick, replace } from "../dom.js";
import { ago, errorNotice, longId, number, STATUSES, statusBadge, statusLabel } from "../format.js";
import type { ListDefinitionsResponseJson, ListWorkflowsResponseJson } from "@statewright/client/gen/statewright/v1/workflow_service_pb.js";
import { navigate, type Page } from "../router.js";
import { connection } from "../status.js";

const PAGE_SIZE = 25;

interface Count {
  count: number;
  more: boolean;
}

export function workflowsPage(query: URLSearchParams): Page {
  const definition = query.get("definition") ?? "";
  const status = query.get("status") ?? "";
  const pageToken = query.get("pageToken") ?? "";
  // Tokens of the pages before this one, for "Previous".
  const trail = (query.get("trail") ?? "").split(",").filter(Boolean);
  return {
    title: "Workflows",
    render(main) {
      const count = h("p", { class: "count", id: "workflow-count", role: "status", "aria-live": "polite" }, "Counting…");
      const rows = h("tbody", {});
      const table = h("div", { class: "table-wrap", tabindex: 0, role: "region", "aria-label": "Workflows" },
        h("table", { class: "data", "aria-describedby": "workflow-count" },
          h("thead", {}, h("tr", {}, ["Workflow", "Definition", "State", "Status", "Revision", "Updated"].map((t) => h("th", { scope: "col" }, t)))),
          rows,
        ),
      );
      const problem = h("div", {});
      const pager = h("nav", { class: "pager", "aria-label": "Pages" });
      const definitionSelect = h("select", { id: "filter-definition", name: "definition" }, h("option", { value: "" }, "Any definition"));
      if (definition) definitionSelect.append(h("option", { value: definition, selected: true }, definition));
      const statusSelect = h("select", { id: "filter-status", name: "status" },
        h("option", { value: "" }, "Any status"),
        STATUSES.map((s) => h("option", { value: s, selected: s === status }, statusLabel(s))),
      );
      const filters = h("form", { class: "filters", role: "search", "aria-label": "Filter workflows" },
        h("div", { class: "field" }, h("label", { for: "filter-definition" }, "Definition"), definitionSelect),
        h("div", { class: "field" }, h("label", { for: "filter-status" }, "Status"), statusSelect),
        h("button", { type: "submit", class: "button" }, "Filter"),
      );
      const apply = (event?: Event) => {
        event?.preventDefault();
        const next = new URLSearchParams();
        if (definitionSelect.value) next.set("definition", definitionSelect.value);
        if (statusSelect.value) next.set("status", statusSelect.value);
        navigate(`/workflows${next.size ? `?${next}` : ""}`);
      };
      filters.addEventListener("submit", apply);
      onPick(definitionSelect, apply);
      onPick(statusSelect, apply);
      main.append(
        h("div", { class: "page-head" }, h("h1", {}, "Workflows"), count),
        filters,
        problem,
        table,
        pager,
      );
      api.get<ListDefinitionsResponseJson>("/api/v1/definitions", { pageSize: 1000 }).then((all) => {
        const names = [...new Set((all.definitions ?? []).map((d) => d.definition ?? ""))].sort();
        for (const name of names) if (name !== definition) definitionSelect.append(h("option", { value: name }, name));
      }, () => undefined);

      const here = (extra: Record<string, string>) => {
        const q = new URLSearchParams();
        if (definition) q.set("definition", definition);
        if (status) q.set("status", status);
        for (const [k, v] of Object.entries(extra)) if (v) q.set(k, v);
        return `/workflows?${q}`;
      };
      const drawPager = (next: string) => {
        const previous = trail.length ? here({ pageToken: trail[trail.length - 1] === "-" ? "" : trail[trail.length - 1], trail: trail.slice(0, -1).join(",") }) : null;
        replace(pager,
          previous ? link(previous, "← Previous") : h("span", { class: "muted" }, "← Previous"),
          h("span", { class: "page-number" }, `Page ${trail.length + 1}`),
          next ? link(here({ pageToken: next, trail: [...trail, pageToken || "-"].join(",") }), "Next →") : h("span", { class: "muted" }, "Next →"),
        );
      };
      const drawPage = (page: ListWorkflowsResponseJson) => {
        const items = page.workflows ?? [];
        replace(rows, items.length ? items.map((w) =>
          h("tr", { "data-workflow": w.workflowId ?? "" },
            h("th", { scope: "row" }, longId(w.workflowId ?? "", "workflow id", `/workflows/${encodeURIComponent(w.workflowId ?? "")}`)),
            h("td", {}, link(`/definitions/${encodeURIComponent(w.definition ?? "")}?version=${w.version}`, `${w.definition} v${w.version}`)),
            h("td", {}, h("code", {}, w.state ?? "")),
            h("td", {}, statusBadge(w.status)),
            h("td", { class: "num" }, w.revision ?? "0"),
            h("td", {}, ago(w.updateTime)),
          )) : h("tr", {}, h("td", { colspan: 6, class: "empty" }, "No workflows match.")));
        drawPager(page.nextPageToken ?? "");
      };
      const filtered = definition || status ? " match" : "";
      const stream = api.stream(`/api/v1/workflows:watch?${new URLSearchParams({ pageSize: String(PAGE_SIZE), ...(definition ? { definition } : {}), ...(status ? { status } : {}), ...(pageToken ? { pageToken } : {}) })}`, {
        event(type, data) {
          if (type === "page") drawPage(data as ListWorkflowsResponseJson);
          else if (type === "count") {
            const c = data as Count;
            const n = `${number(c.count)}${c.more ? "+" : ""}`;
            count.textContent = `${n} workflow${c.count === 1 && !c.more ? "" : "s"}${filtered}`;
            count.dataset.count = String(c.count);
          }
        },
        state(state, error) {
          connection(state, error);
          if (state === "failed" && error) replace(problem, errorNotice(error, "Workflows could not be listed"));
          else if (state === "live") problem.replaceChildren();
        },
      });
      return () => stream.close();
    },
  };
}
