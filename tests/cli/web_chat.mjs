// The `agent-adaptor serve` web chat (playground) in Debian's headless
// Chromium: send a prompt; the approval card says what it approves (the
// tool and its input); allow it; the tool card finishes below the
// approval; reasoning, the streamed answer (markdown), its copy button and
// the turn's usage; the header names driver and model, no path. Reload:
// the same cards again, from the event log. Rename and delete the thread.
// The thread list is a drawer at 390 px. Screenshots at 1280/390 px, light
// and dark, with axe-core; every request stays on 127.0.0.1.
//
//   node tests/cli/web_chat.mjs http://127.0.0.1:PORT/#token=… target/cli-web
import { browserTest, cards, check, ready, shootAll, STEP } from "./lib.mjs";

const PROMPT = "hello from the browser";

await browserTest("web-chat", async (t) => {
  const { page, seen } = t;
  // Count how often the answer changes while it streams.
  await page.addInitScript(() => {
    window.__textUpdates = 0;
    new MutationObserver((records) => {
      for (const r of records) {
        const host = r.target.nodeType === 1 ? r.target : r.target.parentElement;
        if (host && host.closest && host.closest('[data-testid="assistant"]')) window.__textUpdates++;
      }
    }).observe(document, { subtree: true, childList: true, characterData: true });
  });
  await page.goto(t.url, { timeout: STEP });
  await ready(page);
  await page.locator("#info .badge", { hasText: "playground" }).waitFor({ timeout: STEP });
  seen.header = (await page.locator("header").innerText()).trim();
  check(/llm · playground/.test(seen.header), "the header names driver and model: " + seen.header);
  check(!/\/(tmp|home|root|usr)\/|sqlite|threads\.db|token/i.test(await page.locator("body").innerText()),
    "the page shows no local path or secret");
  const icon = await page.evaluate(async () => {
    const link = document.querySelector('link[rel="icon"]');
    const r = await fetch(link.href);
    return { href: link.getAttribute("href"), status: r.status, type: r.headers.get("content-type") };
  });
  check(icon.status === 200 && icon.type === "image/svg+xml", "favicon: " + JSON.stringify(icon));

  await page.getByTestId("prompt").fill(PROMPT);
  await page.getByTestId("send").click();

  const approve = page.getByTestId("approve");
  await approve.waitFor({ timeout: STEP });
  seen.approval = (await page.getByTestId("approval").innerText()).trim();
  check(seen.approval.includes("list_files") && seen.approval.includes('"path": "."'),
    "the approval card shows the tool and its input: " + seen.approval);
  check(await page.getByRole("button", { name: "Deny" }).isVisible(), "a Deny button");
  check(await page.getByTestId("deny-reason").isVisible(), "a reason field for Deny");
  seen.tool_call = (await page.getByTestId("tool-call").first().innerText()).trim();
  await approve.click();

  await page.locator('[data-testid="tool-call"][data-state="done"]').waitFor({ timeout: STEP });
  const answer = page.getByTestId("assistant").last();
  await answer.filter({ hasText: "for the real thing." }).waitFor({ timeout: STEP });
  await page.getByTestId("usage").last().waitFor({ timeout: STEP });
  seen.answer = (await answer.locator(".body").innerText()).trim();
  seen.usage = (await page.getByTestId("usage").last().innerText()).trim();
  seen.text_updates = await page.evaluate(() => window.__textUpdates);
  seen.thinking = (await page.getByTestId("thinking").last().innerText()).trim();
  check(seen.answer.startsWith("Hello! I am the agent-adaptor playground"), "answer: " + seen.answer);
  check(seen.text_updates >= 3, "the answer streamed (" + seen.text_updates + " updates)");
  check(seen.thinking.includes("The user said hello"), "reasoning shown: " + seen.thinking);
  check(/160 in · 20 out · 40 cached/.test(seen.usage), "usage: " + seen.usage);
  // The approval comes before the tool card it allowed, which finished after it.
  const order = (await cards(page)).map((c) => c.split(":")[0]);
  seen.live_order = order;
  check(order.indexOf("approval") < order.indexOf("tool"), "approval before the finished tool card: " + order);
  seen.live_cards = await cards(page);
  check(seen.live_cards.some((c) => c.startsWith("approval:") && c.endsWith("Allowed once")), "the decision shows");

  await page.getByTestId("copy-answer").last().click();
  seen.copied_answer = await page.evaluate(() => navigator.clipboard.readText());
  check(seen.copied_answer === seen.answer, "copy answer: " + seen.copied_answer);

  const item = page.getByTestId("thread-item").filter({ hasText: PROMPT });
  await item.waitFor({ timeout: STEP });
  seen.thread_item = (await item.innerText()).trim();
  await shootAll(t, "web-chat");

  // Reload: the address names the thread; the same cards come back.
  seen.thread_in_address = /[?&]thread=/.test(page.url());
  check(seen.thread_in_address, "the address names the thread: " + page.url());
  await page.reload({ timeout: STEP });
  await ready(page);
  await page.getByTestId("usage").last().waitFor({ timeout: STEP });
  seen.reloaded_cards = await cards(page);
  check(JSON.stringify(seen.reloaded_cards) === JSON.stringify(seen.live_cards),
    "the reloaded thread shows the same cards:\n" + JSON.stringify(seen.live_cards, null, 1) + "\n" + JSON.stringify(seen.reloaded_cards, null, 1));
  await shootAll(t, "web-chat-reloaded");

  // The drawer at 390 px: closed, opens with the toggle, lists the thread.
  await page.setViewportSize({ width: 390, height: 844 });
  check(!(await page.getByTestId("thread-item").first().isVisible()), "the thread list is closed at 390 px");
  const box = await page.getByTestId("prompt").boundingBox();
  check(box && box.width >= 200, "the input is usable at 390 px: " + JSON.stringify(box));
  await page.getByTestId("menu").click();
  await page.getByTestId("thread-item").first().waitFor({ state: "visible", timeout: STEP });
  check((await page.getByTestId("menu").getAttribute("aria-expanded")) === "true", "the toggle says it is open");
  await page.screenshot({ path: t.shots + "/web-chat-drawer-390-light.png" });
  await page.keyboard.press("Escape");
  await page.setViewportSize({ width: 1280, height: 820 });

  // Rename, then delete.
  t.dialogs.push((d) => d.accept("Greeting thread"));
  await page.getByTestId("thread-item").filter({ hasText: PROMPT }).getByTestId("rename").click();
  await page.getByTestId("thread-item").filter({ hasText: "Greeting thread" }).waitFor({ timeout: STEP });
  await page.reload({ timeout: STEP });
  await ready(page);
  seen.renamed_title = (await page.locator("#title").innerText()).trim();
  check(seen.renamed_title === "Greeting thread", "the renamed title sticks: " + seen.renamed_title);
  t.dialogs.push((d) => d.accept());
  await page.getByTestId("thread-item").filter({ hasText: "Greeting thread" }).getByTestId("delete").click();
  await page.getByTestId("thread-item").filter({ hasText: "Greeting thread" }).waitFor({ state: "detached", timeout: STEP });
  seen.after_delete = await page.evaluate(async () => (await (await fetch("/api/threads")).json()).threads.length);
  check(seen.after_delete === 0, "the thread is gone: " + seen.after_delete);
  check((await page.locator("#log [data-card]").count()) === 0, "the deleted thread's cards are gone");
});
