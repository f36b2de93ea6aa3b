"""Child workflows' parent links in the in-process store."""

from __future__ import annotations

from collections.abc import Sequence

from statewrightd.store.memory_state import FINISHED, MemoryState
from statewrightd.store.records import ChildLink


class MemoryChildren(MemoryState):
    """The parent links, by child id, behind the store's one lock."""

    def __init__(self) -> None:
        super().__init__()
        self._children: dict[str, ChildLink] = {}
        self._taken: set[str] = set()  # children whose end no parent waits for any more

    def link_child(self, link: ChildLink) -> ChildLink:
        with self._held():
            return self._children.setdefault(link.workflow_id, link)

    def child_links(self, workflow_ids: Sequence[str]) -> dict[str, ChildLink]:
        with self._held():
            return {w: self._children[w] for w in workflow_ids if w in self._children}

    def children_of(self, parent_id: str, limit: int) -> tuple[int, list[str]]:
        with self._held():
            live = sorted(
                link.workflow_id
                for link in self._children.values()
                if link.parent_id == parent_id and self._live(link.workflow_id)
            )
        return len(live), live[:limit]

    def live_children(self, after: str, limit: int) -> list[ChildLink]:
        with self._held():
            found = sorted(
                (link for w, link in self._children.items() if w > after and self._live(w)),
                key=lambda link: link.workflow_id,
            )
        return found[:limit]

    def untaken_children(self, limit: int) -> list[ChildLink]:
        with self._held():
            found = sorted(
                (
                    link
                    for w, link in self._children.items()
                    if w not in self._taken and w in self._instances and not self._live(w)
                ),
                key=lambda link: link.workflow_id,
            )
        return found[:limit]

    def take_children(self, workflow_ids: Sequence[str]) -> int:
        with self._held():
            fresh = {w for w in workflow_ids if w in self._children} - self._taken
            self._taken |= fresh
        return len(fresh)

    def kept_for_parent(self, workflow_id: str) -> bool:
        """Whether retention keeps this finished instance: a child whose end its parent
        has not taken yet."""
        return workflow_id in self._children and workflow_id not in self._taken

    def _live(self, workflow_id: str) -> bool:
        instance = self._instances.get(workflow_id)
        return instance is not None and instance.status not in FINISHED
