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

// The graph's colours, one set per colour scheme, each text at least 4.5:1 on what it is
// drawn on (tests/e2e/console measures them). Mermaid's own themes miss that in dark mode:
// the server's classDefs give task and wait states light fills, which its dark theme
// writes light text on.
interface Palette {
  canvas: string;
  node: string;
  text: string;
  border: string;
  line: string;
  wait: string;
  waitBorder: string;
  task: string;
  taskBorder: string;
  unvisited: string;
  unvisitedBorder: string;
}

const LIGHT: Palette = {
  canvas: "#f1f3f7",
  node: "#ffffff",
  text: "#1b1f27",
  border: "#586174",
  line: "#586174",
  wait: "#fff3c4",
  waitBorder: "#8a5a00",
  task: "#dbeafe",
  taskBorder: "#1d4ed8",
  unvisited: "#fde2e2",
  unvisitedBorder: "#b91c1c",
};

const DARK: Palette = {
  canvas: "#11151c",
  node: "#1d222c",
  text: "#e7eaf0",
  border: "#a3abbc",
  line: "#a3abbc",
  wait: "#3a2c12",
  waitBorder: "#ffc766",
  task: "#1c2740",
  taskBorder: "#8fb0ff",
  unvisited: "#3a1d1b",
  unvisitedBorder: "#ff8a80",
};

export function palette(): Palette {
  return dark() ? DARK : LIGHT;
}

/** The server's class colours (definitions/graph.py) swapped for the scheme's own. */
export function themed(source: string, p: Palette = palette()): string {
  const classes: Record<string, string> = {
    wait: `fill:${p.wait},stroke:${p.waitBorder},stroke-width:2px,color:${p.text}`,
    task: `fill:${p.task},stroke:${p.taskBorder},stroke-width:2px,color:${p.text}`,
    unvisited: `fill:${p.unvisited},stroke:${p.unvisitedBorder},stroke-width:2px,stroke-dasharray:5 5,color:${p.text}`,
  };
  return source.replace(/^(\s*classDef\s+)(\w+)\s+.*$/gm, (line, head: string, name: string) =>
    classes[name] === undefined ? line : `${head}${name} ${classes[name]}`,
  );
}

async function mermaid(): Promise<Mermaid> {
  // Mermaid is most of the bundle: loaded once a page first shows a graph.
  loading ??= import("mermaid").then(({ default: m }) => m);
  const m = await loading;
  const p = palette();
  m.initialize({
    startOnLoad: false,
    // Mermaid's own default is ELK, which the console does not ship (build.mjs).
    layout: "dagre",
    securityLevel: "strict",
    theme: "base",
    themeVariables: {
      darkMode: dark(),
      background: p.canvas,
      fontFamily: "inherit",
      primaryColor: p.node,
      primaryTextColor: p.text,
      primaryBorderColor: p.border,
      secondaryColor: p.node,
      tertiaryColor: p.node,
      mainBkg: p.node,
      nodeBorder: p.border,
      textColor: p.text,
      lineColor: p.line,
      stateLabelColor: p.text,
      transitionColor: p.line,
      transitionLabelColor: p.text,
      edgeLabelBackground: p.node,
      labelBackgroundColor: p.node,
    },
    fontFamily: "inherit",
    state: { useMaxWidth: true },
  });
  return m;
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

// Below this share of its natural size a graph's labels are too small to read (on a phone,
// a wide graph fitted to the screen): it is shown at its natural size and scrolls instead.
const SMALLEST_FIT = 0.6;
const ZOOM_STEP = 1.25;

export class StateGraph {
  readonly element: HTMLElement;
  private readonly figure: HTMLElement;
  private readonly caption: HTMLElement;
  private readonly zoomLabel: HTMLElement;
  private current: string | null = null;
  private rendered: Promise<void>;
  private revealed = false;

  constructor(source: string, label: string) {
    this.caption = h("figcaption", { class: "graph-caption" });
    this.figure = h("div", { class: "graph-canvas", role: "img", "aria-label": label }, h("p", { class: "muted" }, "Drawing the graph…"));
    this.zoomLabel = h("span", { class: "zoom-level", "aria-live": "polite" });
    const tool = (text: string, name: string, act: () => void) =>
      h("button", { type: "button", class: "button subtle tool", "aria-label": name, title: name, "data-zoom": name.toLowerCase().replaceAll(" ", "-"), onclick: act }, text);
    const tools = h("div", { class: "graph-tools", role: "toolbar", "aria-label": "Graph view" },
      tool("−", "Zoom out", () => this.setZoom(this.scale() / ZOOM_STEP)),
      tool("Fit", "Fit to width", () => this.setZoom("fit")),
      tool("+", "Zoom in", () => this.setZoom(this.scale() * ZOOM_STEP)),
      this.zoomLabel,
    );
    this.element = h("figure", { class: "graph" }, tools, this.figure, this.caption);
    this.pannable();
    this.rendered = this.render(source);
  }

  private svg(): SVGSVGElement | null {
    return this.figure.querySelector("svg");
  }

  /** The drawn width, from the viewBox Mermaid gives the SVG. */
  private natural(): number {
    return this.svg()?.viewBox.baseVal?.width || 0;
  }

  /** The share of the drawn size shown now. */
  private scale(): number {
    const svg = this.svg();
    const natural = this.natural();
    if (!svg || !natural) return 1;
    return svg.getBoundingClientRect().width / natural;
  }

  /** "fit": as wide as the box allows, never wider than drawn; a number: that share of the
   * drawn size, scrolled (or dragged) within the box. */
  private setZoom(zoom: "fit" | number): void {
    const svg = this.svg();
    const natural = this.natural();
    if (!svg || !natural) return;
    if (zoom === "fit") {
      svg.style.width = "100%";
      svg.style.maxWidth = `${natural}px`;
      svg.style.maxHeight = "";
      this.figure.dataset.zoom = "fit";
    } else {
      const scale = Math.min(4, Math.max(0.25, zoom));
      svg.style.width = `${Math.round(natural * scale)}px`;
      svg.style.maxWidth = "none";
      svg.style.maxHeight = "none";
      this.figure.dataset.zoom = scale.toFixed(2);
    }
    svg.style.height = "auto";
    const scrolls = this.figure.scrollWidth > this.figure.clientWidth + 1 || this.figure.scrollHeight > this.figure.clientHeight + 1;
    // A box that scrolls is reachable by keyboard too (arrow keys scroll it).
    if (scrolls) this.figure.setAttribute("tabindex", "0");
    else this.figure.removeAttribute("tabindex");
    this.zoomLabel.textContent = `${Math.round(this.scale() * 100)}%`;
  }

  /** A graph larger than its box opens on the current state (once: then it is the
   * reader's to pan). */
  private reveal(node: SVGGElement): void {
    this.revealed = true;
    const box = this.figure.getBoundingClientRect();
    const at = node.getBoundingClientRect();
    this.figure.scrollLeft += at.left + at.width / 2 - (box.left + box.width / 2);
    this.figure.scrollTop += at.top + at.height / 2 - (box.top + box.height / 2);
  }

  /** Dragging the graph pans it within its box. */
  private pannable(): void {
    let from: { x: number; y: number; left: number; top: number } | null = null;
    this.figure.addEventListener("pointerdown", (event) => {
      if (event.button !== 0 || this.figure.scrollWidth <= this.figure.clientWidth && this.figure.scrollHeight <= this.figure.clientHeight) return;
      from = { x: event.clientX, y: event.clientY, left: this.figure.scrollLeft, top: this.figure.scrollTop };
      this.figure.setPointerCapture(event.pointerId);
      this.figure.classList.add("panning");
    });
    this.figure.addEventListener("pointermove", (event) => {
      if (!from) return;
      this.figure.scrollLeft = from.left - (event.clientX - from.x);
      this.figure.scrollTop = from.top - (event.clientY - from.y);
    });
    const stop = () => {
      from = null;
      this.figure.classList.remove("panning");
    };
    this.figure.addEventListener("pointerup", stop);
    this.figure.addEventListener("pointercancel", stop);
  }

  private async render(source: string): Promise<void> {
    try {
      const m = await mermaid();
      counter += 1;
      const { svg } = await m.render(`graph-${counter}`, themed(source));
      // Mermaid's own sanitised output (securityLevel strict).
      this.figure.innerHTML = svg;
      this.figure.dataset.rendered = "true";
      const natural = this.natural();
      const room = this.figure.clientWidth;
      this.setZoom(natural && room && room / natural < SMALLEST_FIT ? 1 : "fit");
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
        if (!this.revealed) this.reveal(node);
        // A classDef's colours are inline and !important: only inline styles outrank them.
        const colour = getComputedStyle(this.figure).getPropertyValue("--current").trim() || "#b93d0c";
        for (const shape of node.querySelectorAll<SVGElement>("rect, path, polygon, circle")) {
          shape.dataset.swStyle = shape.getAttribute("style") ?? "";
          shape.style.setProperty("stroke", colour, "important");
          shape.style.setProperty("stroke-width", "4px", "important");
        }
      }
    }
  }
}
