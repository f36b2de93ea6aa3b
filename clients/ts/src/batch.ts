// Batch operations (BatchService): a start that is safe to retry, and a batch followed to its
// end. The four RPCs themselves are the generated client's.
import { randomUUID } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";

import type { MessageInitShape } from "@bufbuild/protobuf";
import type { CallOptions, Client } from "@connectrpc/connect";

import {
  BatchService,
  BatchState,
  type BatchOperation,
  type StartBatchOperationRequestSchema,
  type StartBatchOperationResponse,
} from "./gen/statewright/v1/batch_service_pb.js";

/** A promise-based BatchService client: startBatchOperation, getBatchOperation, ... */
export type BatchServiceClient = Client<typeof BatchService>;

/** The resource name of the batch with the given id, `batches/{batch_id}`. */
export function batchName(batchId: string): string {
  return batchId.startsWith("batches/") ? batchId : `batches/${batchId}`;
}

/** Whether a batch has ended: COMPLETED or CANCELLED. */
export function batchFinished(batch: BatchOperation | undefined): boolean {
  return batch?.state === BatchState.COMPLETED || batch?.state === BatchState.CANCELLED;
}

/**
 * StartBatchOperation with a batch id made here when the request has none (and is not a dry
 * run): the service config retries a start that failed with UNAVAILABLE, and a retry with the
 * same id and request answers the batch the first attempt started instead of a second one.
 */
export function startBatchOperation(
  client: BatchServiceClient,
  request: MessageInitShape<typeof StartBatchOperationRequestSchema>,
  options?: CallOptions,
): Promise<StartBatchOperationResponse> {
  const batchId = request.batchId || (request.dryRun ? "" : randomUUID());
  return client.startBatchOperation({ ...request, batchId }, options);
}

export interface WaitBatchOptions {
  /** How often to read the batch, in milliseconds (default 1000). */
  intervalMs?: number;
  /** Called with the batch as first read, and again each time its state or counts changed. */
  onProgress?: (batch: BatchOperation) => void;
  /** Stops the wait and the read in flight: the promise rejects (an AbortError, or the read's ConnectError). */
  signal?: AbortSignal;
}

/**
 * Reads the batch `name` (an id or `batches/{id}`) every intervalMs until it has finished,
 * and resolves with it as it ended (COMPLETED or CANCELLED). A failed read rejects at once,
 * with its ConnectError.
 */
export async function waitBatchOperation(
  client: BatchServiceClient,
  name: string,
  options: WaitBatchOptions = {},
): Promise<BatchOperation> {
  const intervalMs = options.intervalMs ?? 1000;
  if (!(intervalMs > 0)) {
    throw new RangeError(`intervalMs must be positive, not ${intervalMs}`);
  }
  let seen: BatchOperation | undefined;
  for (;;) {
    const { batch } = await client.getBatchOperation(
      { name: batchName(name), failuresPageSize: 1 },
      { signal: options.signal },
    );
    if (batch === undefined) {
      throw new TypeError(`GetBatchOperation of ${name} answered no batch`);
    }
    if (seen === undefined || progressed(seen, batch)) {
      options.onProgress?.(batch);
    }
    seen = batch;
    if (batchFinished(batch)) {
      return batch;
    }
    await sleep(intervalMs, undefined, { signal: options.signal });
  }
}

function progressed(before: BatchOperation, after: BatchOperation): boolean {
  return (
    before.state !== after.state ||
    before.matched !== after.matched ||
    before.done !== after.done ||
    before.failed !== after.failed
  );
}
