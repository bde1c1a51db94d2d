// Open every chapter of the built book in headless Chromium and check what a reader sees:
// the page loads, its math is typeset by MathJax and no raw TeX delimiters (\( \) $$) are left in
// its text outside code, no traceback is shown, its figures load, and the console has no errors.
// The front page and every chapter of Parts I–III (read from _toc.yml) show their main figure at
// least MAIN_FIGURE_MIN_PX wide at a 1280 px viewport: the code cell that draws it carries the tag
// `main-figure` (`:tags: [main-figure]`; myst-nb renders the cell with class `tag_main-figure`).
// The claims page's table (class `claims-table`) has one row per claim, each with one verdict
// badge (`verdict-badge`, volratio.report.claims.Verdict.badge), and so does the front page.
// On pages with a weight explorer ({weight-explorer}, book/_ext/static/weight_explorer.js) the canvas
// must match the library's own render (CoordMLP.render, written at build time next to the static
// files) at Δw = 0, after the slider moves the top-ranked weight, and along a random direction —
// mean absolute error ≤ 0.01 per channel; the redraw time at the canvas resolution is reported; and
// with JavaScript disabled the static sweep figures must still be there.
// Every page is opened at 1280×800 (a laptop screen); its first screen is saved to _build/screenshots/. Usage (from the repository root, book already built):
//   node .ci/browser_check.mjs BASE_URL TOOLS_DIR
// BASE_URL serves _build/html (e.g. http://127.0.0.1:8765/); TOOLS_DIR holds node_modules with
// playwright-core. The book must read offline: it serves its own MathJax (copied into _static/mathjax
// by book/_ext/volratio_book.py from the package django-static-mathjax), so a request for anything
// not on BASE_URL's host (a CDN, a web font) is a problem, and so is one to it that fails (a MathJax
// component or font missing from the copy).
import fs from "node:fs";
import path from "node:path";
import { createRequire } from "node:module";

const [base, tools] = process.argv.slice(2);
const require = createRequire(path.join(path.resolve(tools), "node_modules", "x.js"));
const { chromium } = require("playwright-core");
const host = new URL(base).host;
const offMachine = (u) => { const url = new URL(String(u)); return /^https?:$/.test(url.protocol) && url.host !== host; };
const mathjaxFiles = new Set();  // what MathJax loads at run time: the files book/_static/mathjax must hold

const htmlRoot = "_build/html";
const MAIN_FIGURE_MIN_PX = 600;  // at the 1280 px viewport: the main figure spans the column
const N_CLAIMS = 8;  // rows of the claims page (volratio.report.claims.CLAIMS)

// the pages that must show a main figure: the front page (root) and the chapters of the parts whose
// caption starts with "Part " (Parts I–III), from _toc.yml (a plain line reader: the file is flat)
function mainFigurePages() {
  const out = new Set();  // (the root first)
  let inPart = false;
  for (const line of fs.readFileSync("_toc.yml", "utf8").split("\n")) {
    const root = line.match(/^root:\s*(\S+)/);
    if (root) out.add(`${root[1]}.html`);
    const caption = line.match(/-\s*caption:\s*"?([^"#]*)/);
    if (caption) inPart = /^Part /.test(caption[1].trim());
    const file = line.match(/-\s*file:\s*(\S+)/);
    if (file && inPart) out.add(`${file[1]}.html`);
  }
  return out;
}
const needsMainFigure = mainFigurePages();
const frontPage = [...needsMainFigure][0];
// index.html only redirects to book/intro.html
const pages = [...fs.readdirSync(path.join(htmlRoot, "book"))
  .filter((f) => f.endsWith(".html")).sort().map((f) => `book/${f}`)];
fs.mkdirSync("_build/screenshots", { recursive: true });

const launch = () => chromium.launch({
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"],
});
let browser = await launch();
// a browser that dies under a page (not the page failing a check): Playwright's "Target page,
// context or browser has been closed", "Browser closed", a crashed target
const CRASHED = /has been closed|browser closed|target closed|crash/i;
const MAE_LIMIT = 0.01;

function floats32(b64) {
  const b = Buffer.from(b64, "base64");
  return new Float32Array(b.buffer, b.byteOffset, b.byteLength / 4);
}

// per-channel mean absolute error between canvas RGBA bytes and a (res, res, 3) float image
function channelMAE(rgba, ref) {
  const n = ref.length / 3, err = [0, 0, 0];
  for (let p = 0; p < n; p++) for (let c = 0; c < 3; c++) err[c] += Math.abs(rgba[4 * p + c] / 255 - ref[3 * p + c]);
  return err.map((e) => e / n);
}

function floatMAE(a, b) {
  const n = a.length / 3, err = [0, 0, 0];
  for (let p = 0; p < n; p++) for (let c = 0; c < 3; c++) err[c] += Math.abs(a[3 * p + c] - b[3 * p + c]);
  return err.map((e) => e / n);
}

const median = (a) => { const s = [...a].sort((x, y) => x - y); return s[Math.floor(s.length / 2)]; };

async function checkExplorers(page, pageUrl, browser) {
  const problems = [], notes = [];
  const widgets = await page.locator(".volratio-explorer").count();
  if (!widgets) return { problems, notes };
  await page.waitForFunction((n) => window.VolratioExplorer && window.VolratioExplorer.instances.length === n,
                             widgets, { timeout: 30000 }).catch(() => problems.push("weight explorer did not start"));
  if (problems.length) return { problems, notes };
  for (let w = 0; w < widgets; w++) {
    const widget = page.locator(".volratio-explorer").nth(w);
    const checkUrl = new URL(await widget.getAttribute("data-check"), pageUrl).href;
    const check = await (await fetch(checkUrl)).json();
    for (let n = 0; n < check.networks.length; n++) {
      const ref = check.networks[n], panel = widget.locator(".vx-panel").nth(n);
      const slider = panel.locator("input.vx-slider");
      const setDelta = (v) => slider.evaluate((el, v) => { el.value = String(v); el.dispatchEvent(new Event("input", { bubbles: true })); }, v);
      const canvas = () => panel.locator("canvas.vx-canvas").evaluate((c) => Array.from(c.getContext("2d").getImageData(0, 0, c.width, c.height).data));
      const compare = async (what, image) => {
        const mae = channelMAE(await canvas(), floats32(image));
        notes.push(`${ref.spec} ${what}: MAE ${mae.map((e) => e.toFixed(4)).join("/")}`);
        if (Math.max(...mae) > MAE_LIMIT) problems.push(`explorer ${ref.spec} ${what}: canvas differs from CoordMLP.render (MAE per channel ${mae.map((e) => e.toFixed(4)).join(", ")} > ${MAE_LIMIT})`);
      };
      await setDelta(0);
      await compare("Δw=0", ref.base);
      for (const c of ref.cases) {
        if (c.kind === "weight") {
          const name = `weight k${c.param.join(",")} Δw=${c.delta}`;
          const idx = await panel.evaluate((el, p) => [...el.querySelectorAll("select.vx-weights option")]
            .findIndex((o) => o.textContent.includes(`k${p[0]} r${p[1]}→c${p[2]} `)), c.param);
          if (idx >= 0) {  // picked from the ranked list
            await panel.locator("select.vx-weights").selectOption(String(idx));
            await setDelta(c.delta);
            await compare(`${name} (from the list)`, c.image);
            await panel.locator("select.vx-weights").selectOption(String(idx === 0 ? 1 : 0));
          }
          // typed into the entry (the path for weights outside the ranked list)
          await panel.locator("input.vx-entry").fill(c.param.join(" "));
          await panel.locator("button.vx-entry-go").click();
          await setDelta(c.delta);
          await compare(`${name} (typed in)`, c.image);
          // the comparison can fail: the perturbed reference is far from the unperturbed one
          const moved = floatMAE(floats32(c.image), floats32(ref.base));
          notes.push(`${ref.spec} ${name}: reference differs from Δw=0 by MAE ${moved.map((e) => e.toFixed(3)).join("/")}`);
          // redraw time at the canvas resolution: the slider swept over this weight
          const ms = [];
          for (let i = 0; i <= 40; i++) {
            await setDelta((-2 + i * 0.1).toFixed(2));
            ms.push(await page.evaluate((k) => window.VolratioExplorer.instances[k[0]].panels[k[1]].lastFrameMs, [w, n]));
          }
          notes.push(`${ref.spec} redraw moving k${c.param.join(",")} (${ref.res}×${ref.res}): median ${median(ms).toFixed(1)} ms, max ${Math.max(...ms).toFixed(1)} ms`);
          await setDelta(0);
        } else {
          await panel.locator("input.vx-mode-random").check();
          const seed = await page.evaluate((k) => window.VolratioExplorer.instances[k[0]].panels[k[1]].seed, [w, n]);
          if (seed !== c.seed) { problems.push(`explorer ${ref.spec}: random direction ${seed}, expected ${c.seed}`); continue; }
          await setDelta(c.delta);
          await compare(`random direction ${c.seed} Δ=${c.delta}`, c.image);
          const ms = [];
          for (let i = 0; i < 10; i++) {
            await setDelta((1 - i * 0.2).toFixed(2));
            ms.push(await page.evaluate((k) => window.VolratioExplorer.instances[k[0]].panels[k[1]].lastFrameMs, [w, n]));
          }
          notes.push(`${ref.spec} redraw (all weights, ${ref.res}×${ref.res}): median ${median(ms).toFixed(1)} ms`);
          await panel.locator("input.vx-mode-weight").check();
          await setDelta(0);
        }
      }
    }
  }
  // without JavaScript the static sweep figures stay
  const ctx = await browser.newContext({ javaScriptEnabled: false, viewport: { width: 1280, height: 1600 } });
  const plain = await ctx.newPage();
  const offline = [];
  await plain.route(offMachine, (route) => { offline.push(route.request().url()); return route.abort(); });
  await plain.goto(pageUrl, { waitUntil: "load", timeout: 60000 });
  const still = await plain.evaluate(async () => {
    const imgs = [...document.querySelectorAll(".volratio-explorer figure.vx-static img")];
    await Promise.all(imgs.map((i) => (i.complete ? null : new Promise((r) => { i.onload = i.onerror = r; }))));
    return { n: imgs.length, loaded: imgs.filter((i) => i.naturalWidth > 0).length,
             liveShown: [...document.querySelectorAll(".volratio-explorer .vx-live")].some((d) => !d.hidden) };
  });
  await ctx.close();
  notes.push(`without JavaScript: ${still.loaded} of ${still.n} static sweep figures shown`);
  if (still.n === 0 || still.loaded < still.n) problems.push(`without JavaScript the explorer's static figures are missing (${still.loaded} of ${still.n} load)`);
  if (still.liveShown) problems.push("without JavaScript the explorer's (empty) live part is shown");
  if (offline.length) problems.push(`without JavaScript it requests files off this machine: ${offline.join(", ")}`);
  return { problems, notes };
}

// What a reader sees on every page: no raw TeX, no traceback, the main figure wide enough, and on the
// claims page and the front page one verdict badge per claim. Returns the problems, each saying
// what is wrong and what to change.
async function checkReading(page, page_) {
  const problems = [];
  const seen = await page.evaluate(() => {
    const root = document.querySelector("main article, .bd-article, main") || document.body;
    // text outside code (pre, code, the notebooks' cell inputs and outputs) and outside typeset math
    const skip = "pre, code, script, style, textarea, mjx-container, mjx-assistive-mml, svg, .highlight";
    const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT, {
      acceptNode: (n) => (n.parentElement && n.parentElement.closest(skip) ? NodeFilter.FILTER_REJECT : NodeFilter.FILTER_ACCEPT),
    });
    const raw = [];
    for (let n = walker.nextNode(); n; n = walker.nextNode()) {
      const t = n.textContent, m = t.match(/\\\(|\\\)|\$\$/);
      if (m) raw.push(t.slice(Math.max(0, m.index - 40), m.index + 40).replace(/\s+/g, " ").trim());
    }
    const all = root.innerText || "";
    const tb = all.indexOf("Traceback (most recent call last)");
    const errorBlocks = [...root.querySelectorAll(".output.traceback, .output.error, div.highlight-ipythontb")];
    const mains = [...root.querySelectorAll(".tag_main-figure img")].map((img) => {
      const r = img.getBoundingClientRect();
      const cell = img.closest(".cell") || root;  // the column the figure could span
      return { src: img.getAttribute("src"), width: Math.round(r.width), shown: img.offsetParent !== null && r.width > 0,
               loaded: img.complete && img.naturalWidth > 0, natural: img.naturalWidth, column: cell.clientWidth };
    });
    const claimsRows = [...document.querySelectorAll("table.claims-table tbody tr")].map((tr) => ({
      claim: (tr.cells[0]?.innerText || "").trim().slice(0, 60),
      badges: tr.querySelectorAll(".verdict-badge").length,
      verdictCell: (tr.cells[1]?.innerText || "").replace(/\s+/g, " ").trim(),
    }));
    // the claims table: all four columns inside the article, nothing scrolled out of sight
    const table = document.querySelector("table.claims-table");
    const box = table && table.parentElement.getBoundingClientRect();
    const fit = table && {
      scroll: table.scrollWidth, client: table.clientWidth,
      right: Math.round(table.getBoundingClientRect().right), boxRight: Math.round(box.right),
      lastHeader: Math.round(table.querySelector("thead tr th:last-child, tr:first-child > :last-child")?.getBoundingClientRect().right || 0),
    };
    return {
      fit,
      raw,
      traceback: tb >= 0 ? all.slice(tb, tb + 160).replace(/\s+/g, " ") : null,
      errorBlocks: errorBlocks.map((e) => (e.innerText || "").trim().split("\n").slice(-1)[0].slice(0, 160)),
      mains,
      claimsRows,
      badges: root.querySelectorAll(".verdict-badge").length,
    };
  });
  if (seen.raw.length) problems.push(`raw TeX in the text (math not parsed or not typeset; check the $…$ / $$…$$ / \\(…\\) there): ${seen.raw.slice(0, 3).map((r) => `"${r}"`).join(", ")}${seen.raw.length > 3 ? ` and ${seen.raw.length - 3} more` : ""}`);
  if (seen.traceback) problems.push(`a traceback is shown: "${seen.traceback}…"`);
  if (seen.errorBlocks.length) problems.push(`${seen.errorBlocks.length} error output block(s): ${seen.errorBlocks.map((e) => `"${e}"`).join(", ")}`);
  if (needsMainFigure.has(page_)) {
    const wide = seen.mains.filter((m) => m.shown && m.loaded && m.width >= MAIN_FIGURE_MIN_PX);
    if (!seen.mains.length) {
      problems.push("no main figure: tag the code cell that draws the chapter's main figure `:tags: [main-figure]`");
    } else if (!wide.length) {
      problems.push(`main figure too narrow: ${seen.mains.map((m) => `${m.src} displayed ${m.shown ? `${m.width} px wide (drawn ${m.natural} px)` : "not at all (folded or hidden)"}`).join("; ")}` +
                    ` — needs ≥ ${MAIN_FIGURE_MIN_PX} px at a 1280 px viewport (the cell is ${seen.mains[0].column} px wide): widen the figure (figsize × dpi)`);
    }
    if (wide.length) console.log(`     main figure: ${wide.map((m) => `${m.width} px of a ${m.column} px cell`).join(", ")}`);
  }
  if (page_ === "book/claims.html") {
    const f = seen.fit;
    if (!f) problems.push("no claims table (table.claims-table) on the claims page");
    else if (f.scroll > f.client || f.right > f.boxRight + 1 || f.lastHeader > f.boxRight + 1) {
      problems.push(`the claims table does not fit a 1280 px window: scrollWidth ${f.scroll} > clientWidth ${f.client}, ` +
                    `or its right edge ${f.right} px (last column ${f.lastHeader} px) past its container's ${f.boxRight} px ` +
                    "— check book/_ext/static/claims_table.css");
    }
    if (seen.claimsRows.length !== N_CLAIMS) problems.push(`the claims table (table.claims-table) has ${seen.claimsRows.length} rows, expected ${N_CLAIMS}, one per claim`);
    for (const r of seen.claimsRows) {
      if (r.badges !== 1) problems.push(`claims table row "${r.claim}" has ${r.badges} verdict badges, expected 1 (is its glued verdict missing?)`);
      // every EMC2 claim is decided under the gated default judge, and its row says so
      if (!r.verdictCell.includes("no judge involved") && !r.verdictCell.includes("judge: gated default")) {
        problems.push(`claims table row "${r.claim}" does not name the gated default as its deciding judge: "${r.verdictCell}"`);
      }
    }
  }
  if (page_ === frontPage && seen.badges !== N_CLAIMS) {
    problems.push(`the front page shows ${seen.badges} verdict badges, expected ${N_CLAIMS}, one per claim`);
  }
  return problems;
}

// One page's checks: the problems found (empty: it passed), printed as one line. Throws when the
// browser dies under it.
async function checkPage(page_) {
  const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });  // a laptop's screen
  const errors = [];
  page.on("console", (m) => { if (m.type() === "error") errors.push(m.text()); });
  page.on("pageerror", (e) => errors.push(String(e)));
  // the book reads offline: nothing may come from off this machine (a CDN's MathJax, a web font),
  // and every file it asks this machine for must be there
  const offsite = [], missing = [];
  await page.route(offMachine, (route) => { offsite.push(route.request().url()); return route.abort(); });
  page.on("response", (r) => { if (r.status() >= 400 && !offMachine(r.url())) missing.push(`${r.url()} (${r.status()})`); });
  page.on("requestfailed", (r) => {  // (not a load the page itself cancelled)
    const why = r.failure()?.errorText || "";
    if (!offMachine(r.url()) && !/ERR_ABORTED/.test(why)) missing.push(`${r.url()} (${why})`);
  });
  page.on("request", (r) => {
    const m = new URL(r.url()).pathname.match(/\/_static\/mathjax\/(.*)$/);
    if (m) mathjaxFiles.add(m[1]);
  });
  await page.goto(base + page_, { waitUntil: "load", timeout: 60000 });
  const info = await page.evaluate(async () => {
    const hasMath = document.querySelectorAll(".math, span.math, div.math").length;
    if (hasMath && window.MathJax && window.MathJax.startup) await window.MathJax.startup.promise;
    const imgs = [...document.querySelectorAll("main img, article img, .bd-article img")];
    return {
      hasMath,
      typeset: document.querySelectorAll("mjx-container").length,
      mathjaxLoaded: !!(window.MathJax && window.MathJax.version),
      images: imgs.length,
      broken: imgs.filter((i) => !(i.complete && i.naturalWidth > 0)).map((i) => i.src),
      title: document.title,
    };
  });
  await page.screenshot({ path: `_build/screenshots/${page_.replace(/[\/]/g, "_")}.png`, fullPage: false });
  const main = page.locator(".tag_main-figure img").first();
  if (await main.count()) {  // the main figure as the reader sees it
    await main.screenshot({ path: `_build/screenshots/${page_.replace(/[\/]/g, "_").replace(/\.html$/, "")}-main-figure.png` }).catch(() => {});
  }
  const problems = [];
  // figures the executed notebook produced must reach the page
  const nbPath = path.join("_build", "jupyter_execute", page_.replace(/\.html$/, ".ipynb"));
  const expected = fs.existsSync(nbPath) ? (fs.readFileSync(nbPath, "utf8").match(/"image\/png"/g) || []).length : 0;
  if (expected > 0 && info.images === 0) problems.push(`the notebook made ${expected} figures, the page shows none`);
  // a chapter whose code draws (matplotlib) must show at least one figure
  const src = path.join(page_.replace(/\.html$/, ".md"));
  const draws = fs.existsSync(src) && /\bplt\.|\bplots\.|\.imshow\(|_figure\(|\bplot_\w+\(/.test(fs.readFileSync(src, "utf8"));
  if (draws && info.images === 0) problems.push("its code draws figures, but the page shows none");
  if (info.hasMath && info.typeset === 0) problems.push(`math not typeset (MathJax loaded: ${info.mathjaxLoaded})`);
  if (info.broken.length) problems.push(`broken images: ${info.broken.join(", ")}`);
  problems.push(...await checkReading(page, page_));
  const explorer = await checkExplorers(page, base + page_, browser);
  problems.push(...explorer.problems);
  // (after the explorer's checks, which make the page load more)
  if (offsite.length) problems.push(`requests off this machine (the book must read offline): ${offsite.join(", ")}`);
  if (missing.length) problems.push(`files it asks for are missing: ${missing.join(", ")}`);
  for (const note of explorer.notes) console.log(`     weight explorer: ${note}`);
  const realErrors = errors.filter((e) => !/net::ERR_FAILED|ERR_BLOCKED|Failed to load resource/.test(e));
  if (realErrors.length) problems.push(`console errors: ${realErrors.join(" | ")}`);
  console.log(`${problems.length ? "FAIL" : "ok  "} ${page_}: ${info.images} figures, ${info.typeset} formulas` +
              (problems.length ? ` — ${problems.join("; ")}` : ""));
  await page.close();
  return problems;
}

// A page that fails a check fails. A browser crash is retried once, in a fresh browser; a page the
// browser crashes on twice fails, and so does a check that throws for any other reason.
const failures = [];
for (const page_ of pages) {
  for (let attempt = 1; ; attempt++) {
    try {
      if ((await checkPage(page_)).length) failures.push(page_);
      break;
    } catch (e) {
      const why = String(e).split("\n")[0];
      if (!CRASHED.test(why) || attempt === 2) {
        console.log(`FAIL ${page_}: ${CRASHED.test(why) ? "the browser crashed on it twice" : "the check threw"} — ${why}`);
        failures.push(page_);
        break;
      }
      console.log(`     ${page_}: the browser crashed (${why}); retrying once in a fresh browser`);
      await browser.close().catch(() => {});
      browser = await launch();
    }
  }
}
await browser.close();
console.log(`MathJax files requested: ${[...mathjaxFiles].sort().join(", ") || "none"}`);
console.log(`${pages.length - failures.length} passed, ${failures.length} failed`);
process.exit(failures.length ? 1 : 0);
