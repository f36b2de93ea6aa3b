import * as api from "../api.js";
import { h, link, replace } from "../dom.js";
import { ago, errorNotice } from "../format.js";
import type { ContextFieldJson, DefinitionJson } from "@statewright/client/gen/statewright/v1/definition_pb.js";
import type { ListDefinitionsResponseJson, GetDefinitionResponseJson, StartWorkflowResponseJson } from "@statewright/client/gen/statewright/v1/workflow_service_pb.js";
import { StateGraph } from "../graph.js";
import { navigate, type Page } from "../router.js";

async function allDefinitions(): Promise<DefinitionJson[]> {
  const found: DefinitionJson[] = [];
  let pageToken: string | undefined;
  for (let pages = 0; pages < 20; pages += 1) {
    const page = await api.get<ListDefinitionsResponseJson>("/api/v1/definitions", { pageSize: 1000, pageToken });
    found.push(...(page.definitions ?? []));
    pageToken = page.nextPageToken;
    if (!pageToken) break;
  }
  return found;
}

export function byName(definitions: DefinitionJson[]): Map<string, DefinitionJson[]> {
  const names = new Map<string, DefinitionJson[]>();
  for (const d of definitions) {
    const versions = names.get(d.definition ?? "") ?? [];
    versions.push(d);
    names.set(d.definition ?? "", versions);
  }
  for (const versions of names.values()) versions.sort((a, b) => (b.version ?? 0) - (a.version ?? 0));
  return names;
}

export function definitionsPage(): Page {
  return {
    title: "Definitions",
    render(main) {
      const body = h("div", { "aria-busy": "true" }, h("p", { class: "muted" }, "Loading definitions…"));
      main.append(h("div", { class: "page-head" }, h("h1", {}, "Definitions"), h("p", { class: "lede" }, "Every workflow definition the server has loaded, by name; open one for its graph, its source and its versions.")), body);
      allDefinitions().then(
        (definitions) => {
          body.removeAttribute("aria-busy");
          const names = byName(definitions);
          if (!names.size) {
            replace(body, h("p", { class: "empty" }, "No definitions are loaded. Start the server with --definitions DIR."));
            return;
          }
          replace(
            body,
            h("div", { class: "table-wrap", tabindex: 0, role: "region", "aria-label": "Definitions" },
              h("table", { class: "data" },
                h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "Definition"), h("th", { scope: "col" }, "Latest"), h("th", { scope: "col" }, "Versions"), h("th", { scope: "col" }, "States"), h("th", { scope: "col" }, "Description"), h("th", { scope: "col" }, "Loaded"))),
                h("tbody", {},
                  [...names].map(([name, versions]) => {
                    const latest = versions[0];
                    return h("tr", {},
                      h("th", { scope: "row" }, link(`/definitions/${encodeURIComponent(name)}`, name)),
                      h("td", {}, `v${latest.version}`),
                      h("td", {}, String(versions.length)),
                      h("td", {}, String(latest.states?.length ?? 0)),
                      h("td", { class: "wrap" }, latest.description || h("span", { class: "muted" }, "—")),
                      h("td", {}, ago(latest.createTime)),
                    );
                  }),
                ),
              ),
            ),
          );
        },
        (error) => replace(body, errorNotice(error, "Definitions could not be read")),
      );
    },
  };
}

export function definitionPage(name: string, query: URLSearchParams): Page {
  const wanted = query.get("version");
  return {
    title: name,
    render(main) {
      const body = h("div", { "aria-busy": "true" }, h("p", { class: "muted" }, "Loading…"));
      main.append(
        h("nav", { class: "crumbs", "aria-label": "Breadcrumb" }, h("ol", {}, h("li", {}, link("/definitions", "Definitions")), h("li", { "aria-current": "page" }, name))),
        body,
      );
      Promise.all([
        api.get<GetDefinitionResponseJson>(`/api/v1/definitions/${encodeURIComponent(name)}${wanted ? `/versions/${encodeURIComponent(wanted)}` : ""}`),
        api.get<ListDefinitionsResponseJson>("/api/v1/definitions", { definition: name, pageSize: 1000 }),
      ]).then(
        ([one, all]) => {
          body.removeAttribute("aria-busy");
          const d = one.definition ?? {};
          const versions = (all.definitions ?? []).sort((a, b) => (b.version ?? 0) - (a.version ?? 0));
          const graph = new StateGraph(d.mermaid ?? "", `State graph of ${name} version ${d.version}`);
          replace(
            body,
            h("div", { class: "page-head" },
              h("h1", {}, name, " ", h("span", { class: "version-tag" }, `v${d.version}`)),
              d.description ? h("p", { class: "lede" }, d.description) : null,
            ),
            h("nav", { class: "versions", "aria-label": "Versions" },
              h("span", { class: "label", id: "versions-label" }, "Versions"),
              h("ul", { "aria-labelledby": "versions-label" },
                versions.map((v) =>
                  h("li", {}, v.version === d.version
                    ? h("span", { class: "pill pill-active", "aria-current": "true" }, `v${v.version}`)
                    : link(`/definitions/${encodeURIComponent(name)}?version=${v.version}`, h("span", { class: "pill" }, `v${v.version}`))),
                ),
              ),
              link(`/workflows?definition=${encodeURIComponent(name)}`, "Its workflows →"),
            ),
            h("div", { class: "grid two" },
              h("section", { class: "card span-2", "aria-labelledby": "graph-title" }, h("h2", { id: "graph-title" }, "State graph"), graph.element),
              h("section", { class: "card", "aria-labelledby": "facts-title" },
                h("h2", { id: "facts-title" }, "About this version"),
                h("dl", { class: "facts" },
                  h("dt", {}, "Resource"), h("dd", {}, h("code", {}, d.name ?? "")),
                  h("dt", {}, "Source file"), h("dd", {}, d.sourceName || "—"),
                  h("dt", {}, "Digest"), h("dd", {}, h("code", { class: "digest" }, (d.digest ?? "").slice(0, 16))),
                  h("dt", {}, "Loaded"), h("dd", {}, ago(d.createTime)),
                  h("dt", {}, "States"), h("dd", {}, (d.states ?? []).join(", ")),
                  h("dt", {}, "Events"), h("dd", {}, (d.events ?? []).join(", ") || "—"),
                ),
              ),
              startForm(name, d.version ?? 0, d.contextFields ?? []),
              h("section", { class: "card span-2", "aria-labelledby": "source-title" },
                h("h2", { id: "source-title" }, "Source"),
                h("pre", { class: "source", tabindex: 0, "aria-label": "Definition source" }, h("code", {}, d.source ?? "")),
              ),
            ),
          );
        },
        (error) => replace(body, errorNotice(error, `${name} could not be read`)),
      );
    },
  };
}

// The start form begins with every declared field at its default, so that what an
// instance can be started with is on the page to edit rather than looked up in the source.
function contextDefaults(fields: ContextFieldJson[]): string {
  if (fields.length === 0) return "";
  const defaults: Record<string, unknown> = {};
  for (const field of fields) defaults[field.name ?? ""] = field.defaultValue ?? null;
  return JSON.stringify(defaults, null, 2);
}

const UNIT_SECONDS: Record<string, number> = { ms: 0.001, s: 1, m: 60, h: 3600, d: 86400 };

// A duration as the definition language writes one (30s, 1h30m, 500ms), in seconds; null
// when the text is not one.
function durationSeconds(text: string): number | null {
  const parts = [...text.matchAll(/(\d+(?:\.\d+)?)(ms|s|m|h|d)/g)];
  if (!parts.length || parts.map((m) => m[0]).join("") !== text) return null;
  return parts.reduce((sum, m) => sum + Number(m[1]) * (UNIT_SECONDS[m[2] ?? "s"] ?? 1), 0);
}

function startForm(name: string, version: number, fields: ContextFieldJson[]): HTMLElement {
  const result = h("div", { "aria-live": "polite" });
  const prefill = contextDefaults(fields);
  const input = h("textarea", { id: "start-input", name: "input", rows: Math.min(12, Math.max(4, fields.length + 2)), spellcheck: "false", class: "code-input", placeholder: "{}" });
  input.value = prefill;
  const id = h("input", { id: "start-id", name: "workflowId", type: "text", autocomplete: "off", spellcheck: "false", placeholder: "generated when empty" });
  const delay = h("input", { id: "start-delay", name: "startDelay", type: "text", autocomplete: "off", spellcheck: "false", placeholder: "at once" });
  // A start may only lower the definition's limit: the server refuses a higher one with
  // RECURSION_LIMIT_TOO_HIGH, shown below the form as any refusal is.
  const limit = h("input", { id: "start-recursion-limit", name: "recursionLimit", type: "number", min: "1", step: "1", inputmode: "numeric", placeholder: "the definition's" });
  // What the server does when the id is taken: a live instance is never restarted.
  const ifExists = h("select", { id: "start-if-exists", name: "ifExists" },
    h("option", { value: "" }, "Refuse the start (ALREADY_EXISTS)"),
    h("option", { value: "IF_EXISTS_POLICY_RETURN_EXISTING" }, "Open the existing instance"),
    h("option", { value: "IF_EXISTS_POLICY_RESTART" }, "Restart it if it has finished (a new run)"),
  ) as HTMLSelectElement;
  const form = h("form", { class: "stack" },
    h("label", { for: "start-id" }, "Workflow id ", h("span", { class: "muted" }, "(optional)")), id,
    h("label", { for: "start-input" }, "Input ", h("span", { class: "muted" }, prefill ? "(JSON object: the context's declared defaults, edit or remove any)" : "(JSON object, optional)")), input,
    h("label", { for: "start-delay" }, "Start delay ", h("span", { class: "muted" }, "(optional: 30s, 5m, 1h30m; the instance exists at once and its first step runs then)")), delay,
    h("label", { for: "start-recursion-limit" }, "Recursion limit ", h("span", { class: "muted" }, "(optional: at most this many transitions in any one step of this instance; at most the definition's)")), limit,
    h("label", { for: "start-if-exists" }, "If the id exists ", h("span", { class: "muted" }, "(a restart starts a finished instance again from the entry point, its context under the input)")), ifExists,
    h("div", {}, h("button", { type: "submit", class: "button primary" }, `Start ${name} v${version}`)),
    result,
  );
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    let parsed: unknown = {};
    try {
      parsed = input.value.trim() ? JSON.parse(input.value) : {};
    } catch (error) {
      replace(result, errorNotice({ code: "INVALID_JSON", message: `The input is not JSON: ${(error as Error).message}` }, "Not sent"));
      return;
    }
    const seconds = delay.value.trim() ? durationSeconds(delay.value.trim()) : 0;
    if (seconds === null) {
      replace(result, errorNotice({ code: "INVALID_DURATION", message: `The start delay is not a duration: write it as 30s, 5m, 1h30m or 2d.` }, "Not sent"));
      return;
    }
    const body: Record<string, unknown> = { definition: name, version, workflowId: id.value.trim(), input: parsed };
    if (seconds > 0) body["startDelay"] = `${seconds}s`;
    if (limit.value.trim()) body["recursionLimit"] = Number(limit.value.trim());
    if (ifExists.value) body["ifExists"] = ifExists.value;
    api.post<StartWorkflowResponseJson>("/api/v1/workflows", body).then(
      (started) => navigate(`/workflows/${encodeURIComponent(started.workflow?.workflowId ?? "")}`),
      (error) => replace(result, errorNotice(error, "The start was refused")),
    );
  });
  return h("section", { class: "card", "aria-labelledby": "start-title" }, h("h2", { id: "start-title" }, "Start an instance"), form);
}
