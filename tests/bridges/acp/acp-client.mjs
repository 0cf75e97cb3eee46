// Drives `agent-adaptor acp` (or any ACP agent command) with the official
// ACP client library @agentclientprotocol/sdk (v1, its schema checks on every
// message) and prints one JSON report on stdout. Used by
// crates/cli/tests/acp_official_client.rs.
//
//   node acp-client.mjs <plan-json>
//
// plan: {"command": [program, ...args], "env": {...}, "cwd": "/abs/dir",
//        "steps": [step, ...]}
// steps, in order, on one connection (after `initialize`):
//   {"op": "new"}                         session/new {cwd, mcpServers: []}
//   {"op": "load", "sessionId": "…"}      session/load; the replayed updates
//   {"op": "prompt", "text": "…",         session/prompt on the current session;
//    "permission": "allow_once" |           how a permission request is answered
//      "reject_once" | "cancelled",         (an optionId the request offered, or
//    "cancelAt": "update" | "permission"}   the cancelled outcome); cancelAt sends
//                                           session/cancel at the first update /
//                                           the first permission request
// Report: {ok, problems[], warnings[], init, sessionId, steps: [{op, sessionId?
// (new), updates: [{kind, text?, toolCallId?, status?, toolKind?, title?}],
// permissions: [request], stopReason, error}], exit: {code, signal}}. Exit code 0 only when ok (every
// step answered, the agent ended with code 0 after stdin closed).
import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import { client, methods, ndJsonStream } from "@agentclientprotocol/sdk";

const plan = JSON.parse(process.argv[2] ?? "{}");
const warnings = [];
const capture = (kind) => (...args) =>
  warnings.push(`${kind}: ${args.map((a) => (a instanceof Error ? a.stack ?? a.message : typeof a === "string" ? a : JSON.stringify(a))).join(" ")}`);
console.warn = capture("console.warn");
console.error = capture("console.error");
process.on("warning", (w) => warnings.push(`process warning: ${w.name}: ${w.message}`));

const problems = [];
const report = { ok: false, problems, warnings, init: null, sessionId: null, steps: [], exit: null };

const [program, ...args] = plan.command;
const child = spawn(program, args, {
  cwd: plan.cwd,
  env: plan.env ?? process.env,
  stdio: ["pipe", "pipe", "inherit"],
});
const exited = new Promise((resolve) => child.on("exit", (code, signal) => resolve({ code, signal })));

let current = null; // the step collecting updates
let sessionId = null;
let cancelSent = false;

function summary(update) {
  const u = { kind: update.sessionUpdate };
  if (update.content?.type === "text") u.text = update.content.text;
  if (update.toolCallId) u.toolCallId = update.toolCallId;
  if (update.status) u.status = update.status;
  if (update.kind) u.toolKind = update.kind;
  if (update.title) u.title = update.title;
  return u;
}

const app = client({ name: "agent-adaptor-acp-check" })
  .onNotification(methods.client.session.update, async ({ params, agent }) => {
    if (!current) {
      problems.push(`an update outside any step: ${JSON.stringify(params)}`);
      return;
    }
    if (params.sessionId !== sessionId) problems.push(`an update for another session: ${params.sessionId}`);
    current.updates.push(summary(params.update));
    if (current.cancelAt === "update" && !cancelSent) {
      cancelSent = true;
      await agent.notify(methods.agent.session.cancel, { sessionId });
    }
  })
  .onRequest(methods.client.session.requestPermission, async ({ params, agent }) => {
    if (!current) {
      problems.push("a permission request outside any step");
      return { outcome: { outcome: "cancelled" } };
    }
    current.permissions.push(params);
    if (current.cancelAt === "permission" && !cancelSent) {
      cancelSent = true;
      await agent.notify(methods.agent.session.cancel, { sessionId });
      return { outcome: { outcome: "cancelled" } };
    }
    const choice = current.permission ?? "reject_once";
    if (choice === "cancelled") return { outcome: { outcome: "cancelled" } };
    if (!params.options.some((o) => o.optionId === choice)) {
      problems.push(`option ${choice} not offered: ${JSON.stringify(params.options)}`);
      return { outcome: { outcome: "cancelled" } };
    }
    return { outcome: { outcome: "selected", optionId: choice } };
  });

const stream = ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));

try {
  await app.connectWith(stream, async (agent) => {
    report.init = await agent.request(methods.agent.initialize, {
      protocolVersion: 1,
      clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false },
    });
    for (const step of plan.steps) {
      const record = { op: step.op, updates: [], permissions: [], stopReason: null, error: null, cancelAt: step.cancelAt, permission: step.permission };
      report.steps.push(record);
      current = record;
      cancelSent = false;
      try {
        if (step.op === "new") {
          const r = await agent.request(methods.agent.session.new, { cwd: plan.cwd, mcpServers: [] });
          sessionId = r.sessionId;
          record.sessionId = sessionId;
        } else if (step.op === "load") {
          sessionId = step.sessionId;
          await agent.request(methods.agent.session.load, { sessionId, cwd: plan.cwd, mcpServers: [] });
        } else if (step.op === "prompt") {
          const r = await agent.request(methods.agent.session.prompt, {
            sessionId,
            prompt: [{ type: "text", text: step.text }],
          });
          record.stopReason = r.stopReason;
        } else {
          problems.push(`unknown step ${step.op}`);
        }
      } catch (e) {
        record.error = { code: e.code ?? null, message: e.message, data: e.data ?? null };
      }
      current = null;
      delete record.cancelAt;
      delete record.permission;
    }
  });
} catch (e) {
  problems.push(`connection: ${e.stack ?? e.message}`);
}
report.sessionId = sessionId;
child.stdin.end();
const timer = setTimeout(() => {
  problems.push("the agent did not exit within 30 s of stdin closing");
  child.kill("SIGKILL");
}, 30000);
report.exit = await exited;
clearTimeout(timer);
if (report.exit.code !== 0) problems.push(`the agent exited with ${JSON.stringify(report.exit)}`);
report.ok = problems.length === 0 && warnings.length === 0;
process.stdout.write(JSON.stringify(report) + "\n");
process.exit(report.ok ? 0 : 1);
