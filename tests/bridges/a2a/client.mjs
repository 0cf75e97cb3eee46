// Drives an A2A 1.0 server with the official JS client (@a2a-js/sdk, pinned
// in tests/bridges/package-lock.json) and prints one JSON report on stdout.
//
//   [BRIDGE_TEST_TOKEN=<token>] node a2a/client.mjs <scenario> <base-url> [<arg>...]
//
// Scenarios (the server's agent answers by the prompt's first word, see
// crates/bridges/tests/support/a2a_agents.rs): card, send, stream, get,
// cancel, subscribe, input_required, refused, observe,
// `push <webhook-url> <refused-url>` (the push config RPCs), and
// `list_across <other-url>` (tasks sent to <base-url>, listed and read on
// <other-url>, a second server over the same task store). Anything unexpected throws:
// the process exits non-zero and the Rust test shows stderr.
//
// Auth: with BRIDGE_TEST_TOKEN set, every JSON-RPC request carries
// `Authorization: Bearer <token>`, added by the SDK's own hook
// (createAuthenticatingFetchWithRetry, as the JSON-RPC transport's
// fetchImpl). The card is fetched without it (it is public). The report's
// `statuses` lists the HTTP status of every response the client got.
//
// Beyond the SDK (which checks JSON-RPC ids itself): a task state the spec
// does not define fails the script. crates/bridges/tests/checker_a2a.rs
// shows these checks fail on a broken exchange.
import { randomUUID } from "node:crypto";
import { Role, TaskState, taskStateToJSON } from "@a2a-js/sdk";
import {
  ClientFactory,
  ClientFactoryOptions,
  DefaultAgentCardResolver,
  JsonRpcTransportFactory,
  createAuthenticatingFetchWithRetry,
} from "@a2a-js/sdk/client";

const [scenario, baseUrl, ...extra] = process.argv.slice(2);
if (!scenario || !baseUrl) {
  throw new Error("usage: node a2a/client.mjs <scenario> <base-url>");
}

function text(value) {
  return { content: { $case: "text", value } };
}

function userMessage(parts, extra = {}) {
  return {
    messageId: randomUUID(),
    role: Role.ROLE_USER,
    parts,
    ...extra,
  };
}

function partsText(parts) {
  return (parts ?? [])
    .filter((p) => p.content?.$case === "text")
    .map((p) => p.content.value)
    .join("\n");
}

function partsData(parts) {
  return (parts ?? []).filter((p) => p.content?.$case === "data").map((p) => p.content.value);
}

// A task state the spec defines: the SDK maps an unknown state string to
// UNRECOGNIZED (and a missing one to UNSPECIFIED) without complaint, so the
// report would carry it on; refuse it here instead.
function stateOf(status) {
  const state = taskStateToJSON(status?.state);
  if (state === "UNRECOGNIZED" || state === "TASK_STATE_UNSPECIFIED") {
    throw new Error(`invalid task state: ${JSON.stringify(status?.state)} (${state})`);
  }
  return state;
}

function partsFiles(parts) {
  return (parts ?? [])
    .filter((p) => p.content?.$case === "raw" || p.content?.$case === "url")
    .map((p) => ({
      kind: p.content.$case,
      value: p.content.$case === "raw" ? Buffer.from(p.content.value).toString("base64") : p.content.value,
      mediaType: p.mediaType,
      filename: p.filename,
    }));
}

function artifactDetail(a) {
  return {
    id: a.artifactId,
    name: a.name,
    text: partsText(a.parts),
    data: partsData(a.parts),
    files: partsFiles(a.parts),
  };
}

function summary(task) {
  return {
    id: task.id,
    contextId: task.contextId,
    state: stateOf(task.status),
    statusText: partsText(task.status?.message?.parts),
    artifactIds: (task.artifacts ?? []).map((a) => a.artifactId),
    artifactText: (task.artifacts ?? []).map((a) => partsText(a.parts)).join(""),
    historyLength: (task.history ?? []).length,
    metadata: task.metadata ?? null,
    artifacts: (task.artifacts ?? []).map(artifactDetail),
  };
}

function event(ev) {
  const p = ev.payload;
  switch (p?.$case) {
    case "task":
      return { kind: "task", id: p.value.id, state: stateOf(p.value.status) };
    case "statusUpdate":
      return {
        kind: "statusUpdate",
        taskId: p.value.taskId,
        state: stateOf(p.value.status),
        text: partsText(p.value.status?.message?.parts),
        data: partsData(p.value.status?.message?.parts),
      };
    case "artifactUpdate":
      return {
        kind: "artifactUpdate",
        taskId: p.value.taskId,
        artifactId: p.value.artifact?.artifactId,
        text: partsText(p.value.artifact?.parts),
        data: partsData(p.value.artifact?.parts),
        files: partsFiles(p.value.artifact?.parts),
        append: Boolean(p.value.append),
        lastChunk: Boolean(p.value.lastChunk),
      };
    case "message":
      return { kind: "message", text: partsText(p.value.parts) };
    default:
      throw new Error(`unexpected stream item: ${JSON.stringify(ev)}`);
  }
}

async function collect(iterable) {
  const out = [];
  for await (const ev of iterable) out.push(event(ev));
  return out;
}

async function failure(promise) {
  try {
    await promise;
  } catch (err) {
    return { error: err.name, code: err.envelopeCode ?? null, message: err.message };
  }
  throw new Error("expected the call to fail");
}

function sent(result) {
  if (!result || !("status" in result)) {
    throw new Error(`SendMessage returned no task: ${JSON.stringify(result)}`);
  }
  return result;
}

function security(card) {
  const schemes = Object.fromEntries(
    Object.entries(card.securitySchemes ?? {}).map(([name, s]) => [
      name,
      s.scheme?.$case === "httpAuthSecurityScheme" ? s.scheme.value.scheme : s.scheme?.$case ?? null,
    ]),
  );
  const requirements = (card.securityRequirements ?? []).map((r) => Object.keys(r.schemes ?? {}).sort());
  return { schemes, requirements };
}

const statuses = [];
const recordingFetch = async (...args) => {
  const response = await fetch(...args);
  statuses.push(response.status);
  return response;
};
const token = process.env.BRIDGE_TEST_TOKEN;
const rpcFetch = token
  ? createAuthenticatingFetchWithRetry(recordingFetch, {
      headers: async () => ({ Authorization: `Bearer ${token}` }),
      shouldRetryWithHeaders: async () => undefined,
    })
  : recordingFetch;
const factory = new ClientFactory(
  ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
    transports: [new JsonRpcTransportFactory({ fetchImpl: rpcFetch })],
    cardResolver: new DefaultAgentCardResolver({ fetchImpl: recordingFetch }),
  }),
);
const client = await factory.createFromUrl(baseUrl);
let report;

switch (scenario) {
  case "card": {
    const card = client.agentCard;
    const iface = card.supportedInterfaces[0];
    report = {
      name: card.name,
      streaming: card.capabilities?.streaming ?? null,
      binding: iface.protocolBinding,
      protocolVersion: iface.protocolVersion,
      url: iface.url,
      skills: card.skills.map((s) => s.id),
      clientVersion: client.protocolVersion,
      security: security(card),
    };
    break;
  }
  case "send": {
    const task = sent(await client.sendMessage({ message: userMessage([text("hello there")]) }));
    report = { task: summary(task) };
    break;
  }
  case "stream": {
    const events = await collect(
      client.sendMessageStream({ message: userMessage([text("hello there")]) }),
    );
    report = { events };
    break;
  }
  case "get": {
    const task = sent(await client.sendMessage({ message: userMessage([text("hello")]) }));
    const got = await client.getTask({ id: task.id, historyLength: 1 });
    const missing = await failure(client.getTask({ id: "no-such-task" }));
    report = { sent: summary(task), got: summary(got), missing };
    break;
  }
  case "cancel": {
    const started = sent(
      await client.sendMessage({
        message: userMessage([text("hang until canceled")]),
        configuration: { returnImmediately: true },
      }),
    );
    const canceled = await client.cancelTask({ id: started.id });
    const got = await client.getTask({ id: started.id });
    const again = await failure(client.cancelTask({ id: started.id }));
    report = { started: summary(started), canceled: summary(canceled), got: summary(got), again };
    break;
  }
  case "subscribe": {
    // The task parks on an approval, so it cannot finish before the
    // subscription starts; the answer is sent when the subscription shows
    // input-required, and the subscription is read to the end.
    const started = sent(
      await client.sendMessage({
        message: userMessage([text("approve via a subscription")]),
        configuration: { returnImmediately: true },
      }),
    );
    const events = [];
    let answer = null;
    for await (const raw of client.resubscribeTask({ id: started.id })) {
      const ev = event(raw);
      events.push(ev);
      if (!answer && ev.state === "TASK_STATE_INPUT_REQUIRED") {
        answer = sent(
          await client.sendMessage({
            message: userMessage([text("approve")], { taskId: started.id }),
          }),
        );
      }
    }
    const after = await failure(collect(client.resubscribeTask({ id: started.id })));
    report = { started: summary(started), events, answer: answer && summary(answer), after };
    break;
  }
  case "input_required": {
    const first = await collect(
      client.sendMessageStream({ message: userMessage([text("approve a listing")]) }),
    );
    const asked = first.at(-1);
    if (asked?.state !== "TASK_STATE_INPUT_REQUIRED") {
      throw new Error(`the first stream did not end input-required: ${JSON.stringify(first)}`);
    }
    const taskId = asked.taskId;
    const task = await client.getTask({ id: taskId });
    const second = await collect(
      client.sendMessageStream({
        message: userMessage([text("approve")], { taskId, contextId: task.contextId }),
      }),
    );
    const final = await client.getTask({ id: taskId });
    report = { first, question: { text: asked.text, data: asked.data }, second, final: summary(final) };
    break;
  }
  case "refused": {
    // Without the token: a send and a streaming send, each refused.
    const send = await failure(client.sendMessage({ message: userMessage([text("hello there")]) }));
    const stream = await failure(
      collect(client.sendMessageStream({ message: userMessage([text("hello there")]) })),
    );
    report = { send, stream };
    break;
  }
  case "observe": {
    // A run with a todo list, a subagent (with a child tool call), capability
    // invocations and an image; then the task as GetTask shows it.
    const events = await collect(
      client.sendMessageStream({ message: userMessage([text("observe the change")]) }),
    );
    const final = await client.getTask({ id: events[0].id });
    report = { events, final: summary(final) };
    break;
  }
  case "list_across": {
    const other = await factory.createFromUrl(extra[0]);
    const hello = sent(await client.sendMessage({ message: userMessage([text("hello")]) }));
    const structured = sent(
      await client.sendMessage({ message: userMessage([text("structured please")]) }),
    );
    const list = (params) =>
      other.listTasks({
        tenant: "",
        contextId: "",
        status: TaskState.TASK_STATE_UNSPECIFIED,
        pageToken: "",
        statusTimestampAfter: undefined,
        ...params,
      });
    const page = (r) => ({
      ids: r.tasks.map((t) => t.id),
      states: r.tasks.map((t) => stateOf(t.status)),
      artifactText: r.tasks.map((t) => (t.artifacts ?? []).map((a) => partsText(a.parts)).join("")),
      historyLengths: r.tasks.map((t) => (t.history ?? []).length),
      nextPageToken: r.nextPageToken,
      pageSize: r.pageSize,
      totalSize: r.totalSize,
    });
    const all = page(await list({ includeArtifacts: true, historyLength: 0 }));
    const first = page(await list({ pageSize: 1 }));
    const second = page(await list({ pageSize: 1, pageToken: first.nextPageToken }));
    const ofContext = page(await list({ contextId: hello.contextId }));
    const completed = page(await list({ status: TaskState.TASK_STATE_COMPLETED }));
    const got = await other.getTask({ id: hello.id });
    report = {
      sent: [hello.id, structured.id],
      all,
      first,
      second,
      ofContext,
      completed,
      got: summary(got),
    };
    break;
  }
  case "push": {
    // Two configs on a task waiting for input; one is deleted before the
    // answer, so only the other gets the pushes.
    const [hookUrl, refusedUrl] = extra;
    const asked = sent(await client.sendMessage({ message: userMessage([text("approve a listing")]) }));
    const config = (id, token) => ({ tenant: "", id, taskId: asked.id, url: hookUrl, token, authentication: undefined });
    const created = await client.createTaskPushNotificationConfig(config("hook-1", "tok-js"));
    await client.createTaskPushNotificationConfig(config("hook-2", "tok-2"));
    const got = await client.getTaskPushNotificationConfig({ tenant: "", taskId: asked.id, id: "hook-1" });
    const ids = async () =>
      (await client.listTaskPushNotificationConfig({ tenant: "", taskId: asked.id, pageSize: 0, pageToken: "" })).configs.map((c) => c.id);
    const listed = await ids();
    await client.deleteTaskPushNotificationConfig({ tenant: "", taskId: asked.id, id: "hook-2" });
    const afterDelete = await failure(
      client.getTaskPushNotificationConfig({ tenant: "", taskId: asked.id, id: "hook-2" }),
    );
    const listedAfterDelete = await ids();
    const refused = await failure(
      client.createTaskPushNotificationConfig({ ...config("hook-3", ""), url: refusedUrl }),
    );
    const done = sent(
      await client.sendMessage({ message: userMessage([text("approve")], { taskId: asked.id }) }),
    );
    report = {
      created: { id: created.id, url: created.url, taskId: created.taskId },
      got: { id: got.id, token: got.token },
      listed,
      listedAfterDelete,
      afterDelete,
      refused,
      final: stateOf(done.status),
    };
    break;
  }
  default:
    throw new Error(`unknown scenario ${scenario}`);
}

process.stdout.write(JSON.stringify({ ...report, statuses }));
