"""Server configuration: flags win over environment variables, which win over defaults."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from statewrightd.config import ConfigError, ServerConfig, add_server_arguments, config_from


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
