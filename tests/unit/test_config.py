"""Server configuration: flags win over environment variables, which win over defaults."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from statewrightd.config import (
    ConfigError,
    ServerConfig,
    add_security_arguments,
    add_server_arguments,
    config_from,
)


def parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_server_arguments(parser)
    return parser.parse_args(list(argv))


def test_defaults() -> None:
    assert config_from(parse(), env={}) == ServerConfig()


def test_environment_fills_unset_flags() -> None:
    env = {
        "STATEWRIGHT_LISTEN": "0.0.0.0:9000",
        "STATEWRIGHT_DATABASE_URL": "postgresql://u@h/db",
        "STATEWRIGHT_DEFINITIONS": "/defs",
        "STATEWRIGHT_GRACE": "2.5",
        "STATEWRIGHT_LOG_LEVEL": "debug",
    }
    config = config_from(parse(), env=env)
    assert config == ServerConfig(
        "0.0.0.0:9000", "postgresql://u@h/db", Path("/defs"), 2.5, "DEBUG"
    )


def test_flags_override_environment() -> None:
    env = {"STATEWRIGHT_LISTEN": "0.0.0.0:9000", "STATEWRIGHT_GRACE": "2.5"}
    config = config_from(parse("--listen", "127.0.0.1:0", "--grace", "0"), env=env)
    assert config.listen == "127.0.0.1:0"
    assert config.grace_seconds == 0


@pytest.mark.parametrize(
    ("argv", "env", "message"),
    [
        (("--listen", "nohost"), {}, "HOST:PORT"),
        (("--listen", "h:99999"), {}, "HOST:PORT"),
        (("--database", "mysql://x"), {}, "database URL"),
        ((), {"STATEWRIGHT_GRACE": "soon"}, "grace"),
        (("--grace", "-1"), {}, "grace"),
        ((), {"STATEWRIGHT_LOG_LEVEL": "chatty"}, "log level"),
    ],
)
def test_bad_values_are_reported(argv: tuple[str, ...], env: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        config_from(parse(*argv), env=env)


def test_retention_and_the_request_window_take_durations() -> None:
    config = config_from(parse("--retention", "90d"), env={"STATEWRIGHT_REQUEST_WINDOW": "2m"})
    assert config.retention_seconds == 90 * 86400
    assert config.request_window_seconds == 120
    assert config_from(parse(), env={"STATEWRIGHT_RETENTION": "forever"}).retention_seconds == (
        float("inf")
    )
    assert (ServerConfig().retention_seconds, ServerConfig().request_window_seconds) == (
        30 * 86400,
        86400,
    )


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (("--retention", "soon"), "retention must be a duration"),
        (("--retention", "0s"), "retention must be at least 1s"),
        (("--request-window", "forever"), "request window must be a duration"),
        (("--request-window", "500ms"), "request window must be at least 1s"),
        (("--request-window", "99999999999d"), "request window must be at most 100 years"),
        (("--retention", "36501d"), "retention must be at most 100 years"),
    ],
)
def test_bad_durations_are_reported(argv: tuple[str, ...], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        config_from(parse(*argv), env={})


def test_the_cached_contexts_budget_has_a_flag_and_a_variable() -> None:
    assert ServerConfig().limits.cached_context_bytes == 16 * 1024 * 1024
    env = {"STATEWRIGHT_MAX_CACHED_CONTEXTS": "1000"}
    assert config_from(parse(), env=env).limits.cached_context_bytes == 1000
    parser = argparse.ArgumentParser()
    add_server_arguments(parser)
    add_security_arguments(parser)
    flagged = config_from(parser.parse_args(["--max-cached-contexts", "0"]), env=env)
    assert flagged.limits.cached_context_bytes == 0, "zero: only the sessions being stepped"
    with pytest.raises(ConfigError, match="--max-cached-contexts must be a whole number"):
        config_from(parse(), env={"STATEWRIGHT_MAX_CACHED_CONTEXTS": "lots"})
