"""What both backends share: single writes as one-item batches, encoding before any I/O."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence

from statewrightd.errors import SerializationError, StoreError
from statewrightd.store.codec import EncodedOp, encode_op
from statewrightd.store.records import Create, InstanceRecord, Operation, Save


class BatchWriter(ABC):
    def create(self, op: Create) -> InstanceRecord:
        result = self.apply_batch([op])[0]
        if isinstance(result, StoreError):
            raise result
        return result

    def save(self, op: Save) -> int:
        result = self.apply_batch([op])[0]
        if isinstance(result, StoreError):
            raise result
        return result.revision

    def apply_batch(self, ops: Sequence[Operation]) -> list[InstanceRecord | StoreError]:
        # Values are encoded (and refused) before anything is sent, so an unstorable value
        # fails its own row and never reaches the transaction of the others.
        results: list[InstanceRecord | StoreError | None] = [None] * len(ops)
        encoded: list[tuple[int, EncodedOp]] = []
        for i, op in enumerate(ops):
            try:
                encoded.append((i, encode_op(op)))
            except SerializationError as exc:
                results[i] = exc
        if encoded:
            for (i, _), outcome in zip(encoded, self._write([e for _, e in encoded]), strict=True):
                results[i] = outcome
        return [r for r in results if r is not None]

    @abstractmethod
    def _write(self, encoded: list[EncodedOp]) -> list[InstanceRecord | StoreError]:
        """Write encoded operations in one transaction; one result per operation."""
