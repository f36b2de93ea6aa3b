"""Reads: definitions, one instance, a page of them, a count, history.

Plain reads go straight to the store on the read pool (``Storage``): they touch no live
state, so they need not pass the EventLoop. An instance is read whole by the engine's
one loader; one that is not there is explained by its tombstone when retention removed
it. An instance out of the call's view is refused as one that is not there
(statewrightd.visibility).
"""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

from statewrightd import errors, visibility
from statewrightd.app.storage import Storage
from statewrightd.definitions.registry import DefinitionRegistry, Loaded
from statewrightd.domain import TEXT_KINDS, SearchKind
from statewrightd.engine.loading import Found, InstanceLoader, with_family
from statewrightd.engine.model import TransitionTaken
from statewrightd.engine.sessions import RECENT_TRANSITIONS
from statewrightd.engine.snapshots import transitions_from_dicts
from statewrightd.engine.stepping import workflow_not_found
from statewrightd.reasons import Reason
from statewrightd.store.filters import Filter, parse_filter
from statewrightd.store.records import (
    OLDEST_FIRST,
    HistoryRecord,
    InstanceRecord,
    ListOrder,
    OrderKey,
    Page,
    Tombstone,
)
from statewrightd.store.repository import Repository

# Instances read per query when counting them (the store's largest page).
COUNT_PAGE = 1000


@dataclass(frozen=True, slots=True)
class WorkflowFilter:
    """Which instances a list or a count is of (None: any)."""

    definition: str | None = None
    status: str | None = None
    id_prefix: str | None = None
    filter: str = ""  # a list filter (store.filters), checked against the search fields


class Reads:
    def __init__(self, repo: Repository, registry: DefinitionRegistry, storage: Storage) -> None:
        self._repo = repo
        self._registry = registry
        self._loader = InstanceLoader(repo, registry)
        self._storage = storage

    # -- definitions -----------------------------------------------------------------

    async def definition(self, name: str, version: int | None) -> Loaded:
        """One version of a definition (None: the latest), compiled."""
        registry = self._registry
        cached = registry.cached(name, version) if version else registry.latest_cached(name)
        if cached is not None:
            return cached
        return await self._storage.read(lambda: registry.get(name, version))

    async def definitions(self) -> list[Loaded]:
        """Every version of every definition recorded, by name and version."""
        return await self._storage.read(self._registry.all_recorded)

    # -- instances -------------------------------------------------------------------

    async def get(self, workflow_id: str) -> Found:
        loader, repo = self._loader, self._repo

        def read() -> Found:
            try:
                found = loader.load(workflow_id)
            except errors.RecordNotFound:
                raise not_found(workflow_id, repo.lookup_tombstone(workflow_id)) from None
            return with_family(repo, [found])[0]

        found = await self._storage.read(read)
        visibility.check(found.record.definition)
        return found

    async def list_workflows(
        self,
        which: WorkflowFilter,
        page_size: int,
        page_token: str,
        order: ListOrder = OLDEST_FIRST,
    ) -> tuple[Page[InstanceRecord], list[Found]]:
        """One page of instances, each whole (their timers and tasks in one query each)."""
        repo, loader = self._repo, self._loader

        def read() -> tuple[Page[InstanceRecord], list[Found]]:
            page = repo.list(
                definition=which.definition,
                status=which.status,
                page_size=page_size,
                page_token=page_token,
                order=self._order(order),
                id_prefix=which.id_prefix,
                which=self._filter(which.filter),
            )
            return page, with_family(repo, loader.complete(page.items))

        return await self._storage.read(read)

    async def count_by_status(self, filter_text: str) -> dict[str, int]:
        """How many instances a list filter matches, by status."""
        repo = self._repo
        return await self._storage.read(lambda: repo.count_by_status(self._filter(filter_text)))

    def _filter(self, text: str) -> Filter | None:
        """A list filter, checked against the search fields of every recorded definition
        (I/O: run on the read pool)."""
        if not text.strip():
            return None
        return parse_filter(text, self._search_fields())

    def _search_fields(self) -> dict[str, SearchKind]:
        """Every search field some recorded definition declares, by name (I/O)."""
        fields: dict[str, SearchKind] = {}
        for loaded in sorted(self._registry.all_recorded(), key=lambda x: x.definition.key):
            for field_def in loaded.definition.search_fields.values():
                fields.setdefault(field_def.name, field_def.kind)
        return fields

    def _order(self, order: ListOrder) -> ListOrder:
        """An order's search keys, checked against the declared fields (I/O)."""
        if not any(key.column.startswith("search.") for key in order.keys):
            return order
        fields = self._search_fields()
        first, *then = (self._search_key(key, fields) for key in order.keys)
        return dataclasses.replace(order, value_column=first.value_column, then=tuple(then))

    @staticmethod
    def _search_key(key: OrderKey, fields: dict[str, SearchKind]) -> OrderKey:
        """A key of a search field that can order a listing, with the search table's column
        its values are in; any other key as it is."""
        if not key.column.startswith("search."):
            return key
        name = key.column.removeprefix("search.")
        kind = fields.get(name)
        if kind is None or kind in (SearchKind.KEYWORD_LIST, SearchKind.TEXT):
            close = difflib.get_close_matches(name, list(fields), n=1)
            why = (
                f"search.{name} cannot order a listing (a {kind} field)"
                if kind is not None
                else f"unknown field search.{name}"
                + (f", did you mean search.{close[0]}" if close else "")
            )
            raise errors.InvalidArgument(
                f"order_by: {why}",
                reason=Reason.INVALID_ORDER_BY,
                metadata={"field": "order_by", "problem": why},
            )
        column: Literal["text", "number"] = "text" if kind in TEXT_KINDS else "number"
        return dataclasses.replace(key, value_column=column)

    async def count_workflows(self, which: WorkflowFilter, limit: int) -> tuple[int, bool]:
        """How many instances match, counted up to ``limit``; True when there are more."""

        def read() -> tuple[int, bool]:
            count = 0
            for page in self._pages(which, limit):
                count += len(page.items)
            return min(count, limit), count > limit

        return await self._storage.read(read)

    async def matching_ids(self, which: WorkflowFilter, limit: int) -> list[str]:
        """The ids of the instances ListWorkflows would show this call for ``which`` (its
        query, its filter, the call's view), by id; at most ``limit`` + 1 of them, so that
        a caller can tell that there are more than ``limit``."""
        view = visibility.current()

        def read() -> list[str]:
            ids = [
                record.workflow_id
                for page in self._pages(which, limit)
                for record in page.items
                if view is None or view.allows(record.definition)
            ]
            return sorted(ids)[: limit + 1]

        return await self._storage.read(read)

    def _pages(self, which: WorkflowFilter, limit: int) -> Iterator[Page[InstanceRecord]]:
        """The pages of a listing of ``which``, until more than ``limit`` instances are
        listed or there are no more (I/O: run on the read pool)."""
        repo, token, listed = self._repo, "", 0
        found = self._filter(which.filter)
        while listed <= limit:
            page = repo.list(
                definition=which.definition,
                status=which.status,
                page_size=min(COUNT_PAGE, limit + 1 - listed),
                page_token=token,
                id_prefix=which.id_prefix,
                which=found,
            )
            listed += len(page.items)
            yield page
            token = page.next_page_token
            if not token:
                return

    async def answered(self, workflow_id: str, request_id: str) -> bool:
        """Whether a step with ``request_id`` was saved on instance ``workflow_id``."""
        repo = self._repo
        found = await self._storage.read(lambda: repo.lookup_request(workflow_id, request_id))
        return found is not None

    async def explain_missing(self, workflow_id: str, error: errors.NotFound) -> errors.NotFound:
        """A step's NOT_FOUND, saying that the instance expired when a tombstone says so."""
        if error.reason != Reason.WORKFLOW_NOT_FOUND:
            return error
        repo = self._repo
        try:
            tombstone = await self._storage.read(lambda: repo.lookup_tombstone(workflow_id))
        except errors.StatewrightError:
            return error  # the step's answer stands; the explanation is only a courtesy
        return error if tombstone is None else not_found(workflow_id, tombstone)

    # -- history ---------------------------------------------------------------------

    async def history_after(
        self, workflow_id: str, after_revision: int, limit: int
    ) -> list[HistoryRecord]:
        repo = self._repo
        return await self._storage.read(
            lambda: repo.history_after(workflow_id, after_revision, limit)
        )

    async def recent_transitions(
        self, workflow_id: str, revision: int
    ) -> tuple[tuple[TransitionTaken, str], ...]:
        """The last transitions of an instance's saved steps (up to as many as a session
        remembers), each with who caused its step, from its history; none when storage
        cannot be read."""
        after = max(0, revision - RECENT_TRANSITIONS)
        try:
            rows = await self.history_after(workflow_id, after, RECENT_TRANSITIONS)
        except errors.StatewrightError:
            return ()
        taken = [
            (t, row.actor or "") for row in rows for t in transitions_from_dicts(row.transitions)
        ]
        return tuple(taken[-RECENT_TRANSITIONS:])


def not_found(workflow_id: str, tombstone: Tombstone | None) -> errors.NotFound:
    if tombstone is None:
        return workflow_not_found(workflow_id)
    return errors.NotFound(
        f"workflow {workflow_id} expired: it finished, its retention passed, and it was "
        f"removed at {tombstone.removed_time.isoformat()}",
        reason=Reason.WORKFLOW_EXPIRED,
        metadata={
            "workflow_id": workflow_id,
            "expire_time": tombstone.expire_time.isoformat(),
            "removed_time": tombstone.removed_time.isoformat(),
        },
    )
