"""Which files are definitions: what a definitions directory is read for."""

from __future__ import annotations

from pathlib import Path

SUFFIXES = (".yaml", ".yml", ".json")
# Scenario files (``statewrightd test``) live beside the definitions they test: a file
# named like this is one of them, never a definition.
SCENARIO_SUFFIXES = (".test.yaml", ".test.yml", ".test.json")
# Declarative schedules (a ``schedules:`` list) live beside the definitions they start.
SCHEDULE_SUFFIXES = (".schedules.yaml", ".schedules.yml", ".schedules.json")


def is_definition_file(path: Path) -> bool:
    """A definition's file name: YAML or JSON, and not a scenario, schedules or queues file."""
    return (
        path.suffix in SUFFIXES
        and not path.name.endswith(SCENARIO_SUFFIXES + SCHEDULE_SUFFIXES)
        and not is_queues_file(path)
    )


def is_schedules_file(path: Path) -> bool:
    return path.name.endswith(SCHEDULE_SUFFIXES)


def is_queues_file(path: Path) -> bool:
    """A file of queue configs (flow control): ``queues.yaml`` or ``<name>.queues.yaml``."""
    return path.suffix in SUFFIXES and (path.stem == "queues" or path.stem.endswith(".queues"))


def is_scenario_file(path: Path) -> bool:
    return path.name.endswith(SCENARIO_SUFFIXES)
