import { createClient, type Client, type Transport } from "@connectrpc/connect";
import { createGrpcTransport, type GrpcTransportOptions } from "@connectrpc/connect-node";

import { defaultServiceConfig } from "./gen/service_config.js";
import { TaskService } from "./gen/statewright/v1/task_service_pb.js";
import { WorkflowService, type WatchWorkflowResponse } from "./gen/statewright/v1/workflow_service_pb.js";
import { withServiceConfig, type ServiceConfig } from "./service_config.js";
import { watch, type WatchOptions } from "./watch.js";

/** A promise-based WorkflowService client: one method per RPC (startWorkflow, ...). */
export type WorkflowServiceClient = Client<typeof WorkflowService>;

/** A promise-based TaskService client: pollTasks, heartbeatTask, completeTask, ... */
export type TaskServiceClient = Client<typeof TaskService>;

/**
 * One client for both services (their method names do not overlap), with the helpers that
 * span several calls.
 */
export type StatewrightClient = WorkflowServiceClient & TaskServiceClient & {
  /**
   * Yields every revision of an instance in order, resuming after dropped connections,
   * and returns after a terminal one; see watch() in watch.ts.
   */
  watch(name: string, options?: WatchOptions): AsyncGenerator<WatchWorkflowResponse, void, undefined>;
};

export type StatewrightClientOptions = Partial<GrpcTransportOptions> & {
  /** The service config to follow instead of the one shipped with the API. */
  serviceConfig?: ServiceConfig;
};

/**
 * A gRPC transport to a Statewright server that follows the service config shipped with
 * the API: per-method timeouts, and retries with backoff for UNAVAILABLE only. target is
 * "host:port" (plaintext HTTP/2) or a URL ("https://host:port" for TLS); options are
 * passed to createGrpcTransport from @connectrpc/connect-node.
 */
export function createStatewrightTransport(target: string, options: StatewrightClientOptions = {}): Transport {
  const { serviceConfig = defaultServiceConfig, ...transportOptions } = options;
  const baseUrl = target.includes("://") ? target : `http://${target}`;
  return withServiceConfig(createGrpcTransport({ baseUrl, ...transportOptions }), serviceConfig);
}

/**
 * A WorkflowService and TaskService client for target over one transport, with watch();
 * see createStatewrightTransport.
 */
export function createStatewrightClient(target: string, options: StatewrightClientOptions = {}): StatewrightClient {
  const transport = createStatewrightTransport(target, options);
  const client = createClient(WorkflowService, transport);
  return Object.assign(client, createClient(TaskService, transport), {
    watch: (name: string, watchOptions?: WatchOptions) => watch(client, name, watchOptions),
  });
}

/** The resource name of the instance with the given id, `workflows/{workflow_id}`. */
export function workflowName(workflowId: string): string {
  return `workflows/${workflowId}`;
}
