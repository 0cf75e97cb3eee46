// Drives an AG-UI endpoint with the official @ag-ui/client 1.0 HttpAgent (its
// schema enforcement and event verifier run on every event) and prints one
// JSON report on stdout. Used by crates/bridges/tests/agui_client.rs.
//
//   node agui-client.mjs <url> <scenario> [options-json]
//
// scenarios:
//   run                one run with a user message
//   interrupt-approve  run 1 must end with one interrupt; run 2 resumes it with
//   interrupt-deny       {approved: true} / {approved: false, reason} /
//   interrupt-cancel     status "cancelled" / {answer: options.answer}
//   interrupt-answer
//   abort              abort the run (HttpAgent.abortRun) at the first
//                      TEXT_MESSAGE_CONTENT, then wait options.waitMs (500)
//   reload             one run, then a fresh HttpAgent (a reloaded page: no
//                      messages) on the same thread at options.url2 sends
//                      options.second; the report's messages are the fresh
//                      agent's (its history comes from MESSAGES_SNAPSHOT)
//
// options: {"threadId", "prompt", "headers", "answer", "waitMs", "url2", "second"}
//
// Report: {ok, problems[], warnings[], runs: [{runId, types[], events[],
// failure, outcome}], messages, pendingInterrupts}. Any console warning or
// error of the client counts as a problem. Exit code 0 only when ok.
import { HttpAgent, buildResumeArray } from "@ag-ui/client";

const [url, scenario = "run", optionsJson = "{}"] = process.argv.slice(2);
const options = JSON.parse(optionsJson);
const unique = `${process.pid}-${Date.now()}`;
const threadId = options.threadId ?? `thread-${unique}`;

const warnings = [];
const capture = (kind) => (...args) =>
  warnings.push(`${kind}: ${args.map((a) => (a instanceof Error ? a.stack ?? a.message : typeof a === "string" ? a : JSON.stringify(a))).join(" ")}`);
console.warn = capture("console.warn");
console.error = capture("console.error");
process.on("warning", (w) => warnings.push(`process warning: ${w.name}: ${w.message}`));

let agent = new HttpAgent({
  url,
  threadId,
  headers: options.headers ?? {},
  initialMessages: [{ id: `user-${unique}`, role: "user", content: options.prompt ?? "hello" }],
});

const problems = [];
const runs = [];

async function run(runId, params = {}, onEvent = () => {}) {
  const record = { runId, types: [], events: [], failure: null, outcome: null };
  runs.push(record);
  try {
    await agent.runAgent(
      { runId, ...params },
      {
        onEvent: ({ event }) => {
          record.events.push(event);
          record.types.push(event.type);
          onEvent(event);
        },
        onRunFailed: ({ error }) => {
          record.failure = String(error?.message ?? error);
        },
      },
    );
  } catch (e) {
    record.failure ??= String(e?.message ?? e);
  }
  const last = record.events.at(-1);
  record.outcome = last?.type === "RUN_FINISHED" ? last.outcome ?? null : null;
  return record;
}

function checkRun(record, { terminal = true } = {}) {
  if (record.failure) problems.push(`${record.runId}: client rejected the stream: ${record.failure}`);
  const last = record.types.at(-1);
  if (terminal && !record.failure && last !== "RUN_FINISHED" && last !== "RUN_ERROR")
    problems.push(`${record.runId}: no terminal event (last: ${last})`);
  if (record.types[0] !== "RUN_STARTED") problems.push(`${record.runId}: first event is ${record.types[0]}`);
  for (const e of record.events.filter((e) => e.type === "RUN_STARTED" || e.type === "RUN_FINISHED"))
    if (e.threadId !== threadId || e.runId !== record.runId)
      problems.push(`${record.runId}: ${e.type} ids ${e.threadId}/${e.runId} do not echo the request`);
}

switch (scenario) {
  case "run": {
    checkRun(await run(`run-${unique}`));
    break;
  }
  case "interrupt-approve":
  case "interrupt-deny":
  case "interrupt-cancel":
  case "interrupt-answer": {
    const first = await run(`run1-${unique}`);
    checkRun(first);
    if (first.outcome?.type !== "interrupt") {
      problems.push(`run 1 did not end with an interrupt: ${JSON.stringify(first.outcome)}`);
      break;
    }
    const pending = agent.pendingInterrupts;
    if (pending.length !== 1) {
      problems.push(`expected one pending interrupt, got ${pending.length}`);
      break;
    }
    const response = {
      "interrupt-approve": { status: "resolved", payload: { approved: true } },
      "interrupt-deny": { status: "resolved", payload: { approved: false, reason: "not today" } },
      "interrupt-cancel": { status: "cancelled" },
      "interrupt-answer": { status: "resolved", payload: { answer: options.answer ?? "yes" } },
    }[scenario];
    const resume = buildResumeArray(pending, { [pending[0].id]: response });
    checkRun(await run(`run2-${unique}`, { resume }));
    break;
  }
  case "reload": {
    checkRun(await run(`run1-${unique}`));
    agent = new HttpAgent({
      url: options.url2 ?? url,
      threadId,
      headers: options.headers ?? {},
      initialMessages: [{ id: `user2-${unique}`, role: "user", content: options.second ?? "and then?" }],
    });
    checkRun(await run(`run2-${unique}`));
    break;
  }
  case "abort": {
    let aborted = false;
    const record = await run(`run-${unique}`, {}, (event) => {
      if (!aborted && event.type === "TEXT_MESSAGE_CONTENT") {
        aborted = true;
        agent.abortRun();
      }
    });
    if (!aborted) problems.push("never saw TEXT_MESSAGE_CONTENT, so never aborted");
    checkRun(record, { terminal: false });
    await new Promise((r) => setTimeout(r, options.waitMs ?? 500));
    break;
  }
  default:
    problems.push(`unknown scenario ${scenario}`);
}

problems.push(...warnings.map((w) => `warning: ${w}`));
const report = {
  ok: problems.length === 0,
  problems,
  warnings,
  threadId,
  runs,
  messages: agent.messages,
  pendingInterrupts: agent.pendingInterrupts,
};
process.stdout.write(JSON.stringify(report));
process.exit(report.ok ? 0 : 1);
