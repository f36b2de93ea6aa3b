import { createClient, type Client, type Transport } from "@connectrpc/connect";
import { createGrpcTransport, type GrpcTransportOptions } from "@connectrpc/connect-node";

import { defaultServiceConfig } from "./gen/service_config.js";
import { ScheduleService } from "./gen/statewright/v1/schedule_service_pb.js";
import { BatchService, type BatchOperation } from "./gen/statewright/v1/batch_service_pb.js";
import { TaskService } from "./gen/statewright/v1/task_service_pb.js";
import type { MessageInitShape } from "@bufbuild/protobuf";

import { startBatchOperation, waitBatchOperation, type BatchServiceClient, type WaitBatchOptions } from "./batch.js";
import { execute, type ExecuteOptions } from "./execute.js";
import type { Workflow } from "./gen/statewright/v1/workflow_pb.js";
import {
  WorkflowService,
  type StartWorkflowRequestSchema,
  type WatchWorkflowResponse,
} from "./gen/statewright/v1/workflow_service_pb.js";
import { environmentConfig, resolveSecurity, type SecurityOptions, type StatewrightEnvironment } from "./security.js";
import { withServiceConfig, type ServiceConfig } from "./service_config.js";
import { traceInterceptor } from "./tracing.js";
import { watch, type WatchOptions } from "./watch.js";

/** A promise-based WorkflowService client: one method per RPC (startWorkflow, ...). */
export type WorkflowServiceClient = Client<typeof WorkflowService>;

/** A promise-based TaskService client: pollTasks, heartbeatTask, completeTask, ... */
export type TaskServiceClient = Client<typeof TaskService>;

/** A promise-based ScheduleService client: createSchedule, getSchedule, pauseSchedule, ... */
export type ScheduleServiceClient = Client<typeof ScheduleService>;

/**
 * One client for the four services (their method names do not overlap), with the helpers
 * that span several calls. Its startBatchOperation makes a batchId when the request has none
 * (see startBatchOperation() in batch.ts).
 */
export type StatewrightClient = WorkflowServiceClient & TaskServiceClient & ScheduleServiceClient & BatchServiceClient & {
  /** The largest message this client receives (its transport's readMaxBytes). */
  readonly readMaxBytes: number;
  /**
   * Yields every revision of an instance in order, resuming after dropped connections,
   * and returns after a terminal one; see watch() in watch.ts.
   */
  watch(name: string, options?: WatchOptions): AsyncGenerator<WatchWorkflowResponse, void, undefined>;
  /**
   * Starts an instance and resolves with it once it rests (WAITING, or finished), or with
   * until: "finish" once it finished; see execute() in execute.ts.
   */
  execute(request: MessageInitShape<typeof StartWorkflowRequestSchema>, options?: ExecuteOptions): Promise<Workflow>;
  /**
   * Reads a batch until it has finished, reporting each change, and resolves with it as it
   * ended; see waitBatchOperation() in batch.ts.
   */
  waitBatchOperation(name: string, options?: WaitBatchOptions): Promise<BatchOperation>;
};

export type StatewrightClientOptions = Partial<GrpcTransportOptions> &
  SecurityOptions & {
    /** The service config to follow instead of the one shipped with the API. */
    serviceConfig?: ServiceConfig;
  };

/**
 * A gRPC transport to a Statewright server that follows the service config shipped with
 * the API: per-method timeouts, and retries with backoff for UNAVAILABLE only. target is
 * "host:port" or a URL ("https://host:port" for TLS). The security options (tls, ca,
 * cert, key, serverName, token, insecure; see SecurityOptions) are checked here: a
 * contradiction, an unreadable PEM file or a token bound for plaintext off this machine
 * throws a StatewrightConfigError. The rest are passed to createGrpcTransport from
 * @connectrpc/connect-node; its interceptors run outside the one that adds the token.
 */
export function createStatewrightTransport(target: string, options: StatewrightClientOptions = {}): Transport {
  const {
    serviceConfig = defaultServiceConfig,
    tls,
    ca,
    cert,
    key,
    serverName,
    token,
    insecure,
    ...transportOptions
  } = options;
  const security = resolveSecurity(target, { tls, ca, cert, key, serverName, token, insecure });
  // The caller's trace context goes with every call (a no-op without an OpenTelemetry SDK).
  const interceptors = [...(transportOptions.interceptors ?? []), traceInterceptor];
  if (security.interceptor) {
    interceptors.push(security.interceptor);
  }
  const nodeOptions = security.nodeOptions ? { ...transportOptions.nodeOptions, ...security.nodeOptions } : transportOptions.nodeOptions;
  const readMaxBytes = transportOptions.readMaxBytes ?? DEFAULT_READ_MAX_BYTES;
  return withServiceConfig(
    createGrpcTransport({ ...transportOptions, readMaxBytes, baseUrl: security.baseUrl, nodeOptions, interceptors }),
    serviceConfig,
  );
}

/** The largest message a client receives unless readMaxBytes says otherwise: gRPC's default, 4 MiB. */
export const DEFAULT_READ_MAX_BYTES = 4 * 1024 * 1024;

/**
 * A WorkflowService, TaskService, ScheduleService and BatchService client for target over one
 * transport, with watch(), execute() and waitBatchOperation(); see createStatewrightTransport.
 */
export function createStatewrightClient(target: string, options: StatewrightClientOptions = {}): StatewrightClient {
  const transport = createStatewrightTransport(target, options);
  const client = createClient(WorkflowService, transport);
  const batches = createClient(BatchService, transport);
  return Object.assign(client, createClient(TaskService, transport), createClient(ScheduleService, transport), batches, {
    startBatchOperation: ((request, callOptions) =>
      startBatchOperation(batches, request, callOptions)) satisfies BatchServiceClient["startBatchOperation"],
    waitBatchOperation: (name: string, waitOptions?: WaitBatchOptions) => waitBatchOperation(batches, name, waitOptions),
    readMaxBytes: options.readMaxBytes ?? DEFAULT_READ_MAX_BYTES,
    watch: (name: string, watchOptions?: WatchOptions) => watch(client, name, watchOptions),
    execute: (request: MessageInitShape<typeof StartWorkflowRequestSchema>, executeOptions?: ExecuteOptions) =>
      execute(client, request, executeOptions),
  });
}

/**
 * The client that the environment describes (see environmentConfig): STATEWRIGHT_ADDRESS
 * (or STATEWRIGHT_TARGET), STATEWRIGHT_TOKEN and STATEWRIGHT_TLS_CA, _CERT and _KEY.
 * options win over the environment, address included, so a program can take the address
 * from its command line and the credentials from the environment.
 */
export function createStatewrightClientFromEnv(
  options: StatewrightClientOptions & { address?: string | undefined } = {},
  env: StatewrightEnvironment = process.env,
): StatewrightClient {
  const fromEnv = environmentConfig(env);
  const { address, ...rest } = options;
  const given = Object.fromEntries(Object.entries(rest).filter(([, value]) => value !== undefined));
  return createStatewrightClient(address || fromEnv.address, { ...fromEnv.options, ...given });
}

/** The resource name of the instance with the given id, `workflows/{workflow_id}`. */
export function workflowName(workflowId: string): string {
  return `workflows/${workflowId}`;
}
