import * as api from "../api.js";
import { h, link, onPick, replace } from "../dom.js";
import { ago, errorNotice, longId, number, pausedBadge, STATUSES, statusBadge, statusLabel } from "../format.js";
import type { CountWorkflowsResponseJson, ListDefinitionsResponseJson, ListWorkflowsResponseJson } from "@statewright/client/gen/statewright/v1/workflow_service_pb.js";
import { navigate, type Page } from "../router.js";
import { connection } from "../status.js";
import { batchDialog, scopeFilter } from "./batch_start.js";

const PAGE_SIZE = 25;
// ListWorkflows' orders, as the sort control names them; the first is the default, which
// the URL leaves out.
const ORDERS: [string, string][] = [
  ["create_time desc", "Newest first"],
  ["create_time", "Oldest first"],
  ["update_time desc", "Recently updated"],
  ["update_time", "Least recently updated"],
  ["status, update_time desc", "By status, recently updated first"],
  ["definition, create_time desc", "By definition, newest first"],
];
const DEFAULT_ORDER = ORDERS[0][0];
// The fields every filter may name; the definitions' search fields are added to them.
const FILTER_FIELDS = ["definition", "version", "state", "status", "create_time", "update_time", "parent"];

/** What a page of the list remembers in its history entry: the page tokens of the pages
 * before it (the first page's is ""), so that the URL holds only the current page's token
 * however far one pages, and "Previous" and the browser's Back both go back. */
interface Trail {
  trail: string[];
}

function trailOf(state: unknown, pageToken: string): string[] {
  const found = (state as Partial<Trail> | null)?.trail;
  if (pageToken && Array.isArray(found) && found.every((t) => typeof t === "string")) return found;
  return [];
}

interface Count {
  count: number;
  more: boolean;
}

export function workflowsPage(query: URLSearchParams): Page {
  const definition = query.get("definition") ?? "";
  const status = query.get("status") ?? "";
  const idPrefix = query.get("idPrefix") ?? "";
  const filterText = query.get("filter") ?? "";
  const orderBy = query.get("orderBy") || DEFAULT_ORDER;
  const pageToken = query.get("pageToken") ?? "";
  // A page size of the URL's own (none: PAGE_SIZE), kept across pages.
  const sized = Math.min(Math.max(Math.trunc(Number(query.get("pageSize"))) || 0, 0), 1000);
  const trail = trailOf(history.state, pageToken);
  return {
    title: "Workflows",
    render(main) {
      const count = h("p", { class: "count", id: "workflow-count", role: "status", "aria-live": "polite" }, "Counting…");
      const rows = h("tbody", {});
      const table = h("div", { class: "table-wrap", tabindex: 0, role: "region", "aria-label": "Workflows" },
        h("table", { class: "data", "aria-describedby": "workflow-count" },
          h("thead", {}, h("tr", {}, ["Workflow", "Definition", "State", "Status", "Revision", "Started", "Updated"].map((t) => h("th", { scope: "col" }, t)))),
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
      const prefixInput = h("input", {
        id: "filter-prefix", name: "idPrefix", type: "search", value: idPrefix, placeholder: "order-2026",
        autocomplete: "off", spellcheck: "false", maxlength: 128,
      });
      // An AIP-160 filter, completed word by word: the list offers the text typed so far
      // with its last word finished as each field name that begins with it.
      const fieldList = h("datalist", { id: "filter-fields" });
      const filterInput = h("input", {
        id: "filter-query", name: "filter", type: "search", value: filterText, list: "filter-fields",
        placeholder: 'status = WAITING AND search.customer = "c-42"',
        autocomplete: "off", spellcheck: "false", maxlength: 2000, class: "wide",
      });
      const fieldNames = [...FILTER_FIELDS];
      const complete = () => {
        const text = filterInput.value;
        const at = text.search(/[A-Za-z_.]*$/);
        const word = text.slice(at);
        const before = text.slice(0, at);
        replace(fieldList, fieldNames.filter((f) => word && f.startsWith(word) && f !== word)
          .slice(0, 20).map((f) => h("option", { value: before + f })));
      };
      filterInput.addEventListener("input", complete);
      const orderSelect = h("select", { id: "sort-order", name: "orderBy" },
        // An order the URL names that the control does not (any order_by the API takes,
        // several keys too) is offered as it is spelled, so that it shows and stays.
        [...ORDERS, ...(ORDERS.some(([value]) => value === orderBy) ? [] : [[orderBy, orderBy]])]
          .map(([value, label]) => h("option", { value, selected: value === orderBy }, label)),
      );
      const filters = h("form", { class: "filters", role: "search", "aria-label": "Filter workflows" },
        h("div", { class: "field" }, h("label", { for: "filter-prefix" }, "Id starts with"), prefixInput),
        h("div", { class: "field" }, h("label", { for: "filter-definition" }, "Definition"), definitionSelect),
        h("div", { class: "field" }, h("label", { for: "filter-status" }, "Status"), statusSelect),
        h("div", { class: "field" }, h("label", { for: "sort-order" }, "Sort"), orderSelect),
        h("div", { class: "field wide" }, h("label", { for: "filter-query" }, "Filter"), filterInput, fieldList),
        h("button", { type: "submit", class: "button" }, "Filter"),
      );
      const apply = (event?: Event) => {
        event?.preventDefault();
        const next = new URLSearchParams();
        const prefix = prefixInput.value.trim();
        if (prefix) next.set("idPrefix", prefix);
        const typed = filterInput.value.trim();
        if (typed) next.set("filter", typed);
        if (definitionSelect.value) next.set("definition", definitionSelect.value);
        if (statusSelect.value) next.set("status", statusSelect.value);
        if (orderSelect.value !== DEFAULT_ORDER) next.set("orderBy", orderSelect.value);
        navigate(`/workflows${next.size ? `?${next}` : ""}`);
      };
      filters.addEventListener("submit", apply);
      onPick(definitionSelect, apply);
      onPick(statusSelect, apply);
      onPick(orderSelect, apply);
      const byStatus = h("p", { class: "count muted", id: "workflow-status-counts" });
      // One operation on every instance the list matches, as a batch: by definition, id
      // prefix and filter, the status joining the filter.
      const scope = { definition, filter: scopeFilter(status, filterText), idPrefix };
      let shown = "";
      const batchButton = h("button", {
        // Offered once the list's count is known (it names the count).
        type: "button", class: "button", id: "batch-apply", disabled: true,
        onclick: () => batchDialog(scope, shown),
      }, "Apply to all matching…") as HTMLButtonElement;
      const batchHead = h("div", { class: "head-actions" }, batchButton);
      main.append(
        h("div", { class: "page-head" }, h("h1", {}, "Workflows"), count, batchHead),
        filters,
        byStatus,
        problem,
        table,
        pager,
      );
      api.get<ListDefinitionsResponseJson>("/api/v1/definitions", { pageSize: 1000 }).then((all) => {
        const names = [...new Set((all.definitions ?? []).map((d) => d.definition ?? ""))].sort();
        for (const name of names) if (name !== definition) definitionSelect.append(h("option", { value: name }, name));
        const searched = (all.definitions ?? []).flatMap((d) => (d.searchFields ?? []).map((f) => `search.${f.name ?? ""}`));
        fieldNames.push(...[...new Set(searched)].sort());
      }, () => undefined);
      // How many the filter matches in each status (counted once, when the page opens).
      api.get<CountWorkflowsResponseJson>("/api/v1/workflows:count", filterText ? { filter: filterText } : {}).then((counted) => {
        const parts = (counted.byStatus ?? []).map((c) => `${statusLabel(c.status ?? "")}: ${number(Number(c.count ?? 0))}`);
        byStatus.textContent = parts.length ? parts.join(" · ") : "";
      }, () => undefined);

      // The listing's URL: its filters and order, and the one page token of the page shown.
      const here = (token: string) => {
        const q = new URLSearchParams();
        if (idPrefix) q.set("idPrefix", idPrefix);
        if (filterText) q.set("filter", filterText);
        if (definition) q.set("definition", definition);
        if (status) q.set("status", status);
        if (orderBy !== DEFAULT_ORDER) q.set("orderBy", orderBy);
        if (sized) q.set("pageSize", String(sized));
        if (token) q.set("pageToken", token);
        return `/workflows${q.size ? `?${q}` : ""}`;
      };
      // A pager link: a plain link (it opens in a new tab, with no way back there), which
      // followed here carries the trail in its history entry.
      const pageLink = (token: string, goes: string[], text: string, rel: string) => {
        const a = link(here(token), text);
        a.rel = rel;
        a.addEventListener("click", (event) => {
          if (event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
          event.preventDefault();
          navigate(a.pathname + a.search, false, { trail: goes } satisfies Trail);
        });
        return a;
      };
      const drawPager = (next: string) => {
        const none = (text: string) => h("span", { class: "muted", "aria-disabled": "true" }, text);
        // Reached from a shared link, a later page knows no way back but to the first.
        const back = !pageToken ? none("← Previous")
          : trail.length ? pageLink(trail[trail.length - 1], trail.slice(0, -1), "← Previous", "prev")
            : pageLink("", [], "← First page", "first");
        replace(pager,
          back,
          h("span", { class: "page-number" }, pageToken && !trail.length ? "A later page" : `Page ${trail.length + 1}`),
          next ? pageLink(next, [...trail, pageToken], "Next →", "next") : none("Next →"),
        );
      };
      const drawPage = (page: ListWorkflowsResponseJson) => {
        const items = page.workflows ?? [];
        replace(rows, items.length ? items.map((w) =>
          h("tr", { "data-workflow": w.workflowId ?? "" },
            h("th", { scope: "row" }, longId(w.workflowId ?? "", "workflow id", `/workflows/${encodeURIComponent(w.workflowId ?? "")}`)),
            h("td", {}, link(`/definitions/${encodeURIComponent(w.definition ?? "")}?version=${w.version}`, `${w.definition} v${w.version}`)),
            h("td", {}, h("code", {}, w.state ?? "")),
            h("td", {}, statusBadge(w.status), w.paused ? [" ", pausedBadge()] : []),
            h("td", { class: "num" }, w.revision ?? "0"),
            h("td", { class: "started" }, ago(w.createTime)),
            h("td", {}, ago(w.updateTime)),
          )) : h("tr", {}, h("td", { colspan: 7, class: "empty" }, "No workflows match.")));
        drawPager(page.nextPageToken ?? "");
      };
      const filtered = definition || status || idPrefix || filterText ? " match" : "";
      const asked = new URLSearchParams({ pageSize: String(sized || PAGE_SIZE), orderBy });
      if (idPrefix) asked.set("idPrefix", idPrefix);
      if (filterText) asked.set("filter", filterText);
      if (definition) asked.set("definition", definition);
      if (status) asked.set("status", status);
      if (pageToken) asked.set("pageToken", pageToken);
      const stream = api.stream(`/api/v1/workflows:watch?${asked}`, {
        event(type, data) {
          if (type === "page") drawPage(data as ListWorkflowsResponseJson);
          else if (type === "count") {
            const c = data as Count;
            const n = `${number(c.count)}${c.more ? "+" : ""}`;
            count.textContent = `${n} workflow${c.count === 1 && !c.more ? "" : "s"}${filtered}`;
            count.dataset.count = String(c.count);
            shown = n;
            batchButton.textContent = `Apply to all ${n} matching…`;
            batchButton.disabled = c.count === 0;
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
