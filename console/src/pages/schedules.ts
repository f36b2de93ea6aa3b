import * as api from "../api.js";
import { h, link, replace } from "../dom.js";
import { ago, clockTime, errorNotice, number, toneBadge } from "../format.js";
import type { ListSchedulesResponseJson, ScheduleJson, ScheduleActionResultJson, TriggerScheduleResponseJson } from "@statewright/client/gen/statewright/v1/schedule_service_pb.js";
import type { Page } from "../router.js";

async function allSchedules(): Promise<ScheduleJson[]> {
  const found: ScheduleJson[] = [];
  let pageToken: string | undefined;
  for (let pages = 0; pages < 20; pages += 1) {
    const page = await api.get<ListSchedulesResponseJson>("/api/v1/schedules", { pageSize: 1000, pageToken });
    found.push(...(page.schedules ?? []));
    pageToken = page.nextPageToken;
    if (!pageToken) break;
  }
  return found;
}

function when(schedule: ScheduleJson): string {
  const spec = schedule.spec ?? {};
  const parts = [...(spec.cronExpressions ?? [])];
  if (spec.interval) parts.push(`every ${spec.interval}`);
  const zone = spec.timeZone ? ` (${spec.timeZone})` : "";
  return parts.join(", ") + zone;
}

const OUTCOMES: Record<string, [string, string]> = {
  SCHEDULE_ACTION_OUTCOME_STARTED: ["completed", "started"],
  SCHEDULE_ACTION_OUTCOME_SKIPPED: ["waiting", "skipped"],
  SCHEDULE_ACTION_OUTCOME_MISSED: ["failed", "missed"],
  SCHEDULE_ACTION_OUTCOME_BUFFERED: ["running", "buffered"],
  SCHEDULE_ACTION_OUTCOME_FAILED: ["failed", "failed"],
};

function outcome(action: ScheduleActionResultJson): HTMLElement {
  const [tone, label] = OUTCOMES[action.outcome ?? ""] ?? ["cancelled", "unknown"];
  return toneBadge(tone, label);
}

function actionRow(action: ScheduleActionResultJson): HTMLElement {
  const id = (action.workflow ?? "").replace(/^workflows\//, "");
  return h("li", { class: "schedule-action" },
    outcome(action), " ",
    h("span", { title: `nominal ${action.nominalTime ?? ""}, fired ${action.actualTime ?? ""}` }, clockTime(action.nominalTime)), " ",
    id && action.outcome === "SCHEDULE_ACTION_OUTCOME_STARTED" ? link(`/workflows/${encodeURIComponent(id)}`, id) : h("span", { class: "muted" }, action.reason || "—"),
  );
}

export function schedulesPage(): Page {
  return {
    title: "Schedules",
    render(main) {
      const notice = h("div", { "aria-live": "polite" });
      const body = h("div", { "aria-busy": "true" }, h("p", { class: "muted" }, "Loading schedules…"));
      main.append(
        h("div", { class: "page-head" }, h("h1", {}, "Schedules"),
          h("p", { class: "lede" }, "Schedules start workflows on a calendar: each fire starts one instance named after its nominal time. Pause, unpause or fire one now here.")),
        notice,
        body,
      );
      const act = async (name: string, verb: "pause" | "unpause" | "trigger") => {
        try {
          if (verb === "trigger") {
            const fired = await api.post<TriggerScheduleResponseJson>(`/api/v1/${name}:trigger`, {});
            const wid = (fired.action?.workflow ?? "").replace(/^workflows\//, "");
            replace(notice, h("p", { class: "notice", role: "status" }, `${name}: `, outcome(fired.action ?? {}), " ", wid ? link(`/workflows/${encodeURIComponent(wid)}`, wid) : fired.action?.reason ?? ""));
          } else {
            await api.post(`/api/v1/${name}:${verb}`, { note: `${verb}d from the console` });
            replace(notice, h("p", { class: "notice", role: "status" }, `${name}: ${verb}d`));
          }
        } catch (error) {
          replace(notice, errorNotice(error, `The ${verb} was refused`));
        }
        draw();
      };
      const draw = () => allSchedules().then(
        (schedules) => {
          body.removeAttribute("aria-busy");
          if (!schedules.length) {
            replace(body, h("p", { class: "empty" }, "No schedules. Create one with `statewright schedule create`, a client, or a *.schedules.yaml file in the definitions directory."));
            return;
          }
          replace(body,
            h("div", { class: "table-wrap", tabindex: 0, role: "region", "aria-label": "Schedules" },
              h("table", { class: "data", id: "schedules" },
                h("thead", {}, h("tr", {},
                  h("th", { scope: "col" }, "Schedule"), h("th", { scope: "col" }, "Starts"), h("th", { scope: "col" }, "When"),
                  h("th", { scope: "col" }, "State"), h("th", { scope: "col" }, "Next fires"), h("th", { scope: "col" }, "Fires · skips · misses"),
                  h("th", { scope: "col" }, "Recent actions"), h("th", { scope: "col" }, "Actions"))),
                h("tbody", {}, schedules.map((s) => {
                  const info = s.info ?? {};
                  const paused = s.state?.paused ?? false;
                  const name = s.name ?? "";
                  return h("tr", { "data-schedule": s.scheduleId ?? "" },
                    h("th", { scope: "row" }, h("code", {}, s.scheduleId ?? "")),
                    h("td", {}, link(`/definitions/${encodeURIComponent(s.action?.definition ?? "")}`, s.action?.definition ?? "")),
                    h("td", { class: "wrap" }, when(s), h("br", {}), h("span", { class: "muted" }, `overlap ${(s.policies?.overlap ?? "OVERLAP_POLICY_SKIP").replace("OVERLAP_POLICY_", "")}`)),
                    h("td", {}, paused ? toneBadge("waiting", "paused") : toneBadge("running", "active"), s.state?.note ? h("div", { class: "muted wrap" }, s.state.note) : null),
                    h("td", {}, (info.nextFireTimes ?? []).length ? h("ul", { class: "plain" }, (info.nextFireTimes ?? []).slice(0, 3).map((t) => h("li", {}, ago(t)))) : h("span", { class: "muted" }, "—")),
                    h("td", {}, `${number(info.fires)} · ${number(info.skips)} · ${number(info.misses)}`),
                    h("td", {}, (info.recentActions ?? []).length ? h("ul", { class: "plain" }, (info.recentActions ?? []).slice(0, 5).map(actionRow)) : h("span", { class: "muted" }, "none yet")),
                    h("td", {},
                      h("button", { type: "button", class: "button", "data-action": paused ? "unpause" : "pause", onclick: () => void act(name, paused ? "unpause" : "pause") }, paused ? "Unpause" : "Pause"), " ",
                      h("button", { type: "button", class: "button primary", "data-action": "trigger", onclick: () => void act(name, "trigger") }, "Trigger now")),
                  );
                })),
              ),
            ),
          );
        },
        (error) => replace(body, errorNotice(error, "Schedules could not be read")),
      );
      void draw();
      const timer = window.setInterval(() => void draw(), 5000);
      return () => window.clearInterval(timer);
    },
  };
}
