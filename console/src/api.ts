// The console's only back end: the HTTP/JSON API under /api/v1. Requests and answers are
// the API's messages in protobuf's canonical JSON (their types are generated from the
// protos into ./gen), errors in Google's JSON error shape (see ErrorBody).

const TOKEN_KEY = "statewright.token";

export function token(): string | null {
  return sessionStorage.getItem(TOKEN_KEY);
}

export function setToken(value: string | null): void {
  if (value) sessionStorage.setItem(TOKEN_KEY, value);
  else sessionStorage.removeItem(TOKEN_KEY);
}

/** What an ApiError is made of: the gRPC code's name, the message, the ErrorInfo. */
export interface ErrorParts {
  code: string;
  message: string;
  reason: string;
  metadata: Record<string, string>;
}

/** An error as the API answers it (and an `error` event's data), as Google's APIs do:
 * `code` the HTTP status, `status` the gRPC code's name, `details` the gRPC status's
 * details in protobuf JSON, among them one google.rpc.ErrorInfo. */
export interface ErrorBody {
  error: {
    code: number;
    message: string;
    status: string;
    details?: { "@type": string; reason?: string; metadata?: Record<string, string> }[];
  };
}

const ERROR_INFO = "type.googleapis.com/google.rpc.ErrorInfo";

/** The parts of an error body; null when `body` is not one. */
export function errorParts(body: unknown): ErrorParts | null {
  const error = (body as Partial<ErrorBody> | null)?.error;
  if (typeof error !== "object" || error === null || typeof error.status !== "string") return null;
  const info = (error.details ?? []).find((d) => d["@type"] === ERROR_INFO);
  return { code: error.status, message: error.message ?? "", reason: info?.reason ?? "", metadata: info?.metadata ?? {} };
}

/** A refusal or failure as the server stated it: the same code and reason as over gRPC. */
export class ApiError extends Error {
  readonly code: string;
  readonly reason: string;
  readonly metadata: Record<string, string>;
  readonly status: number;

  constructor(parts: ErrorParts, status: number) {
    super(parts.message);
    this.code = parts.code;
    this.reason = parts.reason;
    this.metadata = parts.metadata ?? {};
    this.status = status;
  }
}

/** Told of every 401, so that the page can ask for a token. */
export const authListeners = new Set<(error: ApiError) => void>();

function headers(extra: Record<string, string> = {}): Headers {
  const h = new Headers(extra);
  const t = token();
  if (t) h.set("Authorization", `Bearer ${t}`);
  return h;
}

async function failure(response: Response): Promise<ApiError> {
  let parts: ErrorParts | null = null;
  try {
    parts = errorParts(await response.json());
  } catch {
    // Not JSON (a proxy's page): told by its HTTP status below.
  }
  parts ??= { code: "UNKNOWN", message: `HTTP ${response.status} ${response.statusText}`, reason: "", metadata: {} };
  const error = new ApiError(parts, response.status);
  if (response.status === 401) for (const listener of authListeners) listener(error);
  return error;
}

function networkError(cause: unknown): ApiError {
  const detail = cause instanceof Error ? cause.message : String(cause);
  return new ApiError(
    { code: "UNAVAILABLE", message: `the server cannot be reached (${detail})`, reason: "NETWORK", metadata: {} },
    0,
  );
}

export async function get<T>(path: string, query: Record<string, string | number | undefined> = {}): Promise<T> {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(query)) {
    if (value !== undefined && value !== "") params.set(key, String(value));
  }
  const url = params.size ? `${path}?${params}` : path;
  let response: Response;
  try {
    response = await fetch(url, { headers: headers({ Accept: "application/json" }) });
  } catch (cause) {
    throw networkError(cause);
  }
  if (!response.ok) throw await failure(response);
  return (await response.json()) as T;
}

export async function post<T>(path: string, body: unknown): Promise<T> {
  let response: Response;
  try {
    response = await fetch(path, {
      method: "POST",
      headers: headers({ "Content-Type": "application/json", Accept: "application/json" }),
      body: JSON.stringify(body),
    });
  } catch (cause) {
    throw networkError(cause);
  }
  if (!response.ok) throw await failure(response);
  return (await response.json()) as T;
}

export type StreamState = "connecting" | "live" | "reconnecting" | "ended" | "failed";

export interface StreamHandlers {
  /** One event: its type, its data (parsed JSON) and its id. */
  event(type: string, data: unknown, id: string | null): void;
  state?(state: StreamState, error?: ApiError): void;
}

export interface Stream {
  close(): void;
}

const MAX_BACKOFF_MS = 10_000;

/**
 * Server-Sent Events over fetch (an EventSource cannot send a bearer token). A dropped
 * connection is resumed with Last-Event-ID, the id of the last event received, so that no
 * revision is lost or repeated; UNAVAILABLE (a drain) reconnects too; an `end` event, a 204
 * or another error ends the stream.
 *
 * A hidden page (a tab in the background, or a page the browser keeps for its Back button)
 * lets go of its connection and resumes the same way once it is shown again: a browser
 * opens at most six connections to one server, each open stream holds one, and a seventh
 * tab or page would wait for one.
 */
export function stream(path: string, handlers: StreamHandlers): Stream {
  let attempt: AbortController | null = null;
  let lastId: string | null = null;
  let retry = 1000;
  let failures = 0;
  let closed = false;
  let shown: (() => void) | null = null;

  const setState = (state: StreamState, error?: ApiError) => handlers.state?.(state, error);
  const hidden = () => document.visibilityState === "hidden";
  const visibility = () => {
    if (hidden()) attempt?.abort();
    else shown?.();
  };
  const watched: [EventTarget, string][] = [
    [document, "visibilitychange"],
    [window, "pagehide"],
    [window, "pageshow"],
  ];
  for (const [target, type] of watched) target.addEventListener(type, visibility);

  async function once(): Promise<"again" | "stop" | "hidden"> {
    const h = headers({ Accept: "text/event-stream" });
    if (lastId !== null) h.set("Last-Event-ID", lastId);
    attempt = new AbortController();
    let response: Response;
    try {
      response = await fetch(path, { headers: h, signal: attempt.signal, cache: "no-store" });
    } catch (cause) {
      if (closed) return "stop";
      if (hidden()) return "hidden";
      setState("reconnecting", networkError(cause));
      return "again";
    }
    if (response.status === 204) {
      setState("ended");
      return "stop";
    }
    if (!response.ok || response.body === null) {
      const error = await failure(response);
      if (error.code === "UNAVAILABLE") {
        setState("reconnecting", error);
        return "again";
      }
      setState("failed", error);
      return "stop";
    }
    failures = 0;
    setState("live");
    const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = "";
    let type = "message";
    let data: string[] = [];
    let id: string | null = null;
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buffer += value;
        let newline: number;
        while ((newline = buffer.search(/\r\n|\r|\n/)) >= 0) {
          const line = buffer.slice(0, newline);
          buffer = buffer.slice(newline + (buffer.startsWith("\r\n", newline) ? 2 : 1));
          if (line === "") {
            if (data.length) {
              if (id !== null) lastId = id;
              const text = data.join("\n");
              if (type === "end") {
                setState("ended");
                return "stop";
              }
              const parsed: unknown = JSON.parse(text);
              if (type === "error") {
                const error = new ApiError(
                  errorParts(parsed) ?? { code: "UNKNOWN", message: text, reason: "", metadata: {} },
                  0,
                );
                if (error.code === "UNAVAILABLE") {
                  setState("reconnecting", error);
                  return "again";
                }
                setState("failed", error);
                return "stop";
              }
              handlers.event(type, parsed, id);
            }
            type = "message";
            data = [];
            id = null;
            continue;
          }
          if (line.startsWith(":")) continue;
          const colon = line.indexOf(":");
          const field = colon < 0 ? line : line.slice(0, colon);
          let value = colon < 0 ? "" : line.slice(colon + 1);
          if (value.startsWith(" ")) value = value.slice(1);
          if (field === "data") data.push(value);
          else if (field === "event") type = value;
          else if (field === "id") id = value;
          else if (field === "retry" && /^\d+$/.test(value)) retry = Number(value);
        }
      }
    } catch (cause) {
      if (closed) return "stop";
      if (hidden()) return "hidden";
      setState("reconnecting", networkError(cause));
      return "again";
    }
    if (closed) return "stop";
    setState("reconnecting");
    return "again";
  }

  void (async () => {
    setState("connecting");
    while (!closed) {
      if (hidden()) {
        await new Promise<void>((resolve) => (shown = resolve));
        shown = null;
        if (closed) return;
        setState("reconnecting");
        continue;
      }
      let next: "again" | "stop" | "hidden";
      try {
        next = await once();
      } catch (cause) {
        // Reading an error's body was cut off (closed or hidden meanwhile), or it broke.
        if (closed) return;
        next = hidden() ? "hidden" : "again";
        if (next === "again") setState("reconnecting", networkError(cause));
      }
      if (next === "stop" || closed) return;
      if (next === "hidden") continue; // let go on purpose: no failure, no backoff
      failures += 1;
      const wait = Math.min(MAX_BACKOFF_MS, retry * 2 ** Math.max(0, failures - 1));
      await new Promise((resolve) => setTimeout(resolve, wait));
    }
  })();

  return {
    close() {
      closed = true;
      attempt?.abort();
      for (const [target, type] of watched) target.removeEventListener(type, visibility);
      shown?.();
    },
  };
}
