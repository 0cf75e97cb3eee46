// Drives the `agent-adaptor serve` web chat (playground) in Debian's
// headless Chromium through playwright-core:
// send a prompt, approve the tool call, see the streamed answer and the
// reasoning, see the thread in the list; reload the page and see the
// thread's history again (from the server's event log); keep a screenshot.
//
//   node tests/cli/web_chat.mjs http://127.0.0.1:PORT/ target/cli-web/web-chat.png
//
// Prints one JSON line with what it saw; exits 1 (with a screenshot next to
// the given path, "-failed.png") when a step fails.
import { mkdtempSync, rmSync, mkdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { chromium } from "playwright-core";

const [url, shot] = process.argv.slice(2);
if (!url || !shot) {
  console.error("usage: node web_chat.mjs URL SCREENSHOT.png");
  process.exit(2);
}
const executablePath = process.env.CHROMIUM || "/usr/bin/chromium";
const profile = mkdtempSync(join(tmpdir(), "aa-web-chat-"));
mkdirSync(dirname(shot), { recursive: true });
const STEP = 20000; // generous per-step deadline (ms)
const PROMPT = "hello from the browser";

const context = await chromium.launchPersistentContext(profile, {
  executablePath,
  headless: true,
  viewport: { width: 1200, height: 820 },
  args: [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
  ],
});
const page = context.pages()[0] || (await context.newPage());
// Count how often the assistant's text changes while it streams.
await page.addInitScript(() => {
  window.__textUpdates = 0;
  new MutationObserver((records) => {
    for (const r of records) {
      const host = r.target.nodeType === 1 ? r.target : r.target.parentElement;
      if (host && host.closest && host.closest('[data-testid="assistant"]')) window.__textUpdates++;
    }
  }).observe(document, { subtree: true, childList: true, characterData: true });
});
const seen = {};
const errors = [];
page.on("pageerror", (e) => errors.push(String(e)));
try {
  await page.goto(url, { timeout: STEP });
  await page.locator("#info .badge", { hasText: "playground" }).waitFor({ timeout: STEP });
  seen.playground_badge = true;

  await page.getByTestId("prompt").fill(PROMPT);
  await page.getByTestId("send").click();

  const tool = page.getByTestId("tool-call").first();
  await tool.waitFor({ timeout: STEP });
  seen.tool_call = (await tool.innerText()).trim();
  const approve = page.getByTestId("approve");
  await approve.waitFor({ timeout: STEP });
  seen.approval = (await page.getByTestId("approval").innerText()).trim();
  await approve.click();

  await page.locator('[data-testid="tool-call"][data-state="done"]').waitFor({ timeout: STEP });
  seen.tool_result = true;
  const answer = page.getByTestId("assistant").last();
  await answer.filter({ hasText: "for the real thing." }).waitFor({ timeout: STEP });
  seen.answer = (await answer.innerText()).trim();
  seen.text_updates = await page.evaluate(() => window.__textUpdates);
  seen.thinking = (await page.getByTestId("thinking").last().innerText()).trim();

  const item = page.getByTestId("thread-item").filter({ hasText: PROMPT });
  await item.waitFor({ timeout: STEP });
  seen.thread_item = (await item.innerText()).trim();

  // Reload: the address names the thread, and its history comes back.
  const address = page.url();
  seen.thread_in_address = /[?&]thread=/.test(address);
  await page.reload({ timeout: STEP });
  const user = page.locator(".msg.user", { hasText: PROMPT });
  await user.first().waitFor({ timeout: STEP });
  const again = page.locator(".msg.assistant", { hasText: "for the real thing." });
  await again.first().waitFor({ timeout: STEP });
  seen.after_reload = {
    user: (await user.first().innerText()).trim(),
    assistant: (await again.first().innerText()).trim(),
    tool_calls: await page.locator(".note", { hasText: "tool: list_files" }).count(),
  };
  seen.page_errors = errors;

  await page.screenshot({ path: shot, fullPage: false });
  if (!seen.answer.startsWith("Hello! I am the agent-adaptor playground")) throw new Error("unexpected answer: " + seen.answer);
  if (seen.text_updates < 3) throw new Error("the answer did not stream (" + seen.text_updates + " updates)");
  if (!seen.tool_call.includes("list_files")) throw new Error("no list_files tool call: " + seen.tool_call);
  if (!seen.thinking) throw new Error("no reasoning shown");
  if (!seen.thread_in_address) throw new Error("the address does not name the thread: " + address);
  if (!seen.after_reload.assistant.startsWith("Hello! I am the agent-adaptor playground")) throw new Error("history after reload: " + JSON.stringify(seen.after_reload));
  if (seen.after_reload.tool_calls < 1) throw new Error("no tool call in the history after reload");
  if (errors.length) throw new Error("page errors: " + errors.join("; "));
  console.log(JSON.stringify({ ok: true, ...seen }));
} catch (e) {
  seen.error = String(e && e.message || e);
  try { await page.screenshot({ path: shot.replace(/\.png$/, "") + "-failed.png" }); } catch (_) { /* best effort */ }
  console.log(JSON.stringify({ ok: false, ...seen }));
  process.exitCode = 1;
} finally {
  await context.close();
  rmSync(profile, { recursive: true, force: true });
}
