// The web chat renders answers as markdown (vendored marked + highlight.js)
// and treats them as untrusted; a failed run shows one error naming its
// cause, and Retry runs the turn again. Against `serve --driver llm` and
// the testkit mock model scripted by crates/cli/tests/serve_web.rs.
//
//   node tests/cli/web_markdown.mjs http://127.0.0.1:PORT/#token=… target/cli-web
import { browserTest, check, ready, shootAll, STEP } from "./lib.mjs";

await browserTest("web-markdown", async (t) => {
  const { page, seen } = t;
  await page.goto(t.url, { timeout: STEP });
  await ready(page);

  // A failure: one error, with its cause; Retry succeeds.
  await page.getByTestId("prompt").fill("FLAKY turn");
  await page.getByTestId("send").click();
  const error = page.getByTestId("error");
  await error.first().waitFor({ timeout: STEP });
  await page.getByTestId("send").waitFor({ state: "visible", timeout: STEP });
  seen.errors = await error.allInnerTexts();
  check(seen.errors.length === 1, "one error per failure: " + JSON.stringify(seen.errors));
  check(/400|bad request/i.test(seen.errors[0]), "the error names its cause: " + seen.errors[0]);
  await shootAll(t, "web-error");
  await page.getByTestId("retry").click();
  await page.getByTestId("assistant").filter({ hasText: "Recovered after a retry." }).waitFor({ timeout: STEP });
  seen.errors_after_retry = await error.count();
  seen.users_after_retry = await page.getByTestId("user").count();
  check(seen.errors_after_retry === 1 && seen.users_after_retry === 1, "retry adds no error and no second prompt");
  check((await page.getByTestId("retry").count()) === 0, "the Retry button is gone once used");

  // Markdown, highlighted code, copy buttons; raw HTML and scripts inert.
  await page.getByTestId("new-thread").click();
  await page.getByTestId("prompt").fill("MARKDOWN please");
  await page.getByTestId("send").click();
  const answer = page.getByTestId("assistant").last();
  await page.getByTestId("usage").last().waitFor({ timeout: STEP });
  seen.heading = (await answer.locator(".body h1").innerText()).trim();
  seen.bold = (await answer.locator(".body strong").first().innerText()).trim();
  const code = answer.locator("pre code.language-rust");
  seen.keywords = await code.locator(".hljs-keyword").allInnerTexts();
  check(seen.heading === "Plan" && seen.bold === "bold", "markdown: " + JSON.stringify(seen));
  check(seen.keywords.includes("fn"), "highlighted rust: " + JSON.stringify(seen.keywords));
  await answer.getByTestId("copy-code").click();
  seen.copied_code = await page.evaluate(() => navigator.clipboard.readText());
  check(seen.copied_code.startsWith("fn main() {"), "copy code: " + seen.copied_code);
  seen.inert = await page.evaluate(() => ({
    xss: window.__xss === undefined,
    images: document.querySelectorAll("#log img").length,
    scripts: document.querySelectorAll("#log script").length,
    js_links: [...document.querySelectorAll("#log a")].filter((a) => !/^(https?|mailto):/.test(a.href)).length,
    links: [...document.querySelectorAll("#log a")].map((a) => a.href + " " + a.rel),
  }));
  check(seen.inert.xss && seen.inert.images === 0 && seen.inert.scripts === 0 && seen.inert.js_links === 0,
    "model output is inert: " + JSON.stringify(seen.inert));
  check(seen.inert.links.includes("https://example.com/docs noopener noreferrer nofollow"), "safe link kept");
  seen.raw_html_shown = (await answer.innerText()).includes("<img src=x onerror=");
  check(seen.raw_html_shown, "raw HTML is shown as text");
  await shootAll(t, "web-markdown");
});
