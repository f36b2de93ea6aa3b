"""Workflow definitions: load YAML/JSON, validate every problem at once, compile CEL."""

from statewrightd.definitions.graph import to_dot, to_mermaid
from statewrightd.definitions.loader import load_definition, load_definition_file, validate_source
from statewrightd.definitions.model import (
    FINISH,
    Assignment,
    ContextField,
    Definition,
    SetAction,
    State,
    StateKind,
    Transition,
)
from statewrightd.definitions.problems import DefinitionInvalid, Problem
from statewrightd.definitions.values import FieldType, Reducer

__all__ = [
    "FINISH",
    "Assignment",
    "ContextField",
    "Definition",
    "DefinitionInvalid",
    "FieldType",
    "Problem",
    "Reducer",
    "SetAction",
    "State",
    "StateKind",
    "Transition",
    "load_definition",
    "load_definition_file",
    "to_dot",
    "to_mermaid",
    "validate_source",
]
