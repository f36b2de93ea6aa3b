// State graphs: the server's Mermaid source (Definition.mermaid), rendered in the browser.
// The current state is lit by a class on its node of the rendered SVG, so that a step
// costs a class change, not a new render.

import { h } from "./dom.js";

type Mermaid = typeof import("mermaid").default;
let loading: Promise<Mermaid> | null = null;
let counter = 0;
// The state of an instance that has run off the end of its graph (definitions.model).
export const FINISH = "__finish__";

function dark(): boolean {
  return window.matchMedia("(prefers-color-scheme: dark)").matches;
}

async function mermaid(): Promise<Mermaid> {
  // Mermaid is most of the bundle: loaded once a page first shows a graph.
  loading ??= import("mermaid").then(({ default: m }) => {
    m.initialize({
      startOnLoad: false,
      // Mermaid's own default is ELK, which the console does not ship (build.mjs).
      layout: "dagre",
      securityLevel: "strict",
      theme: dark() ? "dark" : "neutral",
      fontFamily: "inherit",
      state: { useMaxWidth: true },
    });
    return m;
  });
  return loading;
}

/** The id Mermaid gives a state (definitions.graph: "s_" and '-' as '_'). */
function mermaidId(state: string): string {
  return "s_" + state.replaceAll("-", "_");
}

/** The states the source marks as task states (its `class ... task` line). */
export function taskStates(source: string): Set<string> {
  const found = new Set<string>();
  for (const line of source.split("\n")) {
    const match = /^\s*class\s+(\S+)\s+task\s*$/.exec(line);
    if (match) for (const id of match[1].split(",")) found.add(id);
  }
  return found;
}

export function isTaskState(source: string, state: string): boolean {
  return taskStates(source).has(mermaidId(state));
}

export class StateGraph {
  readonly element: HTMLElement;
  private readonly figure: HTMLElement;
  private readonly caption: HTMLElement;
  private current: string | null = null;
  private rendered: Promise<void>;

  constructor(source: string, label: string) {
    this.caption = h("figcaption", { class: "graph-caption" });
    this.figure = h("div", { class: "graph-canvas", role: "img", "aria-label": label }, h("p", { class: "muted" }, "Drawing the graph…"));
    this.element = h("figure", { class: "graph" }, this.figure, this.caption);
    this.rendered = this.render(source);
  }

  private async render(source: string): Promise<void> {
    try {
      const m = await mermaid();
      counter += 1;
      const { svg } = await m.render(`graph-${counter}`, source);
      // Mermaid's own sanitised output (securityLevel strict).
      this.figure.innerHTML = svg;
      this.figure.dataset.rendered = "true";
    } catch (error) {
      this.figure.replaceChildren(h("p", { class: "notice notice-error" }, `The graph could not be drawn: ${String(error)}`), h("pre", {}, source));
    }
    if (this.current !== null) this.mark(this.current);
  }

  /** Light ``state`` (and only it); resolves once the graph shows it. */
  async highlight(state: string, status: string): Promise<void> {
    this.current = state;
    this.caption.replaceChildren("Current state: ", h("strong", { "data-current-state": state }, state), ` (${status})`);
    await this.rendered;
    this.mark(state);
  }

  private mark(state: string): void {
    // Rows saved by older servers name `__finish__` for a finished instance: the end, [*].
    const id = state === FINISH ? "root_end" : mermaidId(state);
    for (const node of this.figure.querySelectorAll(".sw-current")) {
      node.classList.remove("sw-current");
      node.removeAttribute("data-current");
      for (const shape of node.querySelectorAll<SVGElement>("[data-sw-style]")) {
        shape.setAttribute("style", shape.dataset.swStyle ?? "");
        delete shape.dataset.swStyle;
      }
    }
    // Mermaid names a state's node "<render id>-state-<state id>-<n>".
    const pattern = new RegExp(`(^|-)state-${id}-\\d+$`);
    for (const node of this.figure.querySelectorAll<SVGGElement>("g.node")) {
      if (pattern.test(node.id)) {
        node.classList.add("sw-current");
        node.setAttribute("data-current", state);
        // A classDef's colours are inline and !important: only inline styles outrank them.
        const colour = getComputedStyle(this.figure).getPropertyValue("--current").trim() || "#d9480f";
        for (const shape of node.querySelectorAll<SVGElement>("rect, path, polygon, circle")) {
          shape.dataset.swStyle = shape.getAttribute("style") ?? "";
          shape.style.setProperty("stroke", colour, "important");
          shape.style.setProperty("stroke-width", "4px", "important");
        }
      }
    }
  }
}
