// Drives Debian's chromium over lock-reaper's status page, one phase at a
// time, as browser_test.go asks: node check.mjs PHASE BASE_URL CASE_JSON.
// It prints one line per check and exits 1 on the first that fails.
import { readFileSync, mkdirSync } from "node:fs";
import { createRequire } from "node:module";
import { chromium } from "playwright-core";

const require = createRequire(import.meta.url);
const axeSource = readFileSync(require.resolve("axe-core/axe.min.js"), "utf8");

const [phase, base, caseJSON] = process.argv.slice(2);
const c = JSON.parse(caseJSON);

function check(ok, what) {
  if (!ok) {
    console.log(`FAIL ${phase}: ${what}`);
    throw new Error(what);
  }
  console.log(`ok   ${phase}: ${what}`);
}

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  headless: true,
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  // Playwright gives each launch a fresh --user-data-dir of its own (it
  // refuses one passed in args), in the temporary folder set here.
  env: { ...process.env, TMPDIR: c.profileDir },
});

// A page that fails the run on any console error (a CSP violation is one)
// and on any request to another origin.
async function newPage(options = {}) {
  const ctx = await browser.newContext({ viewport: { width: 1280, height: 900 }, ...options });
  const page = await ctx.newPage();
  page.errors = [];
  page.on("console", (m) => { if (m.type() === "error") page.errors.push(m.text()); });
  page.on("pageerror", (e) => page.errors.push(String(e)));
  page.on("request", (r) => { if (!r.url().startsWith(base)) page.errors.push("request to " + r.url()); });
  page.on("response", (r) => { if (r.status() >= 400) page.errors.push(`${r.status()} for ${r.url()}`); });
  return page;
}

async function text(page, selector) {
  return (await page.locator(selector).first().innerText()).replace(/\s+/g, " ");
}

// axe's serious and critical violations of the page.
async function axe(path) {
  const page = await newPage({ bypassCSP: true });
  await page.goto(base + path);
  await page.evaluate(axeSource);
  const res = await page.evaluate(() => window.axe.run(document, { resultTypes: ["violations"] }));
  const bad = res.violations.filter((v) => v.impact === "serious" || v.impact === "critical");
  check(bad.length === 0, `axe finds no serious or critical violation on ${path}` +
    (bad.length ? ": " + bad.map((v) => `${v.id} (${v.impact}): ${v.nodes.map((n) => n.target).join(" ")}`).join("; ") : ""));
  await page.context().close();
}

// Every method but GET and HEAD is refused. A script on the page cannot even
// send one (the CSP's default-src 'none' leaves no connect-src); a client
// outside the page gets 405 for each.
async function refusesWrites(paths) {
  const page = await newPage();
  await page.goto(base + "/");
  const inPage = await page.evaluate(async () => {
    try { await fetch("/", { method: "POST", body: "x=1" }); return "sent"; } catch (e) { return "blocked"; }
  });
  check(inPage === "blocked", "a script on the page cannot send a request (CSP)");
  page.errors = []; // the CSP violation just provoked
  for (const path of paths) {
    for (const method of ["POST", "PUT", "PATCH", "DELETE", "OPTIONS"]) {
      const r = await page.request.fetch(base + path, { method, data: method === "OPTIONS" ? undefined : "x=1" });
      check(r.status() === 405, `${method} ${path} is refused (${r.status()})`);
    }
  }
  check(await page.locator("form[method=post], button[formmethod=post]").count() === 0, "no form posts anything");
  await page.context().close();
}

try {
  if (phase === "before") {
    const page = await newPage();
    const resp = await page.goto(base + "/");
    check(resp.status() === 200, "the overview answers 200");
    const h = resp.headers();
    check(/script-src 'self'/.test(h["content-security-policy"]) && h["x-frame-options"] === "DENY" && h["x-content-type-options"] === "nosniff", "security headers are set");
    check((await text(page, "#stuck-answer")).startsWith("Yes:"), "the overview says Pulp is stuck");
    check(/Snapshot .* old/.test(await text(page, "#snapshot-age")), "the snapshot's age is shown");
    check(Number(await text(page, "#blocked-count")) >= 1, "blocked tasks are counted");
    check(Number(await text(page, "#owners-dead")) === 1, "one dead owner");
    mkdirSync(c.shots, { recursive: true });
    await page.screenshot({ path: c.shots + "/status-overview.png", fullPage: false });

    await page.getByRole("link", { name: "Blocked queue" }).click();
    await page.waitForURL(base + "/queue");
    const item = page.locator(`#task-${c.blocked}`);
    const conclusion = (await item.locator(".conclusion").innerText());
    check(conclusion.includes(`blocked by a stale lock of dead worker ${c.deadOwner}`), `the blocked task's conclusion names the dead owner: ${conclusion}`);
    const row = (await item.locator("table.chain tbody tr").first().innerText()).replace(/\s+/g, " ");
    check(row.includes(c.resource) && row.includes(c.deadOwner) && row.includes("dead, heartbeat 23h") &&
      /owner-dead|task-finished|task-lost/.test(row) && row.includes("next pass at"),
      `the chain reads resource → dead holder → liveness → verdict → next pass: ${row}`);
    // Pulp's fetch order: the queue lists the tasks oldest first.
    const ids = await page.locator("ol.queue > li").evaluateAll((els) => els.map((e) => e.id.slice(5)));
    check(ids.indexOf(c.queued[0]) === 0, "the oldest queued task comes first");
    await item.scrollIntoViewIfNeeded();
    await page.screenshot({ path: c.shots + "/status-blocked-queue.png", fullPage: false });

    // Links: the holder leads to its holdings, a verdict to its filter,
    // the task to its page.
    await item.locator("table.chain a", { hasText: c.deadOwner }).first().click();
    await page.waitForURL(/\/holdings\?owner=/);
    check(new URL(page.url()).searchParams.get("owner") === c.deadOwner, "the owner link filters the holdings by owner");
    const owners = await page.locator("#holdings-table tbody tr td:nth-child(3)").allInnerTexts();
    check(owners.length > 0 && owners.every((o) => o.trim() === c.deadOwner), `every listed holding is the dead owner's (${owners.length})`);
    await page.getByRole("link", { name: "next", exact: true }).first().click();
    check(new URL(page.url()).searchParams.get("page") === "2" && new URL(page.url()).searchParams.get("owner") === c.deadOwner, "the next page keeps the filter");

    // The filter form, typed into.
    await page.goto(base + "/holdings");
    await page.fill("#f-owner", c.liveOwner);
    await page.selectOption("#f-verdict", "justified");
    await page.getByRole("button", { name: "Filter" }).click();
    await page.waitForURL(/verdict=justified/);
    const verdicts = await page.locator("#holdings-table tbody tr td:nth-child(6)").allInnerTexts();
    check(verdicts.length > 0 && verdicts.every((v) => v.trim() === "justified"), "the verdict filter keeps only its verdict");

    await page.goto(base + `/queue#task-${c.blocked}`);
    await page.locator(`#task-${c.blocked} .head a`).first().click();
    await page.waitForURL(base + `/tasks/${c.blocked}`);
    check((await text(page, "#task-status")).startsWith("blocked:"), "the task page says what explain says: blocked");
    await page.goto(base + `/tasks/pulp/api/v3/tasks/${c.blocked}/`);
    check((await text(page, "#task-status")).startsWith("blocked:"), "the task page takes Pulp's href form");
    check(page.errors.length === 0, "no console error, CSP violation or foreign request: " + page.errors.join("; "));
    await page.context().close();

    // Without JavaScript: the same pages, the same filters.
    const nojs = await newPage({ javaScriptEnabled: false });
    await nojs.goto(base + "/queue?blocked=1");
    check((await nojs.locator(`#task-${c.blocked} .conclusion`).innerText()).includes("blocked by a stale lock"), "without JavaScript the queue shows the chain");
    await nojs.goto(base + "/holdings");
    await nojs.fill("#f-owner", c.deadOwner);
    await nojs.getByRole("button", { name: "Filter" }).click();
    await nojs.waitForURL(/owner=/);
    check((await nojs.locator("#holdings-table tbody tr").count()) > 0, "without JavaScript the filter form works");
    await nojs.context().close();

    for (const path of ["/", "/queue", "/owners", "/holdings", `/tasks/${c.blocked}`]) await axe(path);
    await refusesWrites(["/", "/queue", "/holdings", `/tasks/${c.blocked}`]);
  } else if (phase === "after") {
    const page = await newPage();
    await page.goto(base + "/");
    check(/pass of mode once/.test(await text(page, "#snapshot-age")), "the daemon's page is of its pass");
    check(!(await text(page, "#stuck-answer")).startsWith("Yes:"), "after the reap no waiting task is blocked");
    await page.goto(base + `/tasks/${c.blocked}`);
    const st = await text(page, "#task-status");
    check(st.startsWith("running:") && st.includes(c.liveOwner), `the once blocked task runs: ${st}`);
    await page.goto(base + "/queue");
    check(await page.locator(`#task-${c.blocked}`).count() === 0, "it has left the queue");
    check(page.errors.length === 0, "no console error: " + page.errors.join("; "));
    await page.context().close();
    await refusesWrites(["/", "/metrics", "/livez", "/readyz", "/queue"]);
  } else {
    throw new Error("unknown phase " + phase);
  }
} catch (e) {
  console.log(String(e && e.stack || e));
  await browser.close();
  process.exit(1);
}
await browser.close();
