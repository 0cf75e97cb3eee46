// The @openai/codex-sdk contender: Codex with codexPathOverride set to the
// testkit fake CLI, thread.runStreamed() and every event read. The SDK
// spawns the path directly with `exec --experimental-json …`, writes the
// prompt on stdin and closes it, and reads stdout with readline. Its `env`
// option replaces the environment (it does not inherit), so the whole
// environment is passed.
//
// usage: node codex-sdk.mjs --fake PATH --workload FILE [--delay-ms N] [--latency]
import { Codex } from "@openai/codex-sdk";
import { fakeEnv, parseArgs, report, stampOf, wallClock } from "./common.mjs";

const args = parseArgs(process.argv.slice(2));
const now = args.latency ? wallClock() : null;
const latencies = [];
let events = 0;
try {
  const codex = new Codex({ codexPathOverride: args.fake, env: fakeEnv(args) });
  const thread = codex.startThread({ skipGitRepoCheck: true });
  const { events: stream } = await thread.runStreamed("hi");
  let completed = false;
  for await (const e of stream) {
    events++;
    if (now && e.type === "item.completed" && e.item?.type === "agent_message") {
      const sent = stampOf(e.item.text);
      if (sent !== null) latencies.push(Number(now() - sent));
    }
    if (e.type === "turn.completed") completed = true;
  }
  report({ ok: completed, error: completed ? null : "no turn.completed", events, latencies });
} catch (e) {
  report({ ok: false, error: String(e?.stack ?? e), events, latencies });
}
