import type { DescMessage, DescMethodStreaming, DescMethodUnary, MessageInitShape } from "@bufbuild/protobuf";
import { Code, ConnectError, type ContextValues, type StreamResponse, type Transport, type UnaryResponse } from "@connectrpc/connect";

import { retryDelayMs } from "./error_info.js";

/** A gRPC service config (the subset this client applies: methodConfig). */
export interface ServiceConfig {
  readonly methodConfig?: readonly MethodConfig[];
}

export interface MethodConfig {
  readonly name: readonly { readonly service?: string; readonly method?: string }[];
  /** A protobuf JSON duration, for example "10s". */
  readonly timeout?: string;
  readonly retryPolicy?: RetryPolicyConfig;
}

export interface RetryPolicyConfig {
  readonly maxAttempts: number;
  readonly initialBackoff: string;
  readonly maxBackoff: string;
  readonly backoffMultiplier: number;
  /** Canonical code names, for example "UNAVAILABLE". */
  readonly retryableStatusCodes: readonly string[];
}

/** What the service config says about one method, in milliseconds and connect Codes. */
export interface MethodPolicy {
  timeoutMs?: number;
  retry?: {
    maxAttempts: number;
    initialBackoffMs: number;
    maxBackoffMs: number;
    backoffMultiplier: number;
    retryableCodes: ReadonlySet<Code>;
  };
}

/** Converts a protobuf JSON duration ("0.1s", "10s") to milliseconds. */
export function parseDuration(duration: string): number {
  const m = /^(\d+)(?:\.(\d{1,9}))?s$/.exec(duration);
  if (!m) {
    throw new Error(`service config: invalid duration ${JSON.stringify(duration)}`);
  }
  const [, seconds = "0", fraction = ""] = m;
  return Number(seconds) * 1000 + Number(`0.${fraction || "0"}`) * 1000;
}

const codeByName: ReadonlyMap<string, Code> = new Map([
  ["CANCELLED", Code.Canceled],
  ["UNKNOWN", Code.Unknown],
  ["INVALID_ARGUMENT", Code.InvalidArgument],
  ["DEADLINE_EXCEEDED", Code.DeadlineExceeded],
  ["NOT_FOUND", Code.NotFound],
  ["ALREADY_EXISTS", Code.AlreadyExists],
  ["PERMISSION_DENIED", Code.PermissionDenied],
  ["RESOURCE_EXHAUSTED", Code.ResourceExhausted],
  ["FAILED_PRECONDITION", Code.FailedPrecondition],
  ["ABORTED", Code.Aborted],
  ["OUT_OF_RANGE", Code.OutOfRange],
  ["UNIMPLEMENTED", Code.Unimplemented],
  ["INTERNAL", Code.Internal],
  ["UNAVAILABLE", Code.Unavailable],
  ["DATA_LOSS", Code.DataLoss],
  ["UNAUTHENTICATED", Code.Unauthenticated],
]);

/** The canonical gRPC name of a code ("ABORTED"); "OK" for 0. */
export function codeName(code: Code | 0): string {
  for (const [name, c] of codeByName) {
    if (c === code) {
      return name;
    }
  }
  return code === 0 ? "OK" : `CODE(${String(code)})`;
}

/**
 * The policy for one method, chosen as gRPC does: the entry naming the service and method,
 * else the entry naming only the service, else the entry with an empty name.
 */
export function methodPolicy(config: ServiceConfig, service: string, method: string): MethodPolicy {
  const entries = config.methodConfig ?? [];
  const find = (match: (n: { service?: string; method?: string }) => boolean) =>
    entries.find((e) => e.name.some(match));
  const entry =
    find((n) => n.service === service && n.method === method) ??
    find((n) => n.service === service && !n.method) ??
    find((n) => !n.service && !n.method);
  if (!entry) {
    return {};
  }
  const policy: MethodPolicy = {};
  if (entry.timeout !== undefined) {
    policy.timeoutMs = parseDuration(entry.timeout);
  }
  const rp = entry.retryPolicy;
  if (rp) {
    const retryableCodes = new Set<Code>();
    for (const name of rp.retryableStatusCodes) {
      const code = codeByName.get(name.toUpperCase());
      if (code === undefined) {
        throw new Error(`service config: unknown status code ${JSON.stringify(name)}`);
      }
      retryableCodes.add(code);
    }
    policy.retry = {
      // gRPC caps maxAttempts at 5.
      maxAttempts: Math.min(Math.max(rp.maxAttempts, 1), 5),
      initialBackoffMs: parseDuration(rp.initialBackoff),
      maxBackoffMs: parseDuration(rp.maxBackoff),
      backoffMultiplier: rp.backoffMultiplier,
      retryableCodes,
    };
  }
  return policy;
}

export interface ServiceConfigTransportOptions {
  /** Jitter source in [0, 1); Math.random by default. */
  random?: () => number;
}

/**
 * Wraps a transport so that every call follows the service config, as gRPC's own service
 * config support does: the method's timeout applies unless the caller's is shorter, and
 * calls failing with a retryable code are retried with jittered exponential backoff, up to
 * maxAttempts, within that one deadline (waiting at least what a RetryInfo in the error
 * asks for, and giving up at once when that would pass the deadline). A server-streaming call is retried only while no
 * response has started (the transport's stream() rejected); an error after that is final.
 */
export function withServiceConfig(
  inner: Transport,
  config: ServiceConfig,
  options: ServiceConfigTransportOptions = {},
): Transport {
  const random = options.random ?? Math.random;
  const policies = new Map<string, MethodPolicy>();
  const policyFor = (method: { parent: { typeName: string }; name: string }): MethodPolicy => {
    const key = `${method.parent.typeName}/${method.name}`;
    let policy = policies.get(key);
    if (!policy) {
      policy = methodPolicy(config, method.parent.typeName, method.name);
      policies.set(key, policy);
    }
    return policy;
  };

  async function withRetries<R>(
    policy: MethodPolicy,
    signal: AbortSignal | undefined,
    callerTimeoutMs: number | undefined,
    attempt: (timeoutMs: number | undefined) => Promise<R>,
  ): Promise<R> {
    const timeoutMs = minDefined(callerTimeoutMs, policy.timeoutMs);
    const deadline = timeoutMs === undefined ? undefined : Date.now() + timeoutMs;
    const retry = policy.retry;
    for (let n = 1; ; n++) {
      const remaining = deadline === undefined ? undefined : deadline - Date.now();
      if (remaining !== undefined && remaining <= 0) {
        throw new ConnectError("deadline exceeded before the call could be retried", Code.DeadlineExceeded);
      }
      try {
        return await attempt(remaining);
      } catch (err) {
        const code = ConnectError.from(err).code;
        if (!retry || n >= retry.maxAttempts || !retry.retryableCodes.has(code) || signal?.aborted) {
          throw err;
        }
        const cap = Math.min(retry.initialBackoffMs * retry.backoffMultiplier ** (n - 1), retry.maxBackoffMs);
        // A RetryInfo is the server saying when it can take the call: never sooner.
        const delay = Math.max(random() * cap, retryDelayMs(err) ?? 0);
        if (deadline !== undefined && Date.now() + delay >= deadline) {
          throw err;
        }
        if (!(await sleep(delay, signal))) {
          throw err;
        }
      }
    }
  }

  return {
    unary<I extends DescMessage, O extends DescMessage>(
      method: DescMethodUnary<I, O>,
      signal: AbortSignal | undefined,
      timeoutMs: number | undefined,
      header: HeaderInit,
      input: MessageInitShape<I>,
      contextValues?: ContextValues,
    ): Promise<UnaryResponse<I, O>> {
      return withRetries(policyFor(method), signal, timeoutMs, (remaining) =>
        inner.unary(method, signal, remaining, header, input, contextValues),
      );
    },

    async stream<I extends DescMessage, O extends DescMessage>(
      method: DescMethodStreaming<I, O>,
      signal: AbortSignal | undefined,
      timeoutMs: number | undefined,
      header: HeaderInit,
      input: AsyncIterable<MessageInitShape<I>>,
      contextValues?: ContextValues,
    ): Promise<StreamResponse<I, O>> {
      const policy = policyFor(method);
      if (method.methodKind !== "server_streaming") {
        // Client and bidi streams cannot replay their input: deadline only, no retries.
        return inner.stream(method, signal, minDefined(timeoutMs, policy.timeoutMs), header, input, contextValues);
      }
      const requests: MessageInitShape<I>[] = [];
      for await (const request of input) {
        requests.push(request);
      }
      return withRetries(policy, signal, timeoutMs, (remaining) =>
        inner.stream(method, signal, remaining, header, replay(requests), contextValues),
      );
    },
  };
}

/** The request headers a Transport accepts (the global HeadersInit, which lib.dom would name). */
type HeaderInit = Parameters<Transport["unary"]>[3];

function minDefined(a: number | undefined, b: number | undefined): number | undefined {
  if (a === undefined || a <= 0) {
    return b;
  }
  return b === undefined ? a : Math.min(a, b);
}

async function* replay<T>(items: readonly T[]): AsyncIterable<T> {
  yield* items;
}

/** Waits ms milliseconds; false when the signal aborted the wait. */
function sleep(ms: number, signal: AbortSignal | undefined): Promise<boolean> {
  return new Promise((resolve) => {
    if (signal?.aborted) {
      resolve(false);
      return;
    }
    const onAbort = () => {
      clearTimeout(timer);
      resolve(false);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve(true);
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
