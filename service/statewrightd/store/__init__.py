"""Durable storage: the only package that speaks SQL.

The runtime uses :func:`open_repository`, the records, and :class:`GroupCommitWriter`.
"""

from statewrightd.store.backends import open_repository
from statewrightd.store.records import (
    Create,
    DefinitionRecord,
    HistoryRecord,
    InstanceRecord,
    Operation,
    Page,
    RequestRecord,
    Save,
)
from statewrightd.store.repository import Repository
from statewrightd.store.schema import migrate
from statewrightd.store.writer import GroupCommitWriter, WriterStats

__all__ = [
    "Create",
    "DefinitionRecord",
    "GroupCommitWriter",
    "HistoryRecord",
    "InstanceRecord",
    "Operation",
    "Page",
    "Repository",
    "RequestRecord",
    "Save",
    "WriterStats",
    "migrate",
    "open_repository",
]
