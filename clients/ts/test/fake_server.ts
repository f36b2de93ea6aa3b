// An in-process WorkflowService over HTTP/2 with the gRPC protocol, for tests: serve()
// runs any implementation; fakeWorkflowService() behaves like the example definitions as
// far as the conformance scenario looks, with knobs that make it deviate on purpose.
import { createServer, type Http2Server, type ServerHttp2Session } from "node:http2";
import type { AddressInfo } from "node:net";
import { EventEmitter, once } from "node:events";

import { clone, create } from "@bufbuild/protobuf";
import { Code, ConnectError, type ConnectRouter, type ServiceImpl } from "@connectrpc/connect";
import { connectNodeAdapter } from "@connectrpc/connect-node";

import { ErrorInfoSchema } from "../src/error_info.js";
import {
  SignalRejection,
  WatchEventType,
  WatchWorkflowResponseSchema,
  WorkflowService,
  type WatchWorkflowResponse,
} from "../src/gen/statewright/v1/workflow_service_pb.js";
import { WorkflowSchema, WorkflowStatus, type Workflow } from "../src/gen/statewright/v1/workflow_pb.js";

export type WorkflowServiceImpl = Partial<ServiceImpl<typeof WorkflowService>>;

export interface Served {
  target: string;
  close(): Promise<void>;
  /** Destroys every client connection, as a crashing server or a broken network would. */
  dropConnections(): void;
}

export async function serve(impl: WorkflowServiceImpl): Promise<Served> {
  const handler = connectNodeAdapter({
    grpc: true,
    connect: false,
    grpcWeb: false,
    routes: (router: ConnectRouter) => router.service(WorkflowService, impl),
  });
  const server: Http2Server = createServer(handler);
  const sessions = new Set<ServerHttp2Session>();
  server.on("session", (session: ServerHttp2Session) => {
    sessions.add(session);
    session.on("close", () => sessions.delete(session));
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as AddressInfo;
  return {
    target: `127.0.0.1:${port}`,
    dropConnections: () => {
      for (const session of sessions) session.destroy();
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        // Drop idle client sessions so that close() does not wait for them.
        for (const session of sessions) session.destroy();
      }),
  };
}

export function statewrightError(code: Code, reason: string, metadata: Record<string, string> = {}): ConnectError {
  return new ConnectError(reason, code, undefined, [
    { desc: ErrorInfoSchema, value: { reason, domain: "statewright.dev", metadata } },
  ]);
}

export interface FakeKnobs {
  mismatchReason?: string;
  watchEndError?: ConnectError;
  skipRevision?: boolean;
  duplicatePage?: boolean;
  signalStatus?: WorkflowStatus;
}

const terminal = (s: WorkflowStatus) =>
  s === WorkflowStatus.COMPLETED || s === WorkflowStatus.FAILED || s === WorkflowStatus.CANCELLED;

export function fakeWorkflowService(knobs: FakeKnobs = {}): WorkflowServiceImpl {
  const workflows = new Map<string, Workflow>();
  const history = new Map<string, WatchWorkflowResponse[]>();
  const changed = new EventEmitter();
  changed.setMaxListeners(0);

  const save = (wf: Workflow, event: string): Workflow => {
    wf.revision++;
    if (terminal(wf.status)) wf.acceptedEvents = [];
    const snapshot = clone(WorkflowSchema, wf);
    const list = history.get(wf.name) ?? [];
    list.push(create(WatchWorkflowResponseSchema, { type: WatchEventType.STEP, revision: wf.revision, workflow: snapshot, event }));
    history.set(wf.name, list);
    changed.emit("change");
    return snapshot;
  };
  const find = (name: string): Workflow => {
    const wf = workflows.get(name);
    if (!wf) throw statewrightError(Code.NotFound, "WORKFLOW_NOT_FOUND", { name });
    return wf;
  };

  return {
    startWorkflow(req) {
      const name = `workflows/${req.workflowId}`;
      if (workflows.has(name)) {
        throw statewrightError(Code.AlreadyExists, "WORKFLOW_ALREADY_EXISTS", { workflow_id: req.workflowId });
      }
      const wf = create(WorkflowSchema, { name, workflowId: req.workflowId, definition: req.definition, version: 1 });
      switch (req.definition) {
        case "mail-approval":
          Object.assign(wf, { state: "awaiting_approval", status: WorkflowStatus.WAITING, acceptedEvents: ["approve", "reject"] });
          break;
        case "review-loop":
          Object.assign(wf, { state: "evaluating", status: WorkflowStatus.RUNNING, acceptedEvents: ["score"] });
          break;
        case "order-pricing":
          Object.assign(wf, { state: "__finish__", status: WorkflowStatus.COMPLETED });
          break;
        default:
          throw statewrightError(Code.NotFound, "DEFINITION_NOT_FOUND", { definition: req.definition });
      }
      workflows.set(name, wf);
      return { workflow: save(wf, ""), created: true };
    },

    resumeWorkflow(req) {
      const wf = find(req.name);
      if (req.expectedRevision !== 0n && req.expectedRevision !== wf.revision) {
        throw statewrightError(Code.Aborted, knobs.mismatchReason ?? "REVISION_MISMATCH", {
          actual_revision: String(wf.revision),
          expected_revision: String(req.expectedRevision),
        });
      }
      Object.assign(wf, { state: "__finish__", status: WorkflowStatus.COMPLETED });
      return { workflow: save(wf, req.event) };
    },

    signalWorkflow(req) {
      const wf = find(req.name);
      let response;
      if (wf.status !== WorkflowStatus.RUNNING) {
        response = { accepted: false, reason: SignalRejection.NOT_RUNNING, workflow: clone(WorkflowSchema, wf) };
      } else if (wf.state === "evaluating" && req.event === "score") {
        const score = req.payload?.["score"];
        if (typeof score === "number" && score >= 0.8) {
          Object.assign(wf, { state: "__finish__", status: WorkflowStatus.COMPLETED });
        } else {
          Object.assign(wf, { state: "improving", acceptedEvents: ["revised"] });
        }
        response = { accepted: true, workflow: save(wf, req.event) };
      } else if (wf.state === "improving" && req.event === "revised") {
        Object.assign(wf, { state: "evaluating", acceptedEvents: ["score"] });
        response = { accepted: true, workflow: save(wf, req.event) };
      } else {
        throw statewrightError(Code.InvalidArgument, "UNKNOWN_EVENT", { event: req.event });
      }
      if (knobs.signalStatus !== undefined) response.workflow.status = knobs.signalStatus;
      return response;
    },

    getWorkflow(req) {
      return { workflow: clone(WorkflowSchema, find(req.name)) };
    },

    listWorkflows(req) {
      const matching = [...workflows.values()].filter((wf) => !req.definition || wf.definition === req.definition);
      const offset = req.pageToken ? Number(req.pageToken) : 0;
      const end = Math.min(offset + req.pageSize, matching.length);
      const page = matching.slice(offset, end);
      if (knobs.duplicatePage && offset > 0 && matching[0]) page.unshift(matching[0]);
      return { workflows: page, nextPageToken: end < matching.length ? String(end) : "" };
    },

    getDiagnostics() {
      return {
        build: { version: "0.0.0-fake" },
        definitions: ["definitions/mail-approval/versions/1", "definitions/review-loop/versions/1"],
      };
    },

    // As the server does: CURRENT first without after_revision; with it, the history after
    // it, and an empty OK stream when the instance ended at or before it.
    async *watchWorkflow(req, ctx) {
      const now = clone(WorkflowSchema, find(req.name));
      let next: bigint;
      let ended: boolean;
      if (req.afterRevision === undefined) {
        yield { type: WatchEventType.CURRENT, revision: now.revision, workflow: now };
        next = now.revision + 1n;
        ended = terminal(now.status);
      } else {
        next = req.afterRevision + 1n;
        ended = terminal(now.status) && next > now.revision;
      }
      while (!ended) {
        const list = history.get(req.name) ?? [];
        const message = list[Number(next) - 1];
        if (!message) {
          await once(changed, "change", { signal: ctx.signal });
          continue;
        }
        next++;
        ended = terminal(message.workflow?.status ?? WorkflowStatus.UNSPECIFIED);
        if (knobs.skipRevision) {
          if (!ended) continue;
          const skipped = clone(WatchWorkflowResponseSchema, message);
          skipped.revision++;
          if (skipped.workflow) skipped.workflow.revision++;
          yield skipped;
          continue;
        }
        yield message;
      }
      if (knobs.watchEndError) throw knobs.watchEndError;
    },
  };
}
