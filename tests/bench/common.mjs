// Shared by the SDK runners: flags, the fake CLI's options, the latency
// clock and the report line (the same JSON shape as the Rust contenders'
// ChildReport, see crates/bench/src/child.rs).

/** Parses `--name value` flags and bare `--latency`. */
export function parseArgs(argv) {
  const args = { delayMs: 0, latency: false };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === "--latency") args.latency = true;
    else if (a === "--fake") args.fake = argv[++i];
    else if (a === "--workload") args.workload = argv[++i];
    else if (a === "--kind") args.kind = argv[++i];
    else if (a === "--delay-ms") args.delayMs = Number(argv[++i]);
    else throw new Error(`unknown argument ${a}`);
  }
  if (!args.fake || !args.workload) throw new Error("--fake and --workload are required");
  return args;
}

/**
 * The environment for the fake CLI: its own flags in
 * AGENT_ADAPTOR_FAKE_CLI_OPTS (a JSON array), so the whole argv the SDK
 * builds for the real CLI is accepted and ignored. Identical to what the
 * Rust contenders pass (child.rs `fake_opts`).
 */
export function fakeEnv(args) {
  const opts = ["--fixture", args.workload, "--serve-turns"];
  if (args.delayMs > 0) opts.push("--delay-ms", String(args.delayMs));
  return { ...process.env, AGENT_ADAPTOR_FAKE_CLI_OPTS: JSON.stringify(opts) };
}

/**
 * Wall-clock nanoseconds since the Unix epoch, the fake CLI's stamp clock.
 * Node has no high-resolution wall clock: the offset between
 * process.hrtime (monotonic, ns) and Date.now (wall, ms) is taken at the
 * instant Date.now ticks to a new millisecond, which pins it to a few µs.
 */
export function wallClock() {
  let prev = Date.now();
  let offset;
  for (;;) {
    const h = process.hrtime.bigint();
    const d = Date.now();
    if (d !== prev) {
      offset = BigInt(d) * 1000000n - h;
      break;
    }
    prev = d;
  }
  return () => process.hrtime.bigint() + offset;
}

/** The stamp `@ts=<ns>;` at the start of a text, as a BigInt, or null. */
export function stampOf(text) {
  if (typeof text !== "string" || !text.startsWith("@ts=")) return null;
  const end = text.indexOf(";");
  if (end < 0) return null;
  try {
    return BigInt(text.slice(4, end));
  } catch {
    return null;
  }
}

/** Prints the report line (this process's own CPU and peak RSS). */
export function report(fields) {
  const ru = process.resourceUsage();
  const line = {
    ok: fields.ok,
    error: fields.error ?? null,
    events: fields.events,
    dropped: 0,
    lines: null,
    raw_stdout_bytes: null,
    raw_in_memory: null,
    transcript_items: null,
    usage: {
      user_s: ru.userCPUTime / 1e6,
      sys_s: ru.systemCPUTime / 1e6,
      maxrss_kib: ru.maxRSS,
    },
    latencies_ns: fields.latencies ?? [],
  };
  process.stdout.write(JSON.stringify(line) + "\n");
}
