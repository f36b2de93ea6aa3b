import { X509Certificate } from "node:crypto";
import { readFileSync } from "node:fs";
import type { SecureClientSessionOptions } from "node:http2";
import { isIPv4 } from "node:net";
import { createSecureContext } from "node:tls";

import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";

/**
 * A certificate, a key or a CA bundle: a string is the path of a PEM file, unless it is PEM
 * text itself (it starts with `-----BEGIN`); bytes are PEM.
 */
export type PemSource = string | Uint8Array;

/** A token with the time it stops being good, so that it can be reused until then. */
export interface BearerToken {
  readonly token: string;
  /**
   * When the token expires (a Date, or milliseconds since the epoch). The client reuses it
   * until shortly before then (30 s, or half its remaining life when that is shorter);
   * without it, until a call is answered UNAUTHENTICATED.
   */
  readonly expiresAt?: Date | number;
}

/**
 * Gives the token for the next call. A plain string is used for that one call: the provider
 * is asked again for the next. A BearerToken is kept until it is about to expire, or until
 * the server answers a call that carried it with UNAUTHENTICATED. Calls that start while
 * the provider runs share its answer. When it throws, the call fails with that error if it
 * is a ConnectError, else with UNAVAILABLE (as gRPC does for failed call credentials), so
 * that the worker and the watch back off and ask again instead of giving up.
 */
export type TokenProvider = () => string | BearerToken | Promise<string | BearerToken>;

/** How a client reaches its server: TLS, mTLS and a bearer token. */
export interface SecurityOptions {
  /**
   * TLS on or off. By default it is on when the target is an `https://` URL or when any of
   * ca, cert and key is given, and off otherwise.
   */
  tls?: boolean;
  /** The CA bundle that the server's certificate must chain to; by default Node's roots. */
  ca?: PemSource;
  /** A client certificate (chain) for mTLS; needs key. */
  cert?: PemSource;
  /** The client certificate's private key; needs cert. */
  key?: PemSource;
  /** The name the server's certificate must carry when it is not the target's host. */
  serverName?: string;
  /**
   * Sent as `authorization: Bearer <token>` with every call of both services, streams
   * included: a fixed string, or a provider asked for each call (see TokenProvider).
   */
  token?: string | TokenProvider;
  /**
   * Allows a token to go in plaintext (TLS off) to a host that is not loopback. Without it
   * such a client is refused when it is made, since anyone on the path could read the token.
   */
  insecure?: boolean;
}

/** What createGrpcTransport needs to apply SecurityOptions. */
export interface ResolvedSecurity {
  baseUrl: string;
  /** TLS settings for http2.connect, when TLS is on. */
  nodeOptions: SecureClientSessionOptions | undefined;
  /** Adds the bearer token to each call, when there is one. */
  interceptor: Interceptor | undefined;
}

/** Thrown when client options contradict each other or name files that cannot be read. */
export class StatewrightConfigError extends Error {
  override readonly name = "StatewrightConfigError";
}

const DEFAULT_ADDRESS = "127.0.0.1:50051";

/**
 * Turns a target ("host:port" or an http(s) URL) and security options into a base URL, TLS
 * settings and a token interceptor; throws a StatewrightConfigError for what cannot work.
 * PEM files are read, and the TLS material parsed, now, so that a wrong path or a key that
 * does not match its certificate fails here rather than at the first call.
 */
export function resolveSecurity(target: string, options: SecurityOptions, clock: () => number = Date.now): ResolvedSecurity {
  const url = parseTarget(target);
  const scheme = target.includes("://") ? url.protocol : undefined;
  const material = options.ca !== undefined || options.cert !== undefined || options.key !== undefined;
  if (options.tls === false && material) {
    throw new StatewrightConfigError("statewright client: tls is false, but a CA, certificate or key was given");
  }
  if (scheme === "https:" && options.tls === false) {
    throw new StatewrightConfigError(`statewright client: tls is false, but the target ${target} is https`);
  }
  if (scheme === "http:" && (options.tls === true || material)) {
    throw new StatewrightConfigError(`statewright client: the target ${target} is http, but TLS options were given`);
  }
  if ((options.cert === undefined) !== (options.key === undefined)) {
    throw new StatewrightConfigError("statewright client: a client certificate needs its key, and a key its certificate");
  }
  const tls = options.tls ?? (scheme === "https:" || material);

  let nodeOptions: SecureClientSessionOptions | undefined;
  if (tls) {
    nodeOptions = {};
    if (options.ca !== undefined) nodeOptions.ca = checkBundle(pem(options.ca, "CA"));
    if (options.cert !== undefined) nodeOptions.cert = pem(options.cert, "client certificate");
    if (options.key !== undefined) nodeOptions.key = pem(options.key, "client key");
    if (options.serverName !== undefined) nodeOptions.servername = options.serverName;
    try {
      createSecureContext({ ca: nodeOptions.ca, cert: nodeOptions.cert, key: nodeOptions.key });
    } catch (err) {
      throw new StatewrightConfigError(`statewright client: the TLS CA, certificate or key is not usable: ${message(err)}`, {
        cause: err,
      });
    }
  }

  let interceptor: Interceptor | undefined;
  if (options.token !== undefined) {
    if (!tls && !options.insecure && !isLoopback(url.hostname)) {
      throw new StatewrightConfigError(
        `statewright client: refusing to send a token in plaintext to ${url.host}: turn TLS on ` +
          "(tls, ca, or an https:// target), or set insecure to send it anyway",
      );
    }
    const source = new TokenSource(options.token, clock);
    interceptor = bearerInterceptor(source);
  }

  url.protocol = tls ? "https:" : "http:";
  return { baseUrl: url.toString().replace(/\/$/, ""), nodeOptions, interceptor };
}

function parseTarget(target: string): URL {
  let url: URL;
  try {
    url = new URL(target.includes("://") ? target : `http://${target}`);
  } catch {
    throw new StatewrightConfigError(`statewright client: ${JSON.stringify(target)} is neither host:port nor a URL`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new StatewrightConfigError(`statewright client: the target ${target} is neither http nor https`);
  }
  return url;
}

/** Whether host (a URL's hostname: IPv6 in brackets) never leaves the machine. */
export function isLoopback(host: string): boolean {
  const bare = host.replace(/^\[(.*)\]$/, "$1").toLowerCase();
  if (bare === "localhost" || bare.endsWith(".localhost") || bare === "::1") {
    return true;
  }
  return isIPv4(bare) && bare.startsWith("127.");
}

function pem(source: PemSource, what: string): string | Buffer {
  if (typeof source !== "string") {
    return Buffer.from(source);
  }
  if (source.trimStart().startsWith("-----BEGIN")) {
    return source;
  }
  try {
    return readFileSync(source);
  } catch (err) {
    throw new StatewrightConfigError(`statewright client: cannot read the TLS ${what} file ${source}: ${message(err)}`, {
      cause: err,
    });
  }
}

const CERTIFICATE = /-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/g;

/**
 * Node skips what it cannot parse in a CA bundle, which would surface only as a failed
 * handshake: each certificate is parsed here instead, and a bundle without one refused.
 */
function checkBundle(bundle: string | Buffer): string | Buffer {
  const blocks = String(bundle).match(CERTIFICATE) ?? [];
  if (blocks.length === 0) {
    throw new StatewrightConfigError("statewright client: the TLS CA holds no PEM certificate");
  }
  blocks.forEach((block, i) => {
    try {
      new X509Certificate(block);
    } catch (err) {
      throw new StatewrightConfigError(`statewright client: certificate ${i + 1} of the TLS CA is not valid: ${message(err)}`, {
        cause: err,
      });
    }
  });
  return bundle;
}

/** The token part of an authorization header: visible ASCII, nothing else. */
const TOKEN = /^[\x21-\x7e]+$/;

function checkToken(token: unknown, from: string): string {
  if (typeof token !== "string" || !TOKEN.test(token)) {
    // The value is never shown: it may be a real secret with one bad character.
    throw new StatewrightConfigError(`statewright client: ${from} is not a token (a non-empty string of visible ASCII)`);
  }
  return token;
}

/** The longest a BearerToken is reused before its expiry: the margin for clock skew and a slow call. */
const REFRESH_MARGIN_MS = 30_000;

/** Where a client's tokens come from: a fixed one, or a provider and what it gave last. */
export class TokenSource {
  private cached: { token: string; refreshAt: number } | undefined;
  private pending: Promise<string> | undefined;
  private readonly provider: TokenProvider | undefined;

  constructor(
    token: string | TokenProvider,
    private readonly clock: () => number = Date.now,
  ) {
    if (typeof token === "string") {
      this.cached = { token: checkToken(token, "the token"), refreshAt: Infinity };
      this.provider = undefined;
    } else {
      this.provider = token;
    }
  }

  /** The token for the next call. */
  get(): Promise<string> | string {
    const cached = this.cached;
    if (cached !== undefined && this.clock() < cached.refreshAt) {
      return cached.token;
    }
    this.pending ??= this.fetch().finally(() => {
      this.pending = undefined;
    });
    return this.pending;
  }

  /** The server refused token: the next call asks the provider again. A fixed token stays. */
  rejected(token: string): void {
    if (this.provider !== undefined && this.cached?.token === token) {
      this.cached = undefined;
    }
  }

  private async fetch(): Promise<string> {
    const provider = this.provider!;
    let value: string | BearerToken;
    try {
      value = await provider();
    } catch (err) {
      if (err instanceof ConnectError) {
        throw err;
      }
      throw new ConnectError(`the token provider failed: ${message(err)}`, Code.Unavailable, undefined, undefined, err);
    }
    if (typeof value === "string") {
      this.cached = undefined;
      return checkToken(value, "what the token provider gave");
    }
    const token = checkToken(value?.token, "what the token provider gave");
    const expiresAt = value.expiresAt === undefined ? Infinity : Number(value.expiresAt);
    const left = expiresAt - this.clock();
    this.cached = { token, refreshAt: expiresAt - Math.min(REFRESH_MARGIN_MS, Math.max(left, 0) / 2) };
    return token;
  }
}

/**
 * Sets `authorization: Bearer <token>` on every call, unary and streaming alike; a call
 * answered UNAUTHENTICATED makes the source forget that token.
 */
export function bearerInterceptor(source: TokenSource): Interceptor {
  return (next) => async (req) => {
    const token = await source.get();
    req.header.set("authorization", `Bearer ${token}`);
    try {
      return await next(req);
    } catch (err) {
      if (err instanceof ConnectError && err.code === Code.Unauthenticated) {
        source.rejected(token);
      }
      throw err;
    }
  };
}

/** The part of process.env that a client made from the environment reads. */
export interface StatewrightEnvironment {
  /** host:port of the server (an https:// URL also works, for TLS with Node's roots). */
  STATEWRIGHT_ADDRESS?: string | undefined;
  /** The older name of STATEWRIGHT_ADDRESS, read when that is unset. */
  STATEWRIGHT_TARGET?: string | undefined;
  STATEWRIGHT_TOKEN?: string | undefined;
  STATEWRIGHT_TLS_CA?: string | undefined;
  STATEWRIGHT_TLS_CERT?: string | undefined;
  STATEWRIGHT_TLS_KEY?: string | undefined;
}

/**
 * The address and security options that the environment gives, as every Statewright client
 * reads them: STATEWRIGHT_ADDRESS (else STATEWRIGHT_TARGET, else 127.0.0.1:50051),
 * STATEWRIGHT_TOKEN, and the PEM file paths STATEWRIGHT_TLS_CA, STATEWRIGHT_TLS_CERT and
 * STATEWRIGHT_TLS_KEY, any of which turns TLS on. Empty variables count as unset.
 */
export function environmentConfig(env: StatewrightEnvironment = process.env): { address: string; options: SecurityOptions } {
  const get = (name: keyof StatewrightEnvironment): string | undefined => {
    const value = env[name]?.trim();
    return value === "" ? undefined : value;
  };
  const options: SecurityOptions = {};
  const token = get("STATEWRIGHT_TOKEN");
  const ca = get("STATEWRIGHT_TLS_CA");
  const cert = get("STATEWRIGHT_TLS_CERT");
  const key = get("STATEWRIGHT_TLS_KEY");
  if (token !== undefined) options.token = token;
  if (ca !== undefined) options.ca = ca;
  if (cert !== undefined) options.cert = cert;
  if (key !== undefined) options.key = key;
  if (ca !== undefined || cert !== undefined || key !== undefined) options.tls = true;
  return { address: get("STATEWRIGHT_ADDRESS") ?? get("STATEWRIGHT_TARGET") ?? DEFAULT_ADDRESS, options };
}

function message(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
