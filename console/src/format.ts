import { h, link } from "./dom.js";
import type { WorkflowStatusJson } from "@statewright/client/gen/statewright/v1/workflow_pb.js";

// Icons as SVG paths (24x24), so that no font can leave a status without its shape.
export const ICONS: Record<string, string> = {
  running: "M8 5v14l11-7z",
  waiting: "M7 5h4v14H7zM13 5h4v14h-4z",
  completed: "M9.5 16.2 5.3 12l-1.4 1.4 5.6 5.6 11-11-1.4-1.4z",
  failed: "M18.3 5.7 16.9 4.3 12 9.2 7.1 4.3 5.7 5.7 10.6 10.6 5.7 15.5l1.4 1.4 4.9-4.9 4.9 4.9 1.4-1.4-4.9-4.9z",
  cancelled: "M12 2a10 10 0 1 0 0 20 10 10 0 0 0 0-20zm0 2a8 8 0 0 1 6.3 12.9L7.1 5.7A8 8 0 0 1 12 4zM4 12c0-1.8.6-3.5 1.7-4.9l11.2 11.2A8 8 0 0 1 4 12z",
  unknown: "M11 17h2v2h-2zm1-14a6 6 0 0 0-6 6h2a4 4 0 1 1 4 4h-1v3h2v-1.1A6 6 0 0 0 12 3z",
  copy: "M9 7h11v14H9zm2 2v10h7V9zM4 3h12v2H6v12H4z",
};

export function icon(name: string): SVGSVGElement {
  const ns = "http://www.w3.org/2000/svg";
  const svg = document.createElementNS(ns, "svg");
  svg.setAttribute("viewBox", "0 0 24 24");
  svg.setAttribute("class", "badge-icon");
  svg.setAttribute("aria-hidden", "true");
  svg.setAttribute("focusable", "false");
  const path = document.createElementNS(ns, "path");
  path.setAttribute("d", ICONS[name] ?? ICONS.unknown);
  path.setAttribute("fill", "currentColor");
  svg.append(path);
  return svg;
}

const STATUS: Record<string, { label: string; tone: string }> = {
  WORKFLOW_STATUS_RUNNING: { label: "Running", tone: "running" },
  WORKFLOW_STATUS_WAITING: { label: "Waiting", tone: "waiting" },
  WORKFLOW_STATUS_COMPLETED: { label: "Completed", tone: "completed" },
  WORKFLOW_STATUS_FAILED: { label: "Failed", tone: "failed" },
  WORKFLOW_STATUS_CANCELLED: { label: "Cancelled", tone: "cancelled" },
};

export const STATUSES = Object.keys(STATUS) as WorkflowStatusJson[];

export function statusLabel(status: string | undefined): string {
  return STATUS[status ?? ""]?.label ?? "Unknown";
}

/** A status as a word and a shape as well as a colour: never colour alone. */
export function statusBadge(status: string | undefined): HTMLElement {
  const known = STATUS[status ?? ""] ?? { label: "Unknown", tone: "unknown" };
  return toneBadge(known.tone, known.label);
}

/** The badge beside the status of an instance an operator paused (its status stays). */
export function pausedBadge(): HTMLElement {
  return h("span", { class: "badge badge-paused", "data-paused": "" }, icon("waiting"), "Paused");
}

export function toneBadge(tone: string, label: string): HTMLElement {
  return h("span", { class: `badge badge-${tone}`, "data-status": label.toLowerCase() }, icon(tone), label);
}

export function terminal(status: string | undefined): boolean {
  return status === "WORKFLOW_STATUS_COMPLETED" || status === "WORKFLOW_STATUS_FAILED" || status === "WORKFLOW_STATUS_CANCELLED";
}

const dateTime = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "medium" });
const clock = new Intl.DateTimeFormat(undefined, { hour: "2-digit", minute: "2-digit", second: "2-digit" });
const relative = new Intl.RelativeTimeFormat(undefined, { numeric: "auto" });

export function timestamp(text: string | undefined): HTMLTimeElement | string {
  if (!text) return "—";
  const date = new Date(text);
  return h("time", { datetime: text, title: dateTime.format(date) }, dateTime.format(date));
}

export function clockTime(text: string | undefined): string {
  return text ? clock.format(new Date(text)) : "—";
}

export function ago(text: string | undefined, now = Date.now()): HTMLTimeElement | string {
  if (!text) return "—";
  const date = new Date(text);
  const seconds = Math.round((date.getTime() - now) / 1000);
  const abs = Math.abs(seconds);
  const [value, unit]: [number, Intl.RelativeTimeFormatUnit] =
    abs < 60 ? [seconds, "second"] : abs < 3600 ? [Math.round(seconds / 60), "minute"] : abs < 86400 ? [Math.round(seconds / 3600), "hour"] : [Math.round(seconds / 86400), "day"];
  return h("time", { datetime: text, title: dateTime.format(date) }, relative.format(value, unit));
}

/** "1.5s" (a canonical JSON Duration) as seconds. */
export function seconds(duration: string | undefined): number {
  if (!duration) return 0;
  return Number(duration.replace(/s$/, "")) || 0;
}

export function millis(duration: string | undefined): string {
  const ms = seconds(duration) * 1000;
  return ms >= 100 ? `${ms.toFixed(0)} ms` : ms >= 10 ? `${ms.toFixed(1)} ms` : `${ms.toFixed(2)} ms`;
}

export function countdown(due: string | undefined, now = Date.now()): string {
  if (!due) return "—";
  let left = Math.round((new Date(due).getTime() - now) / 1000);
  if (left <= 0) return "due now";
  const parts: string[] = [];
  const days = Math.floor(left / 86400);
  left -= days * 86400;
  const hours = Math.floor(left / 3600);
  left -= hours * 3600;
  const minutes = Math.floor(left / 60);
  left -= minutes * 60;
  if (days) parts.push(`${days}d`);
  if (days || hours) parts.push(`${hours}h`);
  if (days || hours || minutes) parts.push(`${minutes}m`);
  parts.push(`${left}s`);
  return `in ${parts.join(" ")}`;
}

export function uptime(duration: string | undefined): string {
  let left = Math.floor(seconds(duration));
  const days = Math.floor(left / 86400);
  left -= days * 86400;
  const hours = Math.floor(left / 3600);
  left -= hours * 3600;
  const minutes = Math.floor(left / 60);
  return days ? `${days}d ${hours}h` : hours ? `${hours}h ${minutes}m` : `${minutes}m ${left - minutes * 60}s`;
}

export function number(value: string | number | undefined): string {
  return Number(value ?? 0).toLocaleString();
}

/** A size in bytes, in the largest binary unit that keeps it at least 1 ("3.2 MiB"). */
export function bytes(value: string | number | undefined): string {
  let size = Number(value ?? 0);
  const units = ["bytes", "KiB", "MiB", "GiB"];
  let unit = 0;
  while (size >= 1024 && unit < units.length - 1) {
    size /= 1024;
    unit += 1;
  }
  return unit === 0 ? `${size.toLocaleString()} bytes` : `${size.toFixed(size < 10 ? 1 : 0)} ${units[unit]}`;
}

/** Pretty JSON with its keys, strings, numbers and literals marked for colour. */
export function prettyJson(value: unknown): HTMLElement {
  const code = h("code", {});
  const text = JSON.stringify(value ?? {}, null, 2);
  const pattern = /("(?:\\.|[^"\\])*")(\s*:)?|\b(true|false|null)\b|(-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)/g;
  let last = 0;
  for (const match of text.matchAll(pattern)) {
    const index = match.index ?? 0;
    if (index > last) code.append(text.slice(last, index));
    const [whole, str, colon, literal, num] = match;
    if (str !== undefined) {
      code.append(h("span", { class: colon ? "j-key" : "j-str" }, str));
      if (colon) code.append(colon);
    } else if (literal !== undefined) code.append(h("span", { class: "j-lit" }, literal));
    else if (num !== undefined) code.append(h("span", { class: "j-num" }, num));
    else code.append(whole);
    last = index + whole.length;
  }
  code.append(text.slice(last));
  return h("pre", { class: "json", tabindex: 0 }, code);
}

export function errorNotice(error: unknown, title = "The server refused"): HTMLElement {
  const e = error as { code?: string; reason?: string; message?: string; metadata?: Record<string, string> };
  const meta = Object.entries(e.metadata ?? {});
  return h(
    "div",
    { class: "notice notice-error", role: "alert" },
    h("p", { class: "notice-title" }, icon("failed"), " ", title, ": ", h("code", {}, e.code ?? "ERROR"), e.reason ? [" ", h("code", {}, e.reason)] : null),
    h("p", { class: "error-message" }, e.message ?? String(error)),
    meta.length ? h("dl", { class: "meta" }, meta.map(([k, v]) => [h("dt", {}, k), h("dd", {}, v)])) : null,
  );
}

/**
 * An id that may be long (up to 128 characters): shown whole where it wraps, cut short
 * with an ellipsis where it must stay on one line, the full id always in its tooltip and
 * one click from the clipboard.
 */
export function longId(id: string, what = "id", target?: string): HTMLElement {
  const text = h("code", { class: "long-id-text", title: id }, id);
  return h("span", { class: "long-id" }, target === undefined ? text : link(target, text), copyButton(id, what));
}

export function copyButton(value: string, what: string): HTMLButtonElement {
  const label = `Copy ${what}`;
  const button = h("button", { type: "button", class: "copy", title: label, "aria-label": label, "data-copy": value },
    icon("copy"));
  button.addEventListener("click", () => {
    const done = (word: string) => {
      button.setAttribute("aria-label", `${label}: ${word}`);
      button.dataset.copied = word;
      window.setTimeout(() => {
        button.setAttribute("aria-label", label);
        delete button.dataset.copied;
      }, 2000);
    };
    navigator.clipboard.writeText(value).then(() => done("copied"), () => done("not copied"));
  });
  return button;
}

/** A form's JSON object (an input, a payload) as typed; empty text is ``{}``. Anything else
 * is an error in the shape errorNotice shows, so that it is caught before it is sent. */
export function parseJson(text: string, what: string): { ok: true; value: Record<string, unknown> } | { ok: false; error: unknown } {
  if (!text.trim()) return { ok: true, value: {} };
  try {
    const value: unknown = JSON.parse(text);
    if (typeof value !== "object" || value === null || Array.isArray(value)) throw new Error("it must be an object, { … }");
    return { ok: true, value: value as Record<string, unknown> };
  } catch (error) {
    return { ok: false, error: { code: "INVALID_JSON", reason: "NOT_SENT", message: `The ${what} is not a JSON object: ${(error as Error).message}` } };
  }
}

/** Lines of ``key=value`` (a migration's state map or sets) as an object; blank lines skipped. */
export function pairs(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of text.split("\n")) {
    const at = line.indexOf("=");
    if (line.trim() && at > 0) out[line.slice(0, at).trim()] = line.slice(at + 1).trim();
  }
  return out;
}
