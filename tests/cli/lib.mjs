// What the web chat's browser tests share: Debian's headless Chromium
// through playwright-core, a guard that every request stays on 127.0.0.1,
// screenshots at 1280 and 390 px in light and dark, axe-core checks, the
// normalized list of the conversation's cards, and the one-JSON-line report.
import { mkdtempSync, rmSync, mkdirSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createRequire } from "node:module";
import { chromium } from "playwright-core";

/** Generous per-step deadline (ms). */
export const STEP = 30000;

/** The viewports every screenshot is taken at. */
export const WIDTHS = [1280, 390];

const require = createRequire(import.meta.url);

/**
 * Run `body(t)` with a fresh Chromium profile; print one JSON line
 * `{ok, ...seen}` and exit 1 (after a "-failed.png" screenshot) when it
 * throws. `t` has: page, context, seen, shots (the directory), requests
 * (every URL the page asked for), errors (page errors), and helpers.
 */
export async function browserTest(name, body) {
  const [url, shots] = process.argv.slice(2);
  if (!url || !shots) {
    console.error(`usage: node ${name}.mjs URL SCREENSHOT_DIR`);
    process.exit(2);
  }
  mkdirSync(shots, { recursive: true });
  const profile = mkdtempSync(join(tmpdir(), "aa-web-"));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    headless: true,
    viewport: { width: 1280, height: 820 },
    permissions: ["clipboard-read", "clipboard-write"],
    args: [
      "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
      "--disable-background-networking", "--disable-component-update", "--disable-sync",
    ],
  });
  const page = context.pages()[0] || (await context.newPage());
  const seen = {};
  const errors = [];
  const requests = [];
  const offHost = [];
  page.on("pageerror", (e) => errors.push(String(e)));
  page.on("dialog", (d) => (t.dialogs.shift() ?? ((x) => x.dismiss()))(d));
  // Every request the page makes must go to 127.0.0.1; anything else is
  // refused (and the test fails below).
  await context.route("**/*", (route) => {
    const u = route.request().url();
    requests.push(u);
    if (u.startsWith("http://127.0.0.1:") || u.startsWith("data:")) return route.continue();
    offHost.push(u);
    return route.abort();
  });
  const t = { page, context, seen, errors, requests, url, shots, dialogs: [] };
  try {
    await body(t);
    if (offHost.length) throw new Error("requests left 127.0.0.1: " + offHost.join(", "));
    seen.requests = requests.length;
    if (errors.length) throw new Error("page errors: " + errors.join("; "));
    console.log(JSON.stringify({ ok: true, ...seen }));
  } catch (e) {
    seen.error = String((e && e.stack) || e);
    seen.page_errors = errors;
    seen.off_host = offHost;
    try { await page.screenshot({ path: join(shots, name + "-failed.png") }); } catch (_) { /* best effort */ }
    console.log(JSON.stringify({ ok: false, ...seen }));
    process.exitCode = 1;
  } finally {
    await context.close();
    rmSync(profile, { recursive: true, force: true });
  }
}

/** Fail with `message` unless `cond`. */
export function check(cond, message) {
  if (!cond) throw new Error(message);
}

/**
 * Screenshots of the page as it is at 1280 and 390 px, light and dark:
 * `<shots>/<name>-<width>-<scheme>.png`; axe-core runs in each (no
 * serious or critical violation). Returns the axe violations seen (ids).
 */
export async function shootAll(t, name) {
  const { page, shots } = t;
  const axe = readFileSync(require.resolve("axe-core/axe.min.js"), "utf8");
  const found = [];
  for (const scheme of ["light", "dark"]) {
    await page.emulateMedia({ colorScheme: scheme });
    for (const width of WIDTHS) {
      await page.setViewportSize({ width, height: width === 390 ? 844 : 820 });
      // Evaluated, not injected as a tag: the page's CSP allows no inline script.
      await page.evaluate(axe);
      const result = await page.evaluate(async () => {
        const r = await window.axe.run(document, { resultTypes: ["violations"] });
        return r.violations.map((v) => ({ id: v.id, impact: v.impact, nodes: v.nodes.map((n) => n.target.join(" ")).slice(0, 5) }));
      });
      const bad = result.filter((v) => v.impact === "serious" || v.impact === "critical");
      check(!bad.length, `axe (${scheme}, ${width}px): ` + JSON.stringify(bad));
      for (const v of result) found.push(`${v.id}:${v.impact}`);
      await page.screenshot({ path: join(shots, `${name}-${width}-${scheme}.png`) });
    }
  }
  await page.emulateMedia({ colorScheme: "light" });
  await page.setViewportSize({ width: 1280, height: 820 });
  return found;
}

/**
 * The conversation as a list of `kind: text` lines (whitespace collapsed,
 * buttons left out): what a reload must show again.
 */
export async function cards(page) {
  return page.evaluate(() => [...document.querySelectorAll("#log [data-card]")].map((c) => {
    const copy = c.cloneNode(true);
    copy.querySelectorAll("button, input").forEach((b) => b.remove());
    return c.dataset.card + ": " + copy.textContent.replace(/\s+/g, " ").trim();
  }));
}

/** Wait until the page has loaded its thread (or the empty chat). */
export async function ready(page) {
  await page.locator('body[data-ready="true"]').waitFor({ timeout: STEP });
}

/** Read one line from stdin (the Rust test's go-ahead). */
export function readLine() {
  return new Promise((resolve) => {
    let buf = "";
    const on = (chunk) => {
      buf += chunk;
      const i = buf.indexOf("\n");
      if (i >= 0) {
        process.stdin.off("data", on);
        process.stdin.destroy();
        resolve(buf.slice(0, i));
      }
    };
    process.stdin.setEncoding("utf8");
    process.stdin.on("data", on);
    process.stdin.resume();
  });
}
