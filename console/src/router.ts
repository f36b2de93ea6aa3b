// Path routes of the console, followed without reloading (history API).

export type Cleanup = () => void;
export interface Page {
  title: string;
  /** Draws into ``main``; returns what stops its streams and timers. */
  render(main: HTMLElement): Cleanup | void;
}
export type Route = (params: string[], query: URLSearchParams) => Page;

const routes: [RegExp, Route][] = [];
let cleanup: Cleanup | void = undefined;
let fallback: Route | null = null;

export function route(pattern: RegExp, page: Route): void {
  routes.push([pattern, page]);
}

export function notFound(page: Route): void {
  fallback = page;
}

/** Goes to ``href``; ``state`` is kept with that history entry (what its page remembers
 * that the URL need not carry, such as the way back through a listing's pages). */
export function navigate(href: string, replace = false, state: unknown = null): void {
  if (replace) history.replaceState(state, "", href);
  else history.pushState(state, "", href);
  void show(!replace);
}

export async function show(focus = false): Promise<void> {
  const main = document.getElementById("content") as HTMLElement;
  if (cleanup) cleanup();
  cleanup = undefined;
  const path = decodeURI(location.pathname);
  const query = new URLSearchParams(location.search);
  let page: Page | null = null;
  for (const [pattern, make] of routes) {
    const match = pattern.exec(path);
    if (match) {
      page = make(match.slice(1), query);
      break;
    }
  }
  page ??= fallback ? fallback([path], query) : null;
  if (page === null) return;
  document.title = `${page.title} · Statewright`;
  main.replaceChildren();
  for (const link of document.querySelectorAll<HTMLAnchorElement>("[data-nav]")) {
    if (path.startsWith(`/${link.dataset.nav}`)) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
  cleanup = page.render(main);
  if (focus) main.focus({ preventScroll: false });
}

export function start(): void {
  document.addEventListener("click", (event) => {
    if (event.defaultPrevented || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
    const anchor = (event.target as Element | null)?.closest?.("a[data-route]") as HTMLAnchorElement | null;
    if (!anchor || anchor.origin !== location.origin) return;
    event.preventDefault();
    navigate(anchor.pathname + anchor.search);
  });
  window.addEventListener("popstate", () => void show());
  void show();
}
