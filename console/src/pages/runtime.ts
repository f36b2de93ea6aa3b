import uPlot from "uplot";
import * as api from "../api.js";
import { h, replace } from "../dom.js";
import { bytes, errorNotice, millis, number, seconds, toneBadge, uptime } from "../format.js";
import type { GetDiagnosticsResponseJson } from "@statewright/client/gen/statewright/v1/workflow_service_pb.js";
import type { ListQueuesResponseJson, QueueConfigJson } from "@statewright/client/gen/statewright/v1/task_service_pb.js";
import type { Page } from "../router.js";
import { connection } from "../status.js";

interface Sample {
  time: number; // seconds since the epoch
  d: GetDiagnosticsResponseJson;
}

interface Series {
  label: string;
  value(d: GetDiagnosticsResponseJson): number;
  colour: string;
  dash?: number[];
}

interface ChartSpec {
  id: string;
  title: string;
  unit: string;
  series: Series[];
}

const KEEP_SECONDS = 300;

const CHARTS: ChartSpec[] = [
  { id: "lag", title: "EventLoop lag", unit: "ms", series: [
    { label: "last", value: (d) => seconds(d.eventLoop?.lagLast) * 1000, colour: "#2557d6" },
    { label: "max", value: (d) => seconds(d.eventLoop?.lagMax) * 1000, colour: "#b42318", dash: [6, 4] },
  ] },
  { id: "queues", title: "Queue depths", unit: "items", series: [
    { label: "EventLoop", value: (d) => Number(d.eventLoop?.queueDepth ?? 0), colour: "#2557d6" },
    { label: "writer", value: (d) => Number(d.persistence?.queueDepth ?? 0), colour: "#8a4b00", dash: [6, 4] },
  ] },
  { id: "latency", title: "Save latency", unit: "ms", series: [
    { label: "p50", value: (d) => seconds(d.persistence?.saveLatencyP50) * 1000, colour: "#137333" },
    { label: "p99", value: (d) => seconds(d.persistence?.saveLatencyP99) * 1000, colour: "#b42318", dash: [6, 4] },
  ] },
  { id: "batches", title: "Writer batch size (mean)", unit: "saves", series: [
    { label: "mean", value: (d) => Number(d.persistence?.meanBatchSize ?? 0), colour: "#6b3fa0" },
  ] },
  { id: "watchers", title: "Watchers", unit: "streams", series: [
    { label: "active", value: (d) => Number(d.watchers?.activeWatchers ?? 0), colour: "#0b7285" },
  ] },
  { id: "conflicts", title: "Conflicts", unit: "total", series: [
    { label: "conflicts", value: (d) => Number(d.persistence?.conflicts ?? 0), colour: "#b42318" },
    { label: "unknown outcomes", value: (d) => Number(d.persistence?.unknownOutcomes ?? 0), colour: "#8a4b00", dash: [6, 4] },
  ] },
];

class Chart {
  readonly element: HTMLElement;
  private readonly plot: uPlot;
  private readonly summary: HTMLElement;

  constructor(private readonly spec: ChartSpec) {
    const canvas = h("div", { class: "chart-canvas" });
    this.summary = h("p", { class: "chart-summary" });
    this.element = h("figure", { class: "chart", "data-chart": spec.id, role: "group", "aria-labelledby": `chart-${spec.id}` },
      h("figcaption", { id: `chart-${spec.id}` }, spec.title, h("span", { class: "muted" }, ` (${spec.unit}, last 5 minutes)`)),
      canvas, this.summary);
    // A canvas knows no CSS variables: the theme's colours, read once.
    const css = getComputedStyle(document.documentElement);
    const muted = css.getPropertyValue("--muted").trim() || "#586174";
    const grid = css.getPropertyValue("--grid").trim() || "#e6e9ef";
    const options: uPlot.Options = {
      width: 320,
      height: 150,
      legend: { show: true, live: false },
      cursor: { show: true, drag: { x: false, y: false } },
      scales: { x: { time: true }, y: { range: (_u, min, max) => [Math.min(0, min), Math.max(1, max * 1.1)] } },
      axes: [
        { stroke: muted, grid: { stroke: grid }, ticks: { stroke: grid }, values: (_u, ticks) => ticks.map((t) => new Date(t * 1000).toLocaleTimeString([], { minute: "2-digit", second: "2-digit" })) },
        { stroke: muted, grid: { stroke: grid }, ticks: { stroke: grid }, size: 44 },
      ],
      series: [{}, ...spec.series.map((s) => ({ label: s.label, stroke: s.colour, width: 2, dash: s.dash, points: { show: false } }))],
    };
    this.plot = new uPlot(options, [[], ...spec.series.map(() => [])], canvas);
    // Charts are a picture; their latest values are also said in words.
    canvas.setAttribute("aria-hidden", "true");
  }

  update(samples: Sample[]): void {
    const xs = samples.map((s) => s.time);
    const ys = this.spec.series.map((series) => samples.map((s) => series.value(s.d)));
    this.plot.setData([xs, ...ys]);
    const last = samples[samples.length - 1];
    if (last) this.summary.textContent = "Now: " + this.spec.series.map((s) => `${s.label} ${format(s.value(last.d))} ${this.spec.unit}`).join(", ");
  }

  resize(width: number): void {
    this.plot.setSize({ width: Math.max(240, Math.floor(width)), height: 150 });
  }
}

function format(value: number): string {
  return Number.isInteger(value) ? value.toLocaleString() : value.toFixed(value < 10 ? 2 : 1);
}

function metric(label: string, value: string, id: string, note?: string): HTMLElement {
  return h("div", { class: "metric" }, h("dt", {}, label), h("dd", { "data-metric": id }, value), note ? h("dd", { class: "metric-note" }, note) : null);
}

// How often the flow-control table is read again (ListQueues counts in the database).
const FLOW_EVERY_MS = 5000;

function limits(c: QueueConfigJson | undefined): string {
  if (!c) return "none";
  const parts: string[] = [];
  if (c.maxLeased) parts.push(`at most ${number(c.maxLeased)} leased`);
  if (c.rate) parts.push(`${format(Number(c.rate))}/s (burst ${number(c.burst || Math.max(1, Math.ceil(Number(c.rate))))})`);
  if (c.keyMaxLeased) parts.push(`${number(c.keyMaxLeased)} per key`);
  if (c.keyRate) parts.push(`${format(Number(c.keyRate))}/s per key`);
  return parts.length ? parts.join(", ") : "none";
}

function drawFlow(target: HTMLElement, answer: ListQueuesResponseJson): void {
  const list = answer.queues ?? [];
  replace(target, list.length
    ? h("div", { class: "table-wrap", tabindex: 0, role: "region", "aria-label": "Flow control" }, h("table", { class: "data", "data-flow": "" },
        h("thead", {}, h("tr", {}, ["Queue", "Limits", "Backlog", "Leased", "Tokens", "Oldest waiting", "Busiest keys", "Closed keys"].map((x) => h("th", { scope: "col" }, x)))),
        h("tbody", {}, list.map((q) => h("tr", { "data-flow-queue": q.queue ?? "" },
          h("th", { scope: "row" }, h("code", {}, q.queue ?? "")),
          h("td", {}, limits(q.config)),
          h("td", { class: "num" }, number(q.backlog)),
          h("td", { class: "num" }, number(q.leased)),
          h("td", { class: "num" }, q.config?.rate ? format(Number(q.tokens ?? 0)) : "—"),
          h("td", {}, q.oldestWaiting ? `${seconds(q.oldestWaiting).toFixed(1)} s` : "—"),
          h("td", {}, (q.busiestKeys ?? []).length
            ? (q.busiestKeys ?? []).map((k) => `${k.key} (${number(k.backlog)} waiting, ${number(k.leased)} leased)`).join("; ")
            : h("span", { class: "muted" }, "none")),
          h("td", { "data-closed-keys": "" }, (q.closedKeys ?? []).length
            ? (q.closedKeys ?? []).map((k) => `${k.key} until ${k.closedUntil ? new Date(k.closedUntil).toLocaleTimeString() : "?"}`).join("; ")
            : h("span", { class: "muted" }, "none")),
        )))))
    : h("p", { class: "empty" }, "No queue has limits or open tasks."));
}

export function runtimePage(): Page {
  return {
    title: "Runtime",
    render(main) {
      const updated = h("p", { class: "muted", id: "diagnostics-updated", "aria-live": "off" }, "Waiting for the first sample…");
      const problem = h("div", {});
      const cards = h("div", { class: "metrics-grid" });
      const queues = h("div", {});
      const flow = h("div", {}, h("p", { class: "muted" }, "Reading the queues…"));
      const charts = CHARTS.map((spec) => new Chart(spec));
      const chartGrid = h("div", { class: "charts" }, charts.map((c) => c.element));
      main.append(
        h("div", { class: "page-head" }, h("h1", {}, "Runtime"), h("p", { class: "lede" }, "This server process's diagnostics, sampled every two seconds."), updated),
        problem,
        h("section", { "aria-labelledby": "now-title" }, h("h2", { id: "now-title", class: "visually-hidden" }, "Now"), cards),
        h("section", { class: "card", "aria-labelledby": "charts-title" }, h("h2", { id: "charts-title" }, "The last minutes"), chartGrid),
        h("section", { class: "card", "aria-labelledby": "queues-title" }, h("h2", { id: "queues-title" }, "Task queues"), queues),
        h("section", { class: "card", "aria-labelledby": "flow-title" },
          h("h2", { id: "flow-title" }, "Flow control"),
          h("p", { class: "muted" }, "Each queue's limits, shared by every replica, with its busiest and closed concurrency keys."),
          flow),
      );
      let flowTimer: number | undefined;
      let left = false;
      const readFlow = async () => {
        try {
          const answer = await api.get<ListQueuesResponseJson>("/api/v1/queues", { keyCount: 5 });
          if (left) return;
          drawFlow(flow, answer);
        } catch (error) {
          if (left) return;
          replace(flow, errorNotice(error, "The queues could not be read"));
        }
        flowTimer = window.setTimeout(() => void readFlow(), FLOW_EVERY_MS);
      };
      void readFlow();
      const samples: Sample[] = [];
      let count = 0;
      const resize = () => {
        for (const c of charts) c.resize(c.element.clientWidth - 2);
      };
      const observer = new ResizeObserver(resize);
      observer.observe(chartGrid);

      const draw = (d: GetDiagnosticsResponseJson) => {
        const loop = d.eventLoop ?? {};
        const p = d.persistence ?? {};
        const t = d.timers ?? {};
        const a = d.admissions ?? {};
        replace(cards,
          h("article", { class: "card metric-card", "aria-labelledby": "m-loop" }, h("h3", { id: "m-loop" }, "EventLoop"), h("dl", { class: "metrics" },
            metric("Phase", (loop.phase ?? "").replace("EVENT_LOOP_PHASE_", "").toLowerCase(), "phase"),
            metric("Lag", millis(loop.lagLast), "lag", `avg ${millis(loop.lagAverage)}, max ${millis(loop.lagMax)}, ${number(loop.laggedDispatchCount)} over ${millis(loop.lagWarningThreshold)}`),
            metric("Queue", number(loop.queueDepth), "loop-queue", `max ${number(loop.maxQueueDepth)}, ${number(loop.backlogWarningCount)} backlogs of ${number(loop.backlogWarningThreshold)}+`),
            metric("Dispatches", number(loop.dispatchCount), "dispatches", `${number(loop.slowDispatchCount)} slow`),
          )),
          h("article", { class: "card metric-card", "aria-labelledby": "m-store" }, h("h3", { id: "m-store" }, "Persistence"), h("dl", { class: "metrics" },
            metric("Saves", number(p.saves), "saves", `${p.backend ?? ""}, ${number(p.batches)} batches`),
            metric("Batch size", Number(p.meanBatchSize ?? 0).toFixed(1), "batch", "mean saves per commit"),
            metric("Save latency", millis(p.saveLatencyP50), "save-p50", `p99 ${millis(p.saveLatencyP99)}`),
            metric("Writer queue", `${number(p.queueDepth)} / ${number(p.queueCapacity)}`, "writer-queue"),
            metric("Conflicts", number(p.conflicts), "conflicts", `${number(p.unknownOutcomes)} unknown outcomes`),
          )),
          h("article", { class: "card metric-card", "aria-labelledby": "m-live" }, h("h3", { id: "m-live" }, "Live work"), h("dl", { class: "metrics" },
            metric("Watchers", number(d.watchers?.activeWatchers), "watchers", `${number(d.watchers?.catchUps)} catch-ups`),
            metric("Admissions", number(Number(a.admitting ?? 0) + Number(a.executing ?? 0) + Number(a.persisting ?? 0)), "admissions", `${number(a.recoveryRequired)} awaiting recovery, ${number(a.cachedSessions)} cached (${bytes(a.cachedContextBytes)} of contexts)`),
            metric("Timers", number(t.armed), "timers", `${number(t.overdue)} overdue, fire lag p99 ${millis(t.fireLagP99)}`),
            metric("Uptime", uptime(d.uptime), "uptime", `statewrightd ${d.build?.version ?? ""}, Python ${d.build?.pythonVersion ?? ""}`),
          )),
        );
        const list = d.taskQueues ?? [];
        replace(queues, list.length
          ? h("div", { class: "table-wrap", tabindex: 0, role: "region", "aria-label": "Task queues" }, h("table", { class: "data" },
              h("thead", {}, h("tr", {}, ["Queue", "Backlog", "Leased", "Pollers", "Oldest waiting", "Health"].map((x) => h("th", { scope: "col" }, x)))),
              h("tbody", {}, list.map((q) => h("tr", {},
                h("th", { scope: "row" }, h("code", {}, q.queue ?? "")),
                h("td", { class: "num" }, number(q.backlog)),
                h("td", { class: "num" }, number(q.leased)),
                h("td", {}, (q.pollers ?? []).length ? (q.pollers ?? []).join(", ") : h("span", { class: "muted" }, "none")),
                h("td", {}, q.oldestScheduledAge ? `${seconds(q.oldestScheduledAge).toFixed(1)} s` : "—"),
                h("td", {}, q.stalled ? toneBadge("failed", "Stalled") : toneBadge("completed", "Served")),
              )))))
          : h("p", { class: "empty" }, "No task queue has tasks or pollers."));
      };

      const stream = api.stream("/api/v1/diagnostics:watch", {
        event(type, data, id) {
          if (type !== "diagnostics") return;
          const time = Number(id) / 1000;
          samples.push({ time, d: data as GetDiagnosticsResponseJson });
          while (samples.length && samples[0].time < time - KEEP_SECONDS) samples.shift();
          count += 1;
          draw(data as GetDiagnosticsResponseJson);
          for (const c of charts) c.update(samples);
          updated.textContent = `Sample ${count}, taken at ${new Date(time * 1000).toLocaleTimeString()}`;
          updated.dataset.samples = String(count);
        },
        state(state, error) {
          connection(state, error);
          if (state === "failed" && error) replace(problem, errorNotice(error, "Diagnostics could not be read"));
          else if (state === "live") problem.replaceChildren();
        },
      });
      return () => {
        stream.close();
        left = true;
        window.clearTimeout(flowTimer);
        observer.disconnect();
        connection(null);
      };
    },
  };
}
