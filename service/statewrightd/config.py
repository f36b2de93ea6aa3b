"""Server configuration from flags, falling back to ``STATEWRIGHT_*`` environment variables."""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DEFAULT_LISTEN = "127.0.0.1:50051"
DEFAULT_DATABASE_URL = "sqlite:///statewright.db"
DEFAULT_GRACE_SECONDS = 10.0
DEFAULT_WRITER_QUEUE = 10_000
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")
LOG_FORMATS = ("text", "json")
DEFAULT_LIVENESS_STALL_SECONDS = 10.0
MAX_PROCESSES = 256


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
    # Server processes sharing the port; None: one per CPU of the container (see
    # statewrightd.supervisor.default_processes).
    processes: int | None = None


class ConfigError(ValueError):
    """A flag or environment variable has a value the server cannot use."""


def add_server_arguments(parser: argparse.ArgumentParser) -> None:
    """Flags default to None so that an unset flag falls back to its environment variable."""
    parser.add_argument(
        "--listen", help=f"HOST:PORT (env STATEWRIGHT_LISTEN, default {DEFAULT_LISTEN})"
    )
    parser.add_argument(
        "--database",
        help="postgresql://... or sqlite:///path (env STATEWRIGHT_DATABASE_URL, "
        f"default {DEFAULT_DATABASE_URL})",
    )
    parser.add_argument(
        "--definitions", help="directory of definition files (env STATEWRIGHT_DEFINITIONS)"
    )
    parser.add_argument(
        "--grace",
        type=float,
        help="seconds in-flight RPCs get on shutdown (env STATEWRIGHT_GRACE, "
        f"default {DEFAULT_GRACE_SECONDS:g})",
    )
    parser.add_argument(
        "--writer-queue",
        type=int,
        help="saves the writer may queue before answering OVERLOADED (env "
        f"STATEWRIGHT_WRITER_QUEUE, default {DEFAULT_WRITER_QUEUE})",
    )
    parser.add_argument(
        "--log-level",
        type=str.upper,
        choices=LOG_LEVELS,
        help="log level (env STATEWRIGHT_LOG_LEVEL, default INFO)",
    )
    parser.add_argument(
        "--log-format",
        type=str.lower,
        choices=LOG_FORMATS,
        help="text, or json: one object per line (env STATEWRIGHT_LOG_FORMAT, default text)",
    )
    parser.add_argument(
        "--metrics-listen",
        help="HOST:PORT for the Prometheus /metrics endpoint (env STATEWRIGHT_METRICS_LISTEN, "
        "default off)",
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
        help="seconds the EventLoop may make no progress before liveness turns NOT_SERVING "
        f"(env STATEWRIGHT_LIVENESS_STALL, default {DEFAULT_LIVENESS_STALL_SECONDS:g})",
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
        processes=_processes(args, env, base, database_url),
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
    return {
        "log_format": log_format,
        "metrics_listen": metrics_listen or None,
        "liveness_stall_seconds": stall,
    }


def _processes(
    args: argparse.Namespace, env: Mapping[str, str], base: ServerConfig, database_url: str
) -> int | None:
    flag = getattr(args, "processes", None)
    text = str(flag) if flag is not None else env.get("STATEWRIGHT_PROCESSES") or ""
    if not text:
        return base.processes
    if text.strip().lower() == "auto":
        return None
    if not text.strip().isdigit() or not 1 <= int(text) <= MAX_PROCESSES:
        raise ConfigError(
            f"processes must be auto or an integer from 1 to {MAX_PROCESSES}; got {text!r}"
        )
    count = int(text)
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
