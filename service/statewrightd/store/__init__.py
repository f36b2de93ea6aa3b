"""Durable storage: the only package that speaks SQL.

The runtime opens a :class:`Repository` with :func:`open_repository`, hands it the
records of store/records.py, and saves through the :class:`GroupCommitWriter`.
"""

from statewrightd.store.backends import open_repository
from statewrightd.store.repository import Repository
from statewrightd.store.schema import migrate
from statewrightd.store.writer import GroupCommitWriter, WriterStats

__all__ = ["GroupCommitWriter", "Repository", "WriterStats", "migrate", "open_repository"]
