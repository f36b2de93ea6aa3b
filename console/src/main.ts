import * as api from "./api.js";
import { h, labelCells } from "./dom.js";
import { batchPage, batchesPage } from "./pages/batches.js";
import { definitionPage, definitionsPage } from "./pages/definitions.js";
import { runtimePage } from "./pages/runtime.js";
import { schedulesPage } from "./pages/schedules.js";
import { workflowPage } from "./pages/workflow.js";
import { workflowsPage } from "./pages/workflows.js";
import { navigate, notFound, route, start } from "./router.js";

route(/^\/$/, () => ({ title: "Workflows", render: () => navigate("/workflows", true) }));
route(/^\/workflows\/?$/, (_, query) => workflowsPage(query));
route(/^\/workflows\/([^/]+)$/, ([id]) => workflowPage(id));
route(/^\/definitions\/?$/, () => definitionsPage());
route(/^\/definitions\/([^/]+)$/, ([name], query) => definitionPage(name, query));
route(/^\/schedules\/?$/, () => schedulesPage());
route(/^\/batches\/?$/, (_, query) => batchesPage(query));
route(/^\/batches\/([^/]+)$/, ([id]) => batchPage(id));
route(/^\/runtime\/?$/, () => runtimePage());
notFound(([path]) => ({
  title: "Not found",
  render(main) {
    main.append(h("div", { class: "page-head" }, h("h1", {}, "Nothing here"), h("p", { class: "lede" }, `The console has no page ${path}.`)));
  },
}));

const dialog = document.getElementById("token-dialog") as HTMLDialogElement;
const input = document.getElementById("token-input") as HTMLInputElement;
const button = document.getElementById("sign-in") as HTMLButtonElement;

function showToken(): void {
  button.textContent = api.token() ? "Token set" : "Token";
  button.setAttribute("aria-label", api.token() ? "Bearer token set: change it" : "Set a bearer token");
}

button.addEventListener("click", () => {
  input.value = api.token() ?? "";
  dialog.showModal();
});
dialog.addEventListener("close", () => {
  if (dialog.returnValue === "save") api.setToken(input.value.trim() || null);
  else if (dialog.returnValue === "clear") api.setToken(null);
  else return;
  input.value = "";
  showToken();
  navigate(location.pathname + location.search, true);
});
api.authListeners.add(() => {
  if (!dialog.open) {
    button.classList.add("attention");
    button.textContent = "Token needed";
  }
});

// The top bar is sticky: what takes the focus is scrolled into view below it, not under
// it (scroll-padding-top in style.css reads its height, which changes as it wraps).
const topbar = document.querySelector<HTMLElement>(".topbar");
if (topbar) {
  new ResizeObserver(() => document.documentElement.style.setProperty("--topbar-height", `${topbar.offsetHeight}px`)).observe(topbar);
}

// Whatever table a page draws, or redraws rows of, can reflow on a narrow screen.
const content = document.getElementById("content") as HTMLElement;
new MutationObserver((records) => {
  const rows = records.some((r) => [...r.addedNodes].some((n) => n instanceof Element && (n.matches("table, tbody, tr") || n.querySelector("tr") !== null)));
  if (rows) labelCells(content);
}).observe(content, { childList: true, subtree: true });

showToken();
start();
