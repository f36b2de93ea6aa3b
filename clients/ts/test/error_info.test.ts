import assert from "node:assert/strict";
import { test } from "node:test";

import { ScalarType } from "@bufbuild/protobuf";
import { BinaryWriter } from "@bufbuild/protobuf/wire";
import { Code, ConnectError } from "@connectrpc/connect";

import { DOMAIN, ErrorInfoSchema, errorInfo, errorReason } from "../src/index.js";

/** google.rpc.ErrorInfo encoded by hand from error_details.proto's field numbers. */
/** A ConnectError as the gRPC transport parses it: details still encoded, by type name. */
function incoming(code: Code, details: { type: string; value: Uint8Array }[]): ConnectError {
  const err = new ConnectError("from the wire", code);
  err.details = details;
  return err;
}

function encodeErrorInfo(reason: string, domain: string, metadata: Record<string, string>): Uint8Array {
  const w = new BinaryWriter();
  w.tag(1, 2).string(reason);
  w.tag(2, 2).string(domain);
  for (const [key, value] of Object.entries(metadata)) {
    w.tag(3, 2).fork().tag(1, 2).string(key).tag(2, 2).string(value).join();
  }
  return w.finish();
}

test("errorInfo decodes google.rpc.ErrorInfo wire bytes from the status details", () => {
  const err = incoming(Code.Aborted, [
    { type: "google.rpc.RetryInfo", value: new Uint8Array([10, 0]) },
    {
      type: "google.rpc.ErrorInfo",
      value: encodeErrorInfo("REVISION_MISMATCH", "statewright.dev", { actual_revision: "3", expected_revision: "2" }),
    },
  ]);
  const info = errorInfo(err);
  assert.ok(info);
  assert.equal(info.reason, "REVISION_MISMATCH");
  assert.equal(info.domain, DOMAIN);
  assert.deepEqual(info.metadata, { actual_revision: "3", expected_revision: "2" });
  assert.equal(errorReason(err), "REVISION_MISMATCH");
});

test("errorInfo is undefined without an ErrorInfo or a ConnectError", () => {
  for (const err of [
    undefined,
    new Error("plain"),
    "a string",
    new ConnectError("down", Code.Unavailable),
    incoming(Code.Internal, [{ type: "google.rpc.RetryInfo", value: new Uint8Array() }]),
  ]) {
    assert.equal(errorInfo(err), undefined);
    assert.equal(errorReason(err), undefined);
  }
});

test("ErrorInfoSchema has the googleapis field names, numbers and types", () => {
  assert.equal(ErrorInfoSchema.typeName, "google.rpc.ErrorInfo");
  const fields = ErrorInfoSchema.fields.map((f) => [f.name, f.number, f.fieldKind]);
  assert.deepEqual(fields, [
    ["reason", 1, "scalar"],
    ["domain", 2, "scalar"],
    ["metadata", 3, "map"],
  ]);
  const metadata = ErrorInfoSchema.field["metadata"];
  assert.ok(metadata?.fieldKind === "map");
  assert.equal(metadata.mapKey, ScalarType.STRING);
  assert.equal(metadata.mapKind, "scalar");
});
