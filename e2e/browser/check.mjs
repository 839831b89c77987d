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
async function axe(path, options = {}) {
  const page = await newPage({ ...options, bypassCSP: true });
  await page.goto(base + path);
  await page.evaluate(axeSource);
  const res = await page.evaluate(() => window.axe.run(document, { resultTypes: ["violations"] }));
  const bad = res.violations.filter((v) => v.impact === "serious" || v.impact === "critical");
  const where = options.viewport ? ` at ${options.viewport.width} px${options.colorScheme ? ", " + options.colorScheme : ""}` : "";
  check(bad.length === 0, `axe finds no serious or critical violation on ${path}${where}` +
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

// The boxes of the overview's cards, by id.
async function boxes(page, ids) {
  return page.evaluate((ids) => ids.map((id) => {
    const r = document.getElementById(id).getBoundingClientRect();
    return { id, top: Math.round(r.top), left: Math.round(r.left), right: Math.round(r.right) };
  }), ids);
}

// The commands on the page that break across lines: a command's text whose
// line boxes do not all sit on one line, or a code block that may wrap.
async function brokenCommands(page) {
  return page.evaluate(() => [...document.querySelectorAll("code.cmd")].flatMap((el) => {
    const range = document.createRange();
    range.selectNodeContents(el);
    const tops = new Set([...range.getClientRects()].filter((r) => r.width > 0).map((r) => Math.round(r.top)));
    const ws = getComputedStyle(el).whiteSpace;
    return tops.size > 1 || !(ws === "pre" || ws === "nowrap") ? [`${el.textContent} (${tops.size} lines, white-space ${ws})`] : [];
  }));
}

// The chart's axes: the labels of its count and time axes.
async function axes(page) {
  return page.evaluate(() => ({
    counts: [...document.querySelectorAll("svg.plot .count-axis text")].map((t) => t.textContent),
    times: [...document.querySelectorAll("svg.plot .time-axis text")].map((t) => t.textContent),
  }));
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
    // At 1280 px the small cards share a row, left to right.
    const cards = await boxes(page, ["card-stale", "card-owners", "card-guards", "card-kube"]);
    check(cards.every((b, i) => i === 0 || (Math.abs(b.top - cards[0].top) <= 1 && b.left >= cards[i - 1].right)),
      "at 1280 px the overview's cards sit side by side: " + JSON.stringify(cards));
    check((await page.locator("#causes code.cmd").count()) >= 1 && (await brokenCommands(page)).length === 0,
      "the command that ends the block is a code block of its own, on one line");
    // The copy button, added by a script of the page's own, copies the
    // command whole.
    await page.context().grantPermissions(["clipboard-read", "clipboard-write"], { origin: base });
    const copy = page.locator("#causes .cmds button.copy").first();
    await copy.click();
    await page.waitForFunction(() => document.querySelector("#causes .cmds button.copy").textContent === "Copied");
    const copied = await page.evaluate(() => navigator.clipboard.readText());
    check(copied === `lock-reaper release --owner ${c.deadOwner} --dry-run`, `the copy button copies the command whole: ${copied}`);
    mkdirSync(c.shots, { recursive: true });
    await page.screenshot({ path: c.shots + "/status-overview.png", fullPage: false });

    const lead = await text(page, "#causes li");
    check(lead.includes(`blocked by dead worker ${c.deadOwner} (heartbeat 23 h ago)`) && /What ends it: a reaper's pass would release it, but nothing releases here/.test(lead) &&
      lead.includes(`lock-reaper release --owner ${c.deadOwner} --dry-run`) && !lead.includes("next pass"),
      `the overview leads with the cause: the dead worker, its heartbeat, what ends it (no promised pass under status): ${lead}`);
    check((await text(page, "#passes-answer")).startsWith("No pass recorded"), "before any pass, the history says none was recorded");

    await page.getByRole("link", { name: "Blocked queue" }).click();
    await page.waitForURL(base + "/queue");
    const item = page.locator(`#task-${c.blocked}`);
    const cause = page.locator("section.cause", { has: item });
    const title = (await cause.locator("h2").innerText()).replace(/\s+/g, " ");
    check(title.includes(`blocked by dead worker ${c.deadOwner}`), `the blocked task is under its cause, the dead owner: ${title}`);
    const facts = (await cause.locator(".facts").innerText()).replace(/\s+/g, " ") + " " + (await cause.locator(".ends").innerText());
    check(facts.includes("heartbeat 23 h ago") && /owner-dead|task-finished|task-lost/.test(facts) && facts.includes("lock-reaper release --owner"),
      `the cause reads dead holder → heartbeat → verdict → what ends it, once: ${facts}`);
    check((await page.locator("main").innerText()).split("heartbeat 23 h ago").length === 2, "the dead worker's heartbeat is said once on the page");
    const row = (await item.innerText()).replace(/\s+/g, " ");
    check(row.includes(c.resource), `the task's row names the resource in its way: ${row}`);
    // Pulp's fetch order within each cause.
    const ordered = await page.locator("section.cause").evaluateAll((els) => els.every((el) => {
      const pos = [...el.querySelectorAll("td.pos")].map((td) => Number(td.innerText));
      return pos.every((p, i) => i === 0 || pos[i - 1] < p);
    }));
    check(ordered, "within each cause the tasks are in fetch order");
    await item.scrollIntoViewIfNeeded();
    await page.screenshot({ path: c.shots + "/status-blocked-queue.png", fullPage: false });

    // Links: the holder leads to its holdings, a verdict to its filter,
    // the task to its page.
    await cause.locator("h2 a", { hasText: c.deadOwner }).first().click();
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
    await page.locator(`#task-${c.blocked} a[href^="/tasks/"]`).first().click();
    await page.waitForURL(base + `/tasks/${c.blocked}`);
    check((await text(page, "#task-status")).startsWith("blocked:"), "the task page says what explain says: blocked");
    await page.goto(base + `/tasks/pulp/api/v3/tasks/${c.blocked}/`);
    check((await text(page, "#task-status")).startsWith("blocked:"), "the task page takes Pulp's href form");
    check(page.errors.length === 0, "no console error, CSP violation or foreign request: " + page.errors.join("; "));
    await page.context().close();

    // Without JavaScript: the same pages, the same filters.
    const nojs = await newPage({ javaScriptEnabled: false });
    await nojs.goto(base + "/queue?blocked=1");
    check((await nojs.locator("section.cause", { has: nojs.locator(`#task-${c.blocked}`) }).locator("h2").innerText()).includes(c.deadOwner), "without JavaScript the queue shows the cause");
    await nojs.goto(base + "/holdings");
    await nojs.fill("#f-owner", c.deadOwner);
    await nojs.getByRole("button", { name: "Filter" }).click();
    await nojs.waitForURL(/owner=/);
    check((await nojs.locator("#holdings-table tbody tr").count()) > 0, "without JavaScript the filter form works");
    await nojs.context().close();

    // An unknown task or owner: 404, and a page that says so.
    const lost = await newPage();
    const unknownTask = c.blocked.replace(/^.{8}/, "00000000");
    let r = await lost.goto(base + `/tasks/${unknownTask}`);
    check(r.status() === 404 && (await text(lost, "#task-status")).startsWith("not-found: no task"), "an unknown task answers 404 and says so");
    r = await lost.goto(base + "/holdings?owner=" + encodeURIComponent(c.deadOwner + "x"));
    check(r.status() === 404 && (await text(lost, "#unknown-owner")).includes("Did you mean"), "an unknown owner answers 404 with the nearest names");
    await lost.context().close();

    for (const path of ["/", "/queue", "/owners", "/holdings", "/passes", `/tasks/${c.blocked}`]) await axe(path);
    await refusesWrites(["/", "/queue", "/holdings", `/tasks/${c.blocked}`]);
  } else if (phase === "phone") {
    // A phone, in the dark: no page scrolls sideways, axe finds nothing.
    const phone = { viewport: { width: 375, height: 812 }, deviceScaleFactor: 2, isMobile: true, hasTouch: true, colorScheme: "dark" };
    const paths = ["/", "/queue", "/queue?" + new URLSearchParams({ owner: c.deadOwner, blocked: "1" }), "/owners", "/holdings", "/passes", `/tasks/${c.blocked}`];
    mkdirSync(c.shots, { recursive: true });
    for (const path of paths) {
      const page = await newPage(phone);
      await page.goto(base + path);
      // On a phone the layout viewport widens to fit a page wider than the
      // screen, so innerWidth alone would hide an overflow: it must stay 375.
      const [sw, iw, wide] = await page.evaluate(() => [document.documentElement.scrollWidth, window.innerWidth,
        [...document.querySelectorAll("main *")].filter((el) => el.getBoundingClientRect().right > 375.5)
          .slice(0, 3).map((el) => el.tagName.toLowerCase() + (el.id ? "#" + el.id : "") + ` (${Math.round(el.getBoundingClientRect().right)} px: ` +
            el.textContent.replace(/\s+/g, " ").slice(0, 80) + ")")]);
      const fits = iw === 375 && sw <= iw;
      check(fits, `no horizontal scroll at 375 px on ${path} (scrollWidth ${sw}, innerWidth ${iw})` +
        (fits ? "" : "; wider than the screen: " + wide.join(" ")));
      // No command breaks inside a word: each is one line, scrolled in its
      // own box when it is wider than the screen.
      const broken = await brokenCommands(page);
      check(broken.length === 0, `no command wraps at 375 px on ${path}` + (broken.length ? ": " + broken.join("; ") : ""));
      if (path === "/") {
        check((await page.locator("#causes code.cmd").count()) >= 1, "the overview's cause names its command at 375 px");
        const [a, b] = await boxes(page, ["card-stale", "card-owners"]);
        check(b.top > a.top && b.left === a.left, "at 375 px the overview's cards stack in one column");
      }
      if (path === "/") await page.screenshot({ path: c.shots + "/status-overview-phone.png", fullPage: false });
      if (path === "/queue") await page.screenshot({ path: c.shots + "/status-blocked-queue-phone.png", fullPage: false });
      check(page.errors.length === 0, `no console error on ${path}: ` + page.errors.join("; "));
      await page.context().close();
    }
    for (const path of paths) await axe(path, phone);
  } else if (phase === "after") {
    const page = await newPage();
    await page.goto(base + "/");
    check(/from a pass of run \(the daemon\)/.test(await text(page, "#snapshot-age")), "the daemon's page is of its pass, named as the history names it");
    check(!(await text(page, "#stuck-answer")).startsWith("Yes:"), "after the reap no waiting task is blocked");
    await page.goto(base + `/tasks/${c.blocked}`);
    const st = await text(page, "#task-status");
    check(st.startsWith("running:") && st.includes(c.liveOwner), `the once blocked task runs: ${st}`);
    await page.goto(base + "/queue");
    check(await page.locator(`#task-${c.blocked}`).count() === 0, "it has left the queue");
    // The daemon's passes are in the history, each time machine-readable.
    await page.getByRole("link", { name: "Passes" }).click();
    await page.waitForURL(base + "/passes");
    const first = page.locator("#passes-table tbody tr").first();
    const mode = (await first.locator("td").nth(1).innerText()).trim();
    const dt = await first.locator("time").getAttribute("datetime");
    check(mode === "run" && /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/.test(dt || ""), `the last pass is the daemon's, at <time datetime="${dt}">: ${mode}`);
    check(await page.locator("svg.plot rect.released").count() >= 1, "the chart shows the pass that released");
    const ax = await axes(page);
    check(ax.counts.includes("0") && ax.counts.length >= 2 && ax.times.length >= 2 && ax.times.some((t) => t.startsWith("now ")),
      "the chart has a count axis and a time axis, labelled: " + JSON.stringify(ax));
    check((await text(page, "#passes-answer")).startsWith("Last pass: a pass of run"), "the page says which reaper passed last");
    mkdirSync(c.shots, { recursive: true });
    await page.screenshot({ path: c.shots + "/status-passes.png", fullPage: false });
    await axe("/passes");
    const phone = await newPage({ viewport: { width: 375, height: 812 }, deviceScaleFactor: 2, isMobile: true, hasTouch: true, colorScheme: "dark" });
    await phone.goto(base + "/passes");
    const [sw, iw] = await phone.evaluate(() => [document.documentElement.scrollWidth, window.innerWidth]);
    check(iw === 375 && sw <= iw, `no horizontal scroll at 375 px on /passes after passes (scrollWidth ${sw})`);
    await phone.context().close();
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
