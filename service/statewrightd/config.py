"""Server configuration from flags, falling back to ``STATEWRIGHT_*`` environment variables."""

from __future__ import annotations

import argparse
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from statewrightd.durations import parse_duration

DEFAULT_LISTEN = "127.0.0.1:50051"
DEFAULT_DATABASE_URL = "sqlite:///statewright.db"
DEFAULT_GRACE_SECONDS = 10.0
DEFAULT_WRITER_QUEUE = 10_000
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")
LOG_FORMATS = ("text", "json")
DEFAULT_LIVENESS_STALL_SECONDS = 10.0
FOREVER = math.inf


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
    liveness_stall_seconds: float = DEFAULT_LIVENESS_STALL_SECONDS
    # How far ahead of the machine's clock the server's clock runs (tests of timers).
    clock_offset_seconds: float = 0.0
    # How long a finished instance is kept before it is removed (FOREVER: never), unless
    # its definition says otherwise.
    retention_seconds: float = 30 * 86400.0
    # How long a request id's record answers retries with the original answer.
    request_window_seconds: float = 86400.0


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
        "--liveness-stall",
        type=float,
        metavar="SECONDS",
        help="how long the EventLoop may make no progress before liveness turns NOT_SERVING "
        f"(env STATEWRIGHT_LIVENESS_STALL; default {d.liveness_stall_seconds:g})",
    )


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
        writer_queue=int(queue_text),
        listen=listen,
        database_url=database_url,
        definitions_dir=Path(definitions) if definitions else None,
        grace_seconds=grace,
        log_level=log_level,
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
    stall_text = pick(
        "liveness_stall", "STATEWRIGHT_LIVENESS_STALL", str(base.liveness_stall_seconds)
    )
    try:
        stall = float(stall_text)
    except ValueError:
        raise ConfigError(f"liveness stall must be seconds; got {stall_text!r}") from None
    if not 0 < stall <= 3600:
        raise ConfigError(f"liveness stall must be between 0 and 3600 seconds; got {stall:g}")
    offset_text = pick("clock_offset", "STATEWRIGHT_CLOCK_OFFSET", "")
    offset = base.clock_offset_seconds
    if offset_text:
        parsed = 0.0 if offset_text.strip() == "0" else parse_duration(offset_text)
        if parsed is None:
            raise ConfigError(f"clock offset must be a duration such as 48h; got {offset_text!r}")
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
        "liveness_stall_seconds": stall,
        "clock_offset_seconds": offset,
        "retention_seconds": retention,
        "request_window_seconds": window,
    }


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
    return seconds


def _shown(seconds: float) -> str:
    """A duration as the flags take it: ``30d``, ``24h``, ``90s``; ``forever``."""
    if seconds == FOREVER:
        return "forever"
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= 2 * size and seconds % size == 0:
            return f"{int(seconds // size)}{unit}"
    return f"{seconds:g}s"


def parse_listen(listen: str) -> tuple[str, int]:
    host, sep, port_text = listen.rpartition(":")
    if not sep or not host or not port_text.isdigit() or int(port_text) > 65535:
        raise ConfigError(f"listen address must be HOST:PORT; got {listen!r}")
    return host.strip("[]"), int(port_text)
