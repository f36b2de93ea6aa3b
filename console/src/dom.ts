// A small DOM builder: elements with attributes and children, text always as text nodes
// (never parsed as HTML), so that nothing a workflow holds can inject markup.

type Child = Node | string | number | null | undefined | false;
export type Children = Child | Children[];
type Attributes = Record<string, string | number | boolean | null | undefined | EventListener>;

export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attributes: Attributes = {},
  ...children: Children[]
): HTMLElementTagNameMap[K] {
  const element = document.createElement(tag);
  for (const [key, value] of Object.entries(attributes)) {
    if (value === null || value === undefined || value === false) continue;
    if (typeof value === "function") element.addEventListener(key.replace(/^on/, ""), value);
    else if (value === true) element.setAttribute(key, "");
    else element.setAttribute(key, String(value));
  }
  append(element, ...children);
  return element;
}

export function append(parent: Node, ...children: Children[]): void {
  for (const child of children) {
    if (Array.isArray(child)) append(parent, ...child);
    else if (child === null || child === undefined || child === false) continue;
    else parent.appendChild(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

export function replace(parent: Element, ...children: Children[]): void {
  parent.replaceChildren();
  append(parent, ...children);
}

/** A link the console's router follows without reloading the page. */
export function link(href: string, ...children: Children[]): HTMLAnchorElement {
  return h("a", { href, "data-route": true }, ...children);
}

/**
 * Runs ``apply`` when a choice is picked from ``select`` with the pointer, or confirmed with
 * Enter; not when arrow keys move through a closed select, which in Chromium changes its
 * value at once: navigating then would take a keyboard user away on every key
 * (WCAG 3.2.2, on input). The form's own button applies what the keys chose.
 */
export function onPick(select: HTMLSelectElement, apply: () => void): void {
  let keyed = false;
  select.addEventListener("keydown", (event) => {
    if (event.key === "Enter") {
      event.preventDefault();
      apply();
    } else keyed = true;
  });
  select.addEventListener("pointerdown", () => {
    keyed = false;
  });
  select.addEventListener("change", () => {
    if (!keyed) apply();
  });
}

/**
 * Names each body cell of the tables under ``root`` by its column's header (data-label):
 * on a narrow screen a table reflows into one block per row, each value under its name
 * (style.css), instead of scrolling sideways.
 */
export function labelCells(root: ParentNode): void {
  for (const table of root.querySelectorAll<HTMLTableElement>("table.data")) {
    const heads = [...(table.tHead?.rows[0]?.cells ?? [])].map((c) => c.textContent?.trim() ?? "");
    for (const body of table.tBodies) {
      for (const row of body.rows) {
        let column = 0;
        for (const cell of row.cells) {
          const name = cell.colSpan === 1 ? heads[column] : undefined;
          if (name && cell.dataset.label !== name) cell.dataset.label = name;
          column += cell.colSpan;
        }
      }
    }
  }
}
