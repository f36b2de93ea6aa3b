import { create, createFileRegistry, type Message } from "@bufbuild/protobuf";
import type { GenMessage } from "@bufbuild/protobuf/codegenv2";
import {
  FieldDescriptorProto_Label,
  FieldDescriptorProto_Type,
  FileDescriptorProtoSchema,
  file_google_protobuf_duration,
  type Duration,
} from "@bufbuild/protobuf/wkt";
import { ConnectError } from "@connectrpc/connect";

/** The ErrorInfo domain of every error a Statewright server sends. */
export const DOMAIN = "statewright.dev";

/**
 * google.rpc.ErrorInfo: why a call failed (`reason`, UPPER_SNAKE, for example
 * `REVISION_MISMATCH`), who says so (`domain`) and the dynamic values (`metadata`, for example
 * `actual_revision`).
 */
export type ErrorInfo = Message<"google.rpc.ErrorInfo"> & {
  reason: string;
  domain: string;
  metadata: { [key: string]: string };
};

/**
 * google.rpc.RetryInfo: how long the server asks the caller to wait before it tries again
 * (`retryDelay`). A Statewright server sends one, beside the ErrorInfo, with
 * RESOURCE_EXHAUSTED `RATE_LIMITED`.
 */
export type RetryInfo = Message<"google.rpc.RetryInfo"> & {
  retryDelay?: Duration;
};

const { OPTIONAL, REPEATED } = FieldDescriptorProto_Label;
const { STRING, MESSAGE } = FieldDescriptorProto_Type;

/**
 * The two messages of google/rpc/error_details.proto this client needs, with the field
 * names and numbers of the googleapis original (which @bufbuild/protobuf does not ship):
 * ErrorInfo (reason = 1, domain = 2, map<string, string> metadata = 3) and RetryInfo
 * (google.protobuf.Duration retry_delay = 1).
 */
const errorDetails = createFileRegistry(
  create(FileDescriptorProtoSchema, {
    name: "google/rpc/error_details.proto",
    package: "google.rpc",
    syntax: "proto3",
    dependency: ["google/protobuf/duration.proto"],
    messageType: [
      {
        name: "ErrorInfo",
        field: [
          { name: "reason", jsonName: "reason", number: 1, label: OPTIONAL, type: STRING },
          { name: "domain", jsonName: "domain", number: 2, label: OPTIONAL, type: STRING },
          {
            name: "metadata",
            jsonName: "metadata",
            number: 3,
            label: REPEATED,
            type: MESSAGE,
            typeName: ".google.rpc.ErrorInfo.MetadataEntry",
          },
        ],
        nestedType: [
          {
            name: "MetadataEntry",
            field: [
              { name: "key", jsonName: "key", number: 1, label: OPTIONAL, type: STRING },
              { name: "value", jsonName: "value", number: 2, label: OPTIONAL, type: STRING },
            ],
            options: { mapEntry: true },
          },
        ],
      },
      {
        name: "RetryInfo",
        field: [
          {
            name: "retry_delay",
            jsonName: "retryDelay",
            number: 1,
            label: OPTIONAL,
            type: MESSAGE,
            typeName: ".google.protobuf.Duration",
          },
        ],
      },
    ],
  }),
  (name) => (name === "google/protobuf/duration.proto" ? file_google_protobuf_duration : undefined),
);

/** The descriptor of google.rpc.ErrorInfo. */
export const ErrorInfoSchema = errorDetails.getMessage("google.rpc.ErrorInfo") as GenMessage<ErrorInfo>;

/** The descriptor of google.rpc.RetryInfo. */
export const RetryInfoSchema = errorDetails.getMessage("google.rpc.RetryInfo") as GenMessage<RetryInfo>;

/**
 * The google.rpc.ErrorInfo in the status details of a failed call's error, or undefined
 * when the error is not a ConnectError or carries no ErrorInfo. A Statewright server
 * attaches exactly one ErrorInfo to every error.
 */
export function errorInfo(err: unknown): ErrorInfo | undefined {
  if (!(err instanceof ConnectError)) {
    return undefined;
  }
  return err.findDetails(ErrorInfoSchema)[0];
}

/** The ErrorInfo reason of a failed call's error, or undefined when it has none. */
export function errorReason(err: unknown): string | undefined {
  return errorInfo(err)?.reason;
}

/**
 * The delay in milliseconds that a failed call's RetryInfo asks for (a Statewright server
 * sends one with RESOURCE_EXHAUSTED `RATE_LIMITED`), or undefined when it has none.
 */
export function retryDelayMs(err: unknown): number | undefined {
  if (!(err instanceof ConnectError)) {
    return undefined;
  }
  const delay = err.findDetails(RetryInfoSchema)[0]?.retryDelay;
  if (delay === undefined) {
    return undefined;
  }
  const ms = Number(delay.seconds) * 1000 + delay.nanos / 1e6;
  return Number.isFinite(ms) && ms >= 0 ? ms : undefined;
}
