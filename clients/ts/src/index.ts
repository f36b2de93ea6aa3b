// The Statewright TypeScript client: generated statewright.v1 messages and service
// descriptors, a client factory that follows the shipped service config, a resuming watch,
// a task worker, TLS, mTLS and bearer tokens (from options or the environment), and helpers
// for the google.rpc.ErrorInfo every Statewright error carries and the RetryInfo of a
// rate-limited call.
export {
  createStatewrightClient,
  createStatewrightClientFromEnv,
  createStatewrightTransport,
  workflowName,
  type StatewrightClient,
  type StatewrightClientOptions,
  type ScheduleServiceClient,
  type TaskServiceClient,
  type WorkflowServiceClient,
} from "./client.js";
export {
  batchFinished,
  batchName,
  startBatchOperation,
  waitBatchOperation,
  type BatchServiceClient,
  type WaitBatchOptions,
} from "./batch.js";
export { parseTaskStatus, parseWorkflowStatus } from "./status.js";
export { watch, type WatchOptions } from "./watch.js";
export { ExecutionTimedOutError, execute, type ExecuteOptions } from "./execute.js";
export {
  TaskAbortError,
  TaskFailure,
  Worker,
  type TaskAbortKind,
  type TaskContext,
  type TaskFailureOptions,
  type TaskHandler,
  type WorkerLogger,
  type WorkerOptions,
  type WorkerRunOptions,
  type WorkerTask,
} from "./worker.js";
export {
  DOMAIN,
  ErrorInfoSchema,
  RetryInfoSchema,
  errorInfo,
  errorReason,
  retryDelayMs,
  type ErrorInfo,
  type RetryInfo,
} from "./error_info.js";
export {
  StatewrightConfigError,
  environmentConfig,
  isLoopback,
  type BearerToken,
  type PemSource,
  type SecurityOptions,
  type StatewrightEnvironment,
  type TokenProvider,
} from "./security.js";
export {
  codeName,
  methodPolicy,
  parseDuration,
  withServiceConfig,
  type MethodConfig,
  type MethodPolicy,
  type RetryPolicyConfig,
  type ServiceConfig,
  type ServiceConfigTransportOptions,
} from "./service_config.js";
export { defaultServiceConfig } from "./gen/service_config.js";
export * from "./gen/statewright/v1/batch_service_pb.js";
export * from "./gen/statewright/v1/definition_pb.js";
export * from "./gen/statewright/v1/diagnostics_pb.js";
export * from "./gen/statewright/v1/task_pb.js";
export * from "./gen/statewright/v1/task_service_pb.js";
export * from "./gen/statewright/v1/workflow_pb.js";
export * from "./gen/statewright/v1/workflow_service_pb.js";
export { Code, ConnectError } from "@connectrpc/connect";
export type { JsonObject, JsonValue } from "@bufbuild/protobuf";
