"""Server configuration from flags, falling back to ``STATEWRIGHT_*`` environment variables."""

from __future__ import annotations

import argparse
import math
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from statewrightd.durations import MAX_DURATION_TEXT, parse_duration, too_long

DEFAULT_LISTEN = "127.0.0.1:50051"
DEFAULT_DATABASE_URL = "sqlite:///statewright.db"
DEFAULT_GRACE_SECONDS = 10.0
DEFAULT_WRITER_QUEUE = 10_000
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")
LOG_FORMATS = ("text", "json")
DEFAULT_LIVENESS_STALL_SECONDS = 10.0
DEFAULT_BACKLOG_WARNING = 1000
DEFAULT_LAG_WARNING_SECONDS = 1.0
FOREVER = math.inf

# The deepest a value may nest (definitions.values enforces it on what steps build).
MAX_NESTING = 20

# What a server process caches of its instances' contexts, in bytes of their JSON. A
# context may be 256 KiB, so a cache bounded by its count alone (50,000 sessions) could
# take gigabytes: a cached session takes about six times its context's JSON in memory
# (bench/run_cache_memory.sh), so this keeps a process's sessions near 100 MiB.
CACHED_CONTEXT_BYTES = 16 * 1024 * 1024


@dataclass(frozen=True)
class Limits:
    """What one request, one caller and one instance may use. Each has a flag."""

    request_bytes: int = 1024 * 1024  # one request message
    context_bytes: int = 256 * 1024  # an instance's context, as JSON
    # Maps and lists inside one value. Every client must be able to read what it is sent:
    # protobuf decoders stop at 100 nested messages, and a Struct spends three on a level.
    nesting: int = 20  # at most MAX_NESTING
    string_bytes: int = 64 * 1024  # one string inside a value
    list_items: int = 10_000  # one list inside a value
    map_items: int = 10_000  # the items of one fan-out (a task state's `map`)
    map_keys: int = 1_000  # one map inside a value
    watches_per_caller: int = 1_000  # open watch streams (gRPC and HTTP) of one principal
    watches_total: int = 10_000  # open watch streams of every caller together
    rate: float = 0.0  # requests per second of one principal; 0: unlimited
    burst: int = 0  # requests one principal may send at once (default: one second's worth)
    # The session cache's contexts as JSON; the task leases' remembered instances take up
    # to a quarter of this again.
    cached_context_bytes: int = CACHED_CONTEXT_BYTES


MAX_PROCESSES = 256

# The whole-number input limits: the flag, the Limits field it sets, its unit, and what it
# bounds. Each is also read from an environment variable named after the flag
# (--max-nesting: STATEWRIGHT_MAX_NESTING).
_INT_LIMITS = (
    ("--max-request-size", "request_bytes", "BYTES", "one request"),
    ("--max-context-size", "context_bytes", "BYTES", "a context as JSON"),
    ("--max-nesting", "nesting", "N", "levels of maps and lists in a value"),
    ("--max-string-size", "string_bytes", "BYTES", "one string in a value"),
    ("--max-list-items", "list_items", "N", "items of one list in a value"),
    ("--max-map-keys", "map_keys", "N", "keys of one map in a value"),
    ("--max-map-items", "map_items", "N", "items of one fan-out (a task state's map)"),
    ("--max-watches", "watches_per_caller", "N", "open watches per caller"),
    ("--max-watches-total", "watches_total", "N", "open watches of all callers"),
    ("--rate-burst", "burst", "N", "requests a caller may send at once"),
    ("--max-cached-contexts", "cached_context_bytes", "BYTES", "the contexts cached, as JSON"),
)


@dataclass(frozen=True)
class ServerConfig:
    listen: str = DEFAULT_LISTEN
    database_url: str = DEFAULT_DATABASE_URL
    definitions_dir: Path | None = None
    grace_seconds: float = DEFAULT_GRACE_SECONDS
    log_level: str = "INFO"
    writer_queue: int = DEFAULT_WRITER_QUEUE
    log_format: str = "text"
    metrics_listen: str | None = None  # HOST:PORT of the Prometheus endpoint; None: off
    http_listen: str | None = None  # HOST:PORT of the web console and its HTTP API; None: off
    # Names the HTTP server answers to besides its listen address (the Host header).
    http_allowed_hosts: tuple[str, ...] = ()
    liveness_stall_seconds: float = DEFAULT_LIVENESS_STALL_SECONDS
    # The EventLoop logs (at most once a minute each) a queue this deep, a wait this long.
    backlog_warning: int = DEFAULT_BACKLOG_WARNING
    lag_warning_seconds: float = DEFAULT_LAG_WARNING_SECONDS
    # How far ahead of the machine's clock the server's clock runs (tests of timers).
    clock_offset_seconds: float = 0.0
    # How long a finished instance is kept before it is removed (FOREVER: never), unless
    # its definition says otherwise.
    retention_seconds: float = 30 * 86400.0
    # How long a request id's record answers retries with the original answer.
    request_window_seconds: float = 86400.0
    tls_cert: Path | None = None
    tls_key: Path | None = None
    tls_client_ca: Path | None = None  # set: every client must present a certificate
    health_listen: str | None = None  # a plaintext port serving grpc.health.v1 only
    auth_config: Path | None = None  # None: no authentication, every caller is anonymous
    reflection: bool = False
    limits: Limits = field(default_factory=Limits)
    # Server processes sharing the port; None: one per CPU of the container (see
    # statewrightd.supervisor.default_processes).
    processes: int | None = None
    # `statewrightd dev`: the definitions directory is watched, and a changed definition
    # becomes its next version. Set by the command, not by a flag.
    dev_mode: bool = False


class ConfigError(ValueError):
    """A flag or environment variable has a value the server cannot use."""


def add_server_arguments(
    parser: argparse.ArgumentParser, defaults: ServerConfig | None = None
) -> None:
    """The server's flags, with ``defaults`` (the command's own) shown in their help.

    Flags default to None so that an unset flag falls back to its environment variable,
    and only then to the command's default (``config_from`` with the same ``base``).
    """
    d = defaults or ServerConfig()
    parser.add_argument(
        "--listen",
        metavar="HOST:PORT",
        help=f"address of the gRPC server (env STATEWRIGHT_LISTEN; default {d.listen})",
    )
    parser.add_argument(
        "--database",
        metavar="URL",
        help="postgresql://USER@HOST/DB or sqlite:///PATH (env STATEWRIGHT_DATABASE_URL; "
        f"default {d.database_url})",
    )
    definitions = f"default {d.definitions_dir}" if d.definitions_dir else "default none"
    parser.add_argument(
        "--definitions",
        metavar="DIR",
        help="directory of definition files (YAML or JSON) to load at start "
        f"(env STATEWRIGHT_DEFINITIONS; {definitions})",
    )
    parser.add_argument(
        "--grace",
        type=float,
        metavar="SECONDS",
        help="how long in-flight RPCs may run on after SIGTERM (env STATEWRIGHT_GRACE; "
        f"default {d.grace_seconds:g})",
    )
    parser.add_argument(
        "--writer-queue",
        type=int,
        metavar="N",
        help="saves the writer may queue before answering OVERLOADED (env "
        f"STATEWRIGHT_WRITER_QUEUE; default {d.writer_queue})",
    )
    parser.add_argument(
        "--log-level",
        type=str.upper,
        choices=LOG_LEVELS,
        help=f"log level (env STATEWRIGHT_LOG_LEVEL; default {d.log_level})",
    )
    parser.add_argument(
        "--log-format",
        type=str.lower,
        choices=LOG_FORMATS,
        help="text, or json: one object per line (env STATEWRIGHT_LOG_FORMAT; "
        f"default {d.log_format})",
    )
    parser.add_argument(
        "--metrics-listen",
        metavar="HOST:PORT",
        help="address of the Prometheus /metrics endpoint (env STATEWRIGHT_METRICS_LISTEN; "
        f"default {d.metrics_listen or 'off'})",
    )
    parser.add_argument(
        "--http-listen",
        metavar="HOST:PORT",
        help="address of the web console and its HTTP/JSON API under /api/v1, or off (env "
        f"STATEWRIGHT_HTTP_LISTEN; default {d.http_listen or 'off'})",
    )
    parser.add_argument(
        "--http-allowed-hosts",
        metavar="NAMES",
        help="comma-separated names the HTTP server answers to besides its listen address "
        "(the Host header; .example.com: every name under it; *: any) (env "
        "STATEWRIGHT_HTTP_ALLOWED_HOSTS; default: the listen address, and localhost when it "
        "is a loopback or every address)",
    )
    parser.add_argument(
        "--clock-offset",
        help="for tests: run the server's clock this far ahead of the machine's, e.g. 48h "
        "(env STATEWRIGHT_CLOCK_OFFSET, default 0)",
    )
    parser.add_argument(
        "--retention",
        metavar="DURATION",
        help="how long a finished instance (COMPLETED, FAILED, CANCELLED) is kept before it "
        "is removed with its history, unless its definition sets retention; 'forever' keeps "
        f"every one (env STATEWRIGHT_RETENTION; default {_shown(d.retention_seconds)})",
    )
    parser.add_argument(
        "--request-window",
        metavar="DURATION",
        help="how long a retry with the same request_id gets the original answer; after it "
        "the id is free again (env STATEWRIGHT_REQUEST_WINDOW; default "
        f"{_shown(d.request_window_seconds)})",
    )
    parser.add_argument(
        "--processes",
        help="server processes sharing the port (SO_REUSEPORT), or auto: one per CPU of the "
        "container's quota (env STATEWRIGHT_PROCESSES, default auto for serve, 1 for dev; "
        "SQLite runs one)",
    )
    parser.add_argument(
        "--liveness-stall",
        type=float,
        metavar="SECONDS",
        help="how long the EventLoop may make no progress before liveness turns NOT_SERVING "
        f"(env STATEWRIGHT_LIVENESS_STALL; default {d.liveness_stall_seconds:g})",
    )
    parser.add_argument(
        "--eventloop-backlog-warning",
        type=int,
        metavar="N",
        help="log a warning (at most once a minute) when this many commands wait for the "
        f"EventLoop (env STATEWRIGHT_EVENTLOOP_BACKLOG_WARNING; default {d.backlog_warning})",
    )
    parser.add_argument(
        "--eventloop-lag-warning",
        type=float,
        metavar="SECONDS",
        help="log a warning (at most once a minute) when a command waited this long for the "
        "EventLoop (env STATEWRIGHT_EVENTLOOP_LAG_WARNING; "
        f"default {d.lag_warning_seconds:g})",
    )


def add_security_arguments(
    parser: argparse.ArgumentParser, defaults: ServerConfig | None = None
) -> None:
    """TLS, authentication, the health port, reflection and input limits."""
    d = defaults or ServerConfig()
    lim = d.limits
    parser.add_argument(
        "--tls-cert",
        metavar="FILE",
        help="PEM certificate chain: serve TLS (env STATEWRIGHT_SERVER_TLS_CERT; re-read when the "
        "file changes)",
    )
    parser.add_argument(
        "--tls-key",
        metavar="FILE",
        help="PEM private key of --tls-cert (env STATEWRIGHT_SERVER_TLS_KEY)",
    )
    parser.add_argument(
        "--tls-client-ca",
        metavar="FILE",
        help="PEM CA bundle: require client certificates it signed, mTLS (env "
        "STATEWRIGHT_SERVER_TLS_CLIENT_CA)",
    )
    parser.add_argument(
        "--health-listen",
        metavar="HOST:PORT",
        help="a plaintext port serving only grpc.health.v1, for probes (env "
        f"STATEWRIGHT_HEALTH_LISTEN; default {d.health_listen or 'off'})",
    )
    parser.add_argument(
        "--auth-config",
        metavar="FILE",
        help="YAML file of API keys, JWT settings, mTLS identities and their roles (env "
        "STATEWRIGHT_AUTH_CONFIG; default: no authentication)",
    )
    parser.add_argument(
        "--reflection",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="serve gRPC reflection (env STATEWRIGHT_REFLECTION=1; default "
        f"{'on' if d.reflection else 'off'})",
    )
    for flag, attr, unit, what in _INT_LIMITS:
        parser.add_argument(
            flag,
            type=int,
            metavar=unit,
            help=f"at most this many for {what} "
            f"(env {_env_var(flag)}; default {getattr(lim, attr):,})",
        )
    parser.add_argument(
        "--rate-limit",
        type=float,
        metavar="PER_SECOND",
        help="requests per second of one caller, a token bucket (env STATEWRIGHT_RATE_LIMIT; "
        f"default {lim.rate:g}: unlimited)",
    )


def security_from(
    args: argparse.Namespace, env: Mapping[str, str], base: ServerConfig
) -> dict[str, Any]:
    """The security settings of ``config_from``: flags, then environment, then ``base``."""

    def pick(name: str, var: str) -> str | None:
        flag = getattr(args, name, None)
        if flag is not None:
            return str(flag)
        return env.get(var) or None

    def path(name: str, var: str, default: Path | None) -> Path | None:
        text = pick(name, var)
        return Path(text) if text else default

    # Not STATEWRIGHT_TLS_CERT/_KEY: those name a client's certificate, for every client.
    cert = path("tls_cert", "STATEWRIGHT_SERVER_TLS_CERT", base.tls_cert)
    key = path("tls_key", "STATEWRIGHT_SERVER_TLS_KEY", base.tls_key)
    client_ca = path("tls_client_ca", "STATEWRIGHT_SERVER_TLS_CLIENT_CA", base.tls_client_ca)
    if (cert is None) != (key is None):
        raise ConfigError("--tls-cert and --tls-key go together: give both, or neither")
    if client_ca is not None and cert is None:
        raise ConfigError("--tls-client-ca needs --tls-cert and --tls-key: mTLS is TLS first")
    for given in (cert, key, client_ca):
        if given is not None and not given.is_file():
            raise ConfigError(f"TLS file {given} does not exist")
    health = pick("health_listen", "STATEWRIGHT_HEALTH_LISTEN") or base.health_listen
    if health:
        parse_listen(health)
    auth = path("auth_config", "STATEWRIGHT_AUTH_CONFIG", base.auth_config)
    reflection = base.reflection
    flag = getattr(args, "reflection", None)
    if flag is not None:
        reflection = bool(flag)
    elif env.get("STATEWRIGHT_REFLECTION"):
        reflection = env["STATEWRIGHT_REFLECTION"].strip().lower() in ("1", "true", "yes", "on")
    limits = _limits_setting(pick, base.limits)
    return {
        "tls_cert": cert,
        "tls_key": key,
        "tls_client_ca": client_ca,
        "health_listen": health or None,
        "auth_config": auth,
        "reflection": reflection,
        "limits": limits,
    }


def _env_var(flag: str) -> str:
    return "STATEWRIGHT_" + flag.removeprefix("--").replace("-", "_").upper()


def _limits_setting(pick: Callable[[str, str], str | None], base: Limits) -> Limits:
    """The input limits of ``security_from``: each flag, then its environment variable."""
    changes: dict[str, Any] = {}
    for flag, attr, _, _ in _INT_LIMITS:
        text = pick(flag.removeprefix("--").replace("-", "_"), _env_var(flag))
        if text is None:
            continue
        if not text.isdigit():
            raise ConfigError(f"{flag} must be a whole number; got {text!r}")
        changes[attr] = int(text)
    rate_text = pick("rate_limit", "STATEWRIGHT_RATE_LIMIT")
    if rate_text is not None:
        try:
            changes["rate"] = float(rate_text)
        except ValueError:
            raise ConfigError(f"--rate-limit must be a number; got {rate_text!r}") from None
    limits = replace(base, **changes)
    if not 1 <= limits.nesting <= MAX_NESTING:
        raise ConfigError(
            f"--max-nesting must be between 1 and {MAX_NESTING}: what the engine stores must be "
            "readable by every client's protobuf decoder"
        )
    if limits.rate < 0:
        raise ConfigError("--rate-limit must not be negative")
    if limits.rate > 0 and limits.burst == 0:
        limits = replace(limits, burst=max(1, round(limits.rate)))
    for attr in (
        "request_bytes", "context_bytes", "string_bytes", "list_items", "map_keys", "map_items",
    ):  # fmt: skip
        if getattr(limits, attr) < 1:
            raise ConfigError(f"the {attr.replace('_', ' ')} limit must be at least 1")
    return limits


def config_from(
    args: argparse.Namespace,
    env: Mapping[str, str] | None = None,
    *,
    base: ServerConfig | None = None,
) -> ServerConfig:
    env = os.environ if env is None else env
    base = base or ServerConfig()

    def pick(flag: object, var: str, default: str) -> str:
        if flag is not None:
            return str(flag)
        return env.get(var) or default

    listen = pick(args.listen, "STATEWRIGHT_LISTEN", base.listen)
    parse_listen(listen)
    database_url = pick(args.database, "STATEWRIGHT_DATABASE_URL", base.database_url)
    if not database_url.startswith(("postgresql://", "postgres://", "sqlite:///")):
        raise ConfigError(
            f"database URL must start with postgresql:// or sqlite:///; got {database_url!r}"
        )
    definitions = pick(args.definitions, "STATEWRIGHT_DEFINITIONS", str(base.definitions_dir or ""))
    grace_text = pick(args.grace, "STATEWRIGHT_GRACE", str(base.grace_seconds))
    try:
        grace = float(grace_text)
    except ValueError:
        raise ConfigError(f"grace must be a number of seconds; got {grace_text!r}") from None
    if not 0 <= grace <= 3600:
        raise ConfigError(f"grace must be between 0 and 3600 seconds; got {grace:g}")
    log_level = pick(args.log_level, "STATEWRIGHT_LOG_LEVEL", base.log_level).upper()
    if log_level not in LOG_LEVELS:
        raise ConfigError(f"log level must be one of {', '.join(LOG_LEVELS)}; got {log_level!r}")
    queue_text = pick(args.writer_queue, "STATEWRIGHT_WRITER_QUEUE", str(base.writer_queue))
    if not queue_text.isdigit() or int(queue_text) < 1:
        raise ConfigError(f"writer queue must be a positive integer; got {queue_text!r}")
    return ServerConfig(
        **_observability_settings(args, env, base),
        **security_from(args, env, base),
        processes=_processes(args, env, base, database_url),
        writer_queue=int(queue_text),
        listen=listen,
        database_url=database_url,
        definitions_dir=Path(definitions) if definitions else None,
        grace_seconds=grace,
        log_level=log_level,
        dev_mode=base.dev_mode,
    )


def _observability_settings(
    args: argparse.Namespace, env: Mapping[str, str], base: ServerConfig
) -> dict[str, Any]:
    # getattr: parsers built before these flags existed (other subcommands) lack them.
    def pick(name: str, var: str, default: str) -> str:
        flag = getattr(args, name, None)
        return str(flag) if flag is not None else env.get(var) or default

    log_format = pick("log_format", "STATEWRIGHT_LOG_FORMAT", base.log_format).lower()
    if log_format not in LOG_FORMATS:
        raise ConfigError(f"log format must be one of {', '.join(LOG_FORMATS)}; got {log_format!r}")
    metrics_listen = pick("metrics_listen", "STATEWRIGHT_METRICS_LISTEN", base.metrics_listen or "")
    if metrics_listen:
        parse_listen(metrics_listen)
    http_listen = pick("http_listen", "STATEWRIGHT_HTTP_LISTEN", base.http_listen or "").strip()
    if http_listen.lower() in ("off", "none", "0"):
        http_listen = ""
    if http_listen:
        parse_listen(http_listen)
    allowed_text = pick("http_allowed_hosts", "STATEWRIGHT_HTTP_ALLOWED_HOSTS", "")
    allowed = tuple(n.strip() for n in allowed_text.split(",") if n.strip())
    for name in allowed:
        if any(c.isspace() or c in "/@" for c in name):
            raise ConfigError(f"--http-allowed-hosts takes host names; got {name!r}")
    stall_text = pick(
        "liveness_stall", "STATEWRIGHT_LIVENESS_STALL", str(base.liveness_stall_seconds)
    )
    try:
        stall = float(stall_text)
    except ValueError:
        raise ConfigError(f"liveness stall must be seconds; got {stall_text!r}") from None
    if not 0 < stall <= 3600:
        raise ConfigError(f"liveness stall must be between 0 and 3600 seconds; got {stall:g}")
    backlog, lag = _loop_warnings(pick, base)
    offset_text = pick("clock_offset", "STATEWRIGHT_CLOCK_OFFSET", "")
    offset = base.clock_offset_seconds
    if offset_text:
        parsed = 0.0 if offset_text.strip() == "0" else parse_duration(offset_text)
        if parsed is None:
            raise ConfigError(f"clock offset must be a duration such as 48h; got {offset_text!r}")
        if too_long(parsed):
            raise ConfigError(f"clock offset must be at most {MAX_DURATION_TEXT}")
        offset = parsed
    retention = _duration_setting(
        pick("retention", "STATEWRIGHT_RETENTION", ""),
        base.retention_seconds,
        "retention",
        allow_forever=True,
    )
    window = _duration_setting(
        pick("request_window", "STATEWRIGHT_REQUEST_WINDOW", ""),
        base.request_window_seconds,
        "request window",
        allow_forever=False,
    )
    return {
        "log_format": log_format,
        "metrics_listen": metrics_listen or None,
        "http_listen": http_listen or None,
        "http_allowed_hosts": allowed or base.http_allowed_hosts,
        "liveness_stall_seconds": stall,
        "backlog_warning": backlog,
        "lag_warning_seconds": lag,
        "clock_offset_seconds": offset,
        "retention_seconds": retention,
        "request_window_seconds": window,
    }


def _loop_warnings(pick: Callable[[str, str, str], str], base: ServerConfig) -> tuple[int, float]:
    backlog_text = pick(
        "eventloop_backlog_warning",
        "STATEWRIGHT_EVENTLOOP_BACKLOG_WARNING",
        str(base.backlog_warning),
    )
    lag_text = pick(
        "eventloop_lag_warning", "STATEWRIGHT_EVENTLOOP_LAG_WARNING", str(base.lag_warning_seconds)
    )
    try:
        backlog, lag = int(backlog_text), float(lag_text)
    except ValueError:
        raise ConfigError(
            f"the EventLoop warnings take a count and seconds; got {backlog_text!r}, {lag_text!r}"
        ) from None
    if backlog < 1 or not 0 < lag <= 3600:
        raise ConfigError(
            "--eventloop-backlog-warning must be at least 1 and --eventloop-lag-warning "
            f"between 0 and 3600 seconds; got {backlog}, {lag:g}"
        )
    return backlog, lag


def _duration_setting(text: str, default: float, what: str, *, allow_forever: bool) -> float:
    """A duration flag's seconds: at least 1s; ``forever`` where the flag takes it."""
    if not text:
        return default
    if allow_forever and text.strip() == "forever":
        return FOREVER
    seconds = parse_duration(text)
    alternative = " or forever" if allow_forever else ""
    if seconds is None:
        raise ConfigError(
            f"{what} must be a duration such as 30d or 12h{alternative}; got {text!r}"
        )
    if seconds < 1:
        raise ConfigError(f"{what} must be at least 1s; got {text!r}")
    if too_long(seconds):
        raise ConfigError(f"{what} must be at most {MAX_DURATION_TEXT}; got {text!r}")
    return seconds


def _shown(seconds: float) -> str:
    """A duration as the flags take it: ``30d``, ``24h``, ``90s``; ``forever``."""
    if seconds == FOREVER:
        return "forever"
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= 2 * size and seconds % size == 0:
            return f"{int(seconds // size)}{unit}"
    return f"{seconds:g}s"


def _processes(
    args: argparse.Namespace, env: Mapping[str, str], base: ServerConfig, database_url: str
) -> int | None:
    flag = getattr(args, "processes", None)
    text = str(flag) if flag is not None else env.get("STATEWRIGHT_PROCESSES") or ""
    if not text:
        return base.processes
    if text.strip().lower() == "auto":
        return 1 if base.dev_mode else None
    if not text.strip().isdigit() or not 1 <= int(text) <= MAX_PROCESSES:
        raise ConfigError(
            f"processes must be auto or an integer from 1 to {MAX_PROCESSES}; got {text!r}"
        )
    count = int(text)
    if count > 1 and base.dev_mode:
        # Each process would watch the directory and register the edited version on its
        # own; the dev loop is one process's.
        raise ConfigError(
            f"processes {count}: statewrightd dev runs one process (its reload of the "
            "definitions directory is that process's); use statewrightd serve for more"
        )
    if count > 1 and database_url.startswith("sqlite:"):
        # One SQLite file takes one writer: a second process would only meet "database is
        # locked" on every save.
        raise ConfigError(
            f"processes {count} needs PostgreSQL: an SQLite database is served by one "
            "process (use --processes 1, or a postgresql:// database)"
        )
    return count


def parse_listen(listen: str) -> tuple[str, int]:
    host, sep, port_text = listen.rpartition(":")
    if not sep or not host or not port_text.isdigit() or int(port_text) > 65535:
        raise ConfigError(f"listen address must be HOST:PORT; got {listen!r}")
    return host.strip("[]"), int(port_text)
