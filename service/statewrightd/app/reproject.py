"""``statewrightd reproject``: recompute the search values of existing instances.

A save projects an instance's search values as it writes the instance; instances saved
before their rows existed (saved by a server without search fields, or whose rows were
lost) have none until their next save. This reads them a page at a time, in the order
they were created, computes each one's values from its stored context as a save would,
and replaces its rows, unless a save has moved the instance on meanwhile (that save wrote
its own). It may run beside live servers, and again: the result is the same.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

from statewrightd.definitions.registry import DefinitionRegistry
from statewrightd.engine.projection import project
from statewrightd.errors import StatewrightError
from statewrightd.store.backends import open_repository
from statewrightd.store.commands import resolve_database_url
from statewrightd.store.records import SearchValues
from statewrightd.store.repository import Repository

DEFAULT_PAGE_SIZE = 500


def reproject(
    repo: Repository,
    *,
    definition: str | None = None,
    page_size: int = DEFAULT_PAGE_SIZE,
    progress: Callable[[int, int], None] | None = None,
) -> tuple[int, int]:
    """Re-project every instance (of ``definition``, when given): (instances read,
    instances whose values were replaced). ``progress`` hears both after each page."""
    registry = DefinitionRegistry(repo)
    read = replaced = 0
    token = ""
    while True:
        page = repo.list(definition=definition, page_size=page_size, page_token=token)
        items: list[tuple[str, int, SearchValues]] = []
        for record in page.items:
            compiled = registry.get(record.definition, record.version).definition
            values = project(
                compiled,
                workflow_id=record.workflow_id,
                state=record.state,
                revision=record.revision,
                context=record.context,
            )
            items.append((record.workflow_id, record.revision, values))
        read += len(items)
        replaced += repo.replace_search(items)
        if progress is not None:
            progress(read, replaced)
        token = page.next_page_token
        if not token:
            return read, replaced


def reproject_command(url: str | None, definition: str | None, page_size: int) -> int:
    """The command's run: progress on stderr, the totals on stdout; 1 on a failure."""

    def progress(read: int, replaced: int) -> None:
        print(f"read {read:,} instances, replaced {replaced:,}", file=sys.stderr)

    try:
        repo = open_repository(resolve_database_url(url), migrate=False, pool_size=2)
    except StatewrightError as exc:
        print(f"statewrightd reproject: {exc.message}", file=sys.stderr)
        return 1
    try:
        repo.ping()
        read, replaced = reproject(
            repo, definition=definition, page_size=page_size, progress=progress
        )
    except StatewrightError as exc:
        print(f"statewrightd reproject: {exc.message}", file=sys.stderr)
        return 1
    finally:
        repo.close()
    print(f"re-projected {replaced:,} of {read:,} instances")
    return 0
