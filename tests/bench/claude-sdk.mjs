// The @anthropic-ai/claude-agent-sdk contender: query() with
// pathToClaudeCodeExecutable set to the testkit fake CLI, reading every
// message. The SDK runs an executable whose name does not end in
// .js/.mjs/.ts/.tsx/.jsx directly (not through node), with
// `--output-format stream-json --verbose --input-format stream-json
// --include-partial-messages …`; it sends an `initialize` control request
// and the prompt as a `user` frame, which the fake CLI (--serve-turns)
// answers and serves.
//
// usage: node claude-sdk.mjs --fake PATH --workload FILE [--delay-ms N] [--latency]
import { query } from "@anthropic-ai/claude-agent-sdk";
import { fakeEnv, parseArgs, report, stampOf, wallClock } from "./common.mjs";

const args = parseArgs(process.argv.slice(2));
const now = args.latency ? wallClock() : null;
const latencies = [];
let events = 0;
try {
  const messages = query({
    prompt: "hi",
    options: {
      pathToClaudeCodeExecutable: args.fake,
      env: fakeEnv(args),
      includePartialMessages: true,
    },
  });
  let result = null;
  for await (const m of messages) {
    events++;
    if (
      now &&
      m.type === "stream_event" &&
      m.event?.type === "content_block_delta" &&
      m.event.delta?.type === "text_delta"
    ) {
      const sent = stampOf(m.event.delta.text);
      if (sent !== null) latencies.push(Number(now() - sent));
    }
    if (m.type === "result") result = m;
  }
  const ok = result !== null && result.subtype === "success";
  report({ ok, error: ok ? null : "no successful result message", events, latencies });
} catch (e) {
  report({ ok: false, error: String(e?.stack ?? e), events, latencies });
}
