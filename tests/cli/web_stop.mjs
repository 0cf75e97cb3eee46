// The web chat against the real Claude Code (crates/cli/tests/serve_web.rs
// scripts the mock model): a first turn; the thread is listed by its first
// prompt; a second turn streams slowly and Stop ends it (the Rust test
// checks the CLI process is gone: this script prints {"phase":"streaming"}
// and waits for a line on stdin before it stops the run). Reload: the first
// turn's cards come back the same, the stopped turn ends "Run stopped".
// Esc stops a third turn. A new thread's Bash call asks first: the card
// shows the command and three answers; it is denied with a reason, shown
// again after a reload. "Always allow Bash in this thread" on another
// thread: its next turn runs Bash without a card, the header lists Bash;
// revoked, the following turn asks again.
//
//   node tests/cli/web_stop.mjs http://127.0.0.1:PORT/#token=… target/cli-web
import { browserTest, cards, check, readLine, ready, shootAll, STEP } from "./lib.mjs";

const FIRST = "QUICK first prompt";
const SLOW = "Now count slowly";
const LONG = 120000; // a real CLI's start

await browserTest("web-stop", async (t) => {
  const { page, seen } = t;
  await page.goto(t.url, { timeout: STEP });
  await ready(page);
  await page.getByTestId("prompt").fill(FIRST);
  await page.getByTestId("send").click();
  await page.getByTestId("usage").last().waitFor({ timeout: LONG });
  seen.first_cards = await cards(page);
  const item = page.getByTestId("thread-item").filter({ hasText: FIRST });
  await item.waitFor({ timeout: STEP });
  seen.thread_item = (await item.innerText()).trim();
  seen.header = (await page.locator("header").innerText()).trim();
  check(/claude/.test(seen.header), "the header names the driver: " + seen.header);

  await page.getByTestId("prompt").fill(SLOW);
  await page.getByTestId("send").click();
  await page.getByTestId("assistant").filter({ hasText: "0123456789abcdef" }).waitFor({ timeout: LONG });
  check(await page.getByTestId("stop").isVisible(), "Stop shows while the run streams");
  console.log(JSON.stringify({ phase: "streaming" }));
  await readLine();
  await page.getByTestId("stop").click();
  await page.locator('[data-card="note"]', { hasText: "Run stopped" }).waitFor({ timeout: STEP });
  await page.getByTestId("send").waitFor({ state: "visible", timeout: STEP });
  seen.errors_after_stop = await page.getByTestId("error").count();
  check(seen.errors_after_stop === 0, "a stop is no error");
  seen.stopped_cards = await cards(page);
  await shootAll(t, "web-stop");

  await page.reload({ timeout: STEP });
  await ready(page);
  await page.locator('[data-card="note"]', { hasText: "Run stopped" }).waitFor({ timeout: STEP });
  seen.reloaded_cards = await cards(page);
  const n = seen.first_cards.length;
  check(JSON.stringify(seen.reloaded_cards.slice(0, n)) === JSON.stringify(seen.first_cards),
    "the first turn reloads the same:\n" + JSON.stringify(seen.first_cards) + "\n" + JSON.stringify(seen.reloaded_cards));
  const kinds = (list) => list.slice(n).map((c) => c.split(":")[0]).join(",");
  seen.stopped_kinds = kinds(seen.stopped_cards);
  seen.reloaded_kinds = kinds(seen.reloaded_cards);
  check(seen.reloaded_kinds === seen.stopped_kinds, "the stopped turn reloads as it was: " + seen.stopped_kinds + " / " + seen.reloaded_kinds);
  seen.title = (await page.locator("#title").innerText()).trim();
  check(seen.title === FIRST, "titled by its first prompt: " + seen.title);
  await shootAll(t, "web-stop-reloaded");

  // Esc stops a streaming run too.
  await page.getByTestId("prompt").fill("Once more, slowly");
  await page.getByTestId("send").click();
  await page.getByTestId("stop").waitFor({ state: "visible", timeout: STEP });
  await page.getByTestId("assistant").nth(2).waitFor({ timeout: LONG });
  await page.keyboard.press("Escape");
  await page.locator('[data-card="note"]', { hasText: "Run stopped" }).nth(1).waitFor({ timeout: STEP });
  await page.getByTestId("send").waitFor({ state: "visible", timeout: STEP });

  // Claude's Bash asks first: the card shows the command; Deny with a
  // reason, which the reloaded card shows again.
  await page.getByTestId("new-thread").click();
  await page.getByTestId("prompt").fill("BASHY please");
  await page.getByTestId("send").click();
  await page.getByTestId("approval-command").waitFor({ timeout: LONG });
  seen.command = (await page.getByTestId("approval-command").innerText()).trim();
  check(seen.command === "touch web-approval.txt", "the card shows the command: " + seen.command);
  seen.card_buttons = await page.getByTestId("approval").locator("button").allInnerTexts();
  check(JSON.stringify(seen.card_buttons) === JSON.stringify(["Allow once", "Always allow Bash in this thread", "Deny"]),
    "three answers: " + JSON.stringify(seen.card_buttons));
  await shootAll(t, "web-approval-card");
  await page.getByTestId("deny-reason").fill("not now");
  await page.getByTestId("deny").click();
  await page.getByTestId("usage").waitFor({ timeout: LONG });
  seen.bash_cards = await cards(page);
  check(seen.bash_cards.some((c) => c.startsWith("approval:") && c.includes("touch web-approval.txt") && c.endsWith("Denied: not now")),
    "the decision shows: " + JSON.stringify(seen.bash_cards));
  const bashKinds = seen.bash_cards.map((c) => c.split(":")[0]);
  check(bashKinds.indexOf("approval") < bashKinds.indexOf("tool"), "the denied tool card follows its approval: " + bashKinds);
  check((await page.getByTestId("tool-call").getAttribute("data-state")) === "denied", "the tool card says denied");
  await shootAll(t, "web-approval");
  await page.reload({ timeout: STEP });
  await ready(page);
  await page.getByTestId("usage").waitFor({ timeout: STEP });
  seen.bash_reloaded = await cards(page);
  check(seen.bash_reloaded.some((c) => c.startsWith("approval:") && c.includes("touch web-approval.txt") && c.startsWith("approval:") && /Denied/.test(c)),
    "the reloaded approval shows command and decision: " + JSON.stringify(seen.bash_reloaded));

  // "Always allow Bash in this thread": the next turn runs Bash without
  // asking, the header lists Bash; revoked, the following turn asks again.
  await page.getByTestId("new-thread").click();
  await page.getByTestId("prompt").fill("GRANTY turn one");
  await page.getByTestId("send").click();
  await page.getByTestId("approve-always").waitFor({ timeout: LONG });
  await page.getByTestId("approve-always").click();
  await page.getByTestId("usage").waitFor({ timeout: LONG });
  await page.getByTestId("allowed-tool").waitFor({ timeout: STEP });
  seen.allowed = (await page.getByTestId("allowed-tools").innerText()).replace(/\s+/g, " ").trim();
  check(/Always allowed in this thread Bash Revoke/.test(seen.allowed), "the header lists Bash: " + seen.allowed);
  seen.grant_cards = await cards(page);
  check(seen.grant_cards.some((c) => c.startsWith("approval:") && c.endsWith("Always allowed Bash in this thread")),
    "the decision shows: " + JSON.stringify(seen.grant_cards));

  await page.getByTestId("prompt").fill("turn two");
  await page.getByTestId("send").click();
  await page.getByTestId("usage").nth(1).waitFor({ timeout: LONG });
  seen.turn_two_approvals = await page.getByTestId("approval").count();
  seen.turn_two_tools = await page.locator('[data-testid="tool-call"][data-state="done"]').count();
  check(seen.turn_two_approvals === 1, "turn two ran Bash without a card: " + seen.turn_two_approvals);
  check(seen.turn_two_tools === 2, "turn two ran Bash: " + seen.turn_two_tools + " finished tool cards");
  await shootAll(t, "web-always-allowed");

  // Reload: the replayed decision says "always allowed"; the list stays.
  await page.reload({ timeout: STEP });
  await ready(page);
  await page.getByTestId("allowed-tool").waitFor({ timeout: STEP });
  seen.grant_reloaded = await cards(page);
  check(seen.grant_reloaded.some((c) => c.startsWith("approval:") && c.endsWith("Always allowed Bash in this thread")),
    "the reloaded decision: " + JSON.stringify(seen.grant_reloaded));

  await page.getByTestId("revoke-tool").click();
  await page.getByTestId("allowed-tools").waitFor({ state: "hidden", timeout: STEP });
  seen.after_revoke = await page.evaluate(async () => {
    const id = new URLSearchParams(location.search).get("thread");
    return (await (await fetch("/api/threads/" + encodeURIComponent(id) + "/allowed-tools")).json()).tools;
  });
  check(JSON.stringify(seen.after_revoke) === "[]", "revoked: " + JSON.stringify(seen.after_revoke));

  await page.getByTestId("prompt").fill("turn three");
  await page.getByTestId("send").click();
  await page.getByTestId("approve").waitFor({ timeout: LONG });
  seen.turn_three_buttons = await page.getByTestId("approval").last().locator("button").allInnerTexts();
  check(seen.turn_three_buttons.includes("Always allow Bash in this thread"), "turn three asks again: " + seen.turn_three_buttons);
  await page.getByTestId("approve").click();
  await page.getByTestId("usage").nth(2).waitFor({ timeout: LONG });
});
