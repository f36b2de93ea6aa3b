"""The statewrightd command line: every flag explained, each command's own defaults shown."""

from __future__ import annotations

import argparse

import pytest

from statewrightd.cli import DEV_DEFAULTS, build_parser, main
from statewrightd.config import ServerConfig, config_from


def _help(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    with pytest.raises(SystemExit) as caught:
        build_parser().parse_args([*argv, "--help"])
    assert caught.value.code == 0
    # argparse wraps at the terminal width; joining the lines makes phrases searchable.
    return " ".join(capsys.readouterr().out.split())


def _subcommands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    (action,) = (a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def test_every_option_and_argument_has_help_text() -> None:
    missing = [
        f"{name} {action.dest}"
        for name, sub in _subcommands().items()
        for action in sub._actions
        if not action.help
    ]
    assert missing == []


def test_dev_help_shows_the_defaults_dev_uses(capsys: pytest.CaptureFixture[str]) -> None:
    text = _help(capsys, "dev")
    assert "default sqlite:///statewright-dev.db" in text
    assert "default examples/definitions" in text
    assert "sqlite:///statewright.db" not in text
    # What the help says is what dev really runs with.
    args = build_parser().parse_args(["dev"])
    config = config_from(args, env={}, base=DEV_DEFAULTS)
    assert config.database_url == "sqlite:///statewright-dev.db"
    assert str(config.definitions_dir) == "examples/definitions"
    # It watches the directory (and says so); serve does not.
    assert "directory is watched" in " ".join(text.split())
    assert (
        config.dev_mode and not config_from(build_parser().parse_args(["serve"]), env={}).dev_mode
    )


def test_serve_help_shows_the_defaults_serve_uses(capsys: pytest.CaptureFixture[str]) -> None:
    text = _help(capsys, "serve")
    assert f"default {ServerConfig().database_url}" in text
    assert "default none" in text  # no definitions directory
    assert "statewright-dev.db" not in text
    assert config_from(build_parser().parse_args(["serve"]), env={}) == ServerConfig()


def test_top_level_help_has_no_markup(capsys: pytest.CaptureFixture[str]) -> None:
    text = _help(capsys)
    assert "``" not in text and ":class:" not in text
    for command in ("serve", "dev", "validate", "graph", "migrate"):
        assert command in text


def test_version_names_the_server(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0
    assert capsys.readouterr().out == "statewrightd 0.1.0 (API statewright.v1)\n"
