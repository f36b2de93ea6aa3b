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
  /** The outline of the states visited and the edges taken (3:1 on the canvas at least). */
  path: string;
  /** The fill and outline of the state an instance ended in, by its outcome. */
  completed: string;
  completedBorder: string;
  failed: string;
  failedBorder: string;
  cancelled: string;
  cancelledBorder: string;
}

export type Outcome = "completed" | "failed" | "cancelled";

/** A step's transition as the history gives it (a start's comes from no state). */
export interface Taken {
  fromState?: string;
  toState?: string;
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
  path: "#6d28d9",
  completed: "#d9f7e3",
  completedBorder: "#15803d",
  failed: "#fde2e2",
  failedBorder: "#b91c1c",
  cancelled: "#e4e7ec",
  cancelledBorder: "#4b5563",
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
  path: "#c4a7ff",
  completed: "#12301d",
  completedBorder: "#6ee7a0",
  failed: "#3a1414",
  failedBorder: "#ff8a80",
  cancelled: "#2a2f38",
  cancelledBorder: "#c0c6d2",
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
  // The path taken, as Mermaid ids: the states visited and the edges taken ("from>to").
  private readonly visited = new Set<string>();
  private readonly taken = new Set<string>();
  private outcome: Outcome | null = null;

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

  /** Light ``state`` (and only it); resolves once the graph shows it. ``outcome``: how
   * the instance ended, when it has (its state is then coloured by it). */
  async highlight(state: string, status: string, outcome: Outcome | null = null): Promise<void> {
    this.current = state;
    this.outcome = outcome;
    this.caption.replaceChildren("Current state: ", h("strong", { "data-current-state": state }, state), ` (${status})`);
    await this.rendered;
    this.mark(state);
  }

  /** Adds a step's transitions to the path taken (``initial``: the state a first step
   * started in, entered from the start); resolves once the graph shows them. */
  async trace(transitions: readonly Taken[], initial: string | null = null): Promise<void> {
    const all = initial ? [{ toState: initial }, ...transitions] : transitions;
    for (const t of all) {
      const from = t.fromState ? nodeId(t.fromState) : "root_start";
      const to = nodeId(t.toState ?? "");
      this.visited.add(from).add(to);
      this.taken.add(`${from}>${to}`);
    }
    await this.rendered;
    if (this.current !== null) this.mark(this.current);
  }

  /** Draws the marks afresh: the path taken, the outcome, then the current state on top.
   * A classDef's colours are inline and !important: only inline styles outrank them, so
   * each mark is an inline style over the shape's own, which is kept to go back to. */
  private mark(state: string): void {
    for (const shape of this.figure.querySelectorAll<SVGElement>("[data-sw-style]")) {
      shape.setAttribute("style", shape.dataset.swStyle ?? "");
      delete shape.dataset.swStyle;
    }
    for (const node of this.figure.querySelectorAll(".sw-current, .sw-visited, .sw-taken, [data-outcome]")) {
      node.classList.remove("sw-current", "sw-visited", "sw-taken");
      node.removeAttribute("data-current");
      node.removeAttribute("data-outcome");
    }
    const styled = (shape: SVGElement, style: Record<string, string>) => {
      shape.dataset.swStyle ??= shape.getAttribute("style") ?? "";
      for (const [name, value] of Object.entries(style)) shape.style.setProperty(name, value, "important");
    };
    const shapes = "rect, path, polygon, circle";
    const p = palette();
    const nodes = this.nodes();
    const ended = this.outcome === "completed" && state !== FINISH && this.visited.has(nodeId(state))
      ? [nodeId(state), "root_end"] : [nodeId(state)];
    const completedEnd = this.outcome === "completed" && state !== FINISH ? `${nodeId(state)}>root_end` : null;
    for (const [path, [from, to]] of this.edges(nodes)) {
      const key = `${from}>${to}`;
      if (!this.taken.has(key) && key !== completedEnd) continue;
      path.classList.add("sw-taken");
      styled(path, { stroke: p.path, "stroke-width": "3px" });
    }
    for (const [node, id] of nodes) {
      if (this.visited.has(id) || (completedEnd && id === "root_end")) {
        node.classList.add("sw-visited");
        for (const shape of node.querySelectorAll<SVGElement>(shapes)) styled(shape, { stroke: p.path, "stroke-width": "3px" });
      }
      if (this.outcome && ended.includes(id)) {
        node.setAttribute("data-outcome", this.outcome);
        const [fill, border] = {
          completed: [p.completed, p.completedBorder],
          failed: [p.failed, p.failedBorder],
          cancelled: [p.cancelled, p.cancelledBorder],
        }[this.outcome];
        const end = id === "root_end";
        for (const shape of node.querySelectorAll<SVGElement>(shapes)) {
          styled(shape, end ? { stroke: border, "stroke-width": "3px" } : { fill, stroke: border, "stroke-width": "3px" });
        }
      }
    }
    // Rows saved by older servers name `__finish__` for a finished instance: the end, [*].
    const id = nodeId(state);
    const colour = getComputedStyle(this.figure).getPropertyValue("--current").trim() || "#b93d0c";
    for (const [node, nodeOf] of nodes) {
      if (nodeOf !== id) continue;
      node.classList.add("sw-current");
      node.setAttribute("data-current", state);
      if (!this.revealed) this.reveal(node);
      for (const shape of node.querySelectorAll<SVGElement>(shapes)) styled(shape, { stroke: colour, "stroke-width": "4px" });
    }
  }

  /** Each drawn state with its Mermaid id (Mermaid names a state's node
   * "<render id>-state-<state id>-<n>"). */
  private nodes(): Map<SVGGElement, string> {
    const found = new Map<SVGGElement, string>();
    for (const node of this.figure.querySelectorAll<SVGGElement>("g.node")) {
      const match = /(?:^|-)state-(.+)-\d+$/.exec(node.id);
      if (match) found.set(node, match[1]);
    }
    return found;
  }

  /** Each drawn edge with the states it joins. Mermaid's SVG does not name them: an edge
   * joins the nodes nearest its two ends. */
  private edges(nodes: Map<SVGGElement, string>): Map<SVGPathElement, [string, string]> {
    const boxes = [...nodes].map(([node, id]) => [node.getBoundingClientRect(), id] as const);
    const nearest = (x: number, y: number) => {
      let best = "", distance = Infinity;
      for (const [r, id] of boxes) {
        const d = Math.hypot(Math.max(r.left - x, 0, x - r.right), Math.max(r.top - y, 0, y - r.bottom));
        if (d < distance) [best, distance] = [id, d];
      }
      return best;
    };
    const found = new Map<SVGPathElement, [string, string]>();
    for (const path of this.figure.querySelectorAll<SVGPathElement>("path[data-edge]")) {
      const matrix = path.getScreenCTM();
      const length = path.getTotalLength();
      if (!matrix || !length) continue;
      const [a, b] = [path.getPointAtLength(0), path.getPointAtLength(length)].map((point) => new DOMPoint(point.x, point.y).matrixTransform(matrix));
      found.set(path, [nearest(a.x, a.y), nearest(b.x, b.y)]);
    }
    return found;
  }
}

/** The Mermaid id of the node that stands for ``state``: the end, [*], for `__finish__`. */
function nodeId(state: string): string {
  return state === FINISH ? "root_end" : mermaidId(state);
}
