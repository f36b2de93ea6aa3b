import { createClient, type Client, type Transport } from "@connectrpc/connect";
import { createGrpcTransport, type GrpcTransportOptions } from "@connectrpc/connect-node";

import { defaultServiceConfig } from "./gen/service_config.js";
import { WorkflowService } from "./gen/statewright/v1/workflow_service_pb.js";
import { withServiceConfig, type ServiceConfig } from "./service_config.js";

/** A promise-based WorkflowService client: one method per RPC (startWorkflow, ...). */
export type WorkflowServiceClient = Client<typeof WorkflowService>;

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

/** A WorkflowService client for target; see createStatewrightTransport. */
export function createStatewrightClient(target: string, options: StatewrightClientOptions = {}): WorkflowServiceClient {
  return createClient(WorkflowService, createStatewrightTransport(target, options));
}

/** The resource name of the instance with the given id, `workflows/{workflow_id}`. */
export function workflowName(workflowId: string): string {
  return `workflows/${workflowId}`;
}
