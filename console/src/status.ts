import type { ApiError, StreamState } from "./api.js";

const WORDS: Record<StreamState, string> = {
  connecting: "Connecting…",
  live: "Live",
  reconnecting: "Reconnecting…",
  ended: "Up to date",
  failed: "Not live",
};

/** The header's indicator of the page's live stream: a word and a dot. */
export function connection(state: StreamState | null, error?: ApiError): void {
  const element = document.getElementById("connection");
  if (!element) return;
  if (state === null) {
    element.textContent = "";
    element.removeAttribute("data-state");
    return;
  }
  element.dataset.state = state;
  element.textContent = WORDS[state];
  element.title = error ? `${error.code}: ${error.message}` : "";
}
