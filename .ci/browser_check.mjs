// Open every chapter of the built book in headless Chromium and check what a reader sees:
// the page loads, its math is typeset by MathJax, its figures load, and the console has no errors.
// On pages with a weight explorer ({weight-explorer}, book/_ext/static/weight_explorer.js) the canvas
// must match the library's own render (CoordMLP.render, written at build time next to the static
// files) at Δw = 0, after the slider moves the top-ranked weight, and along a random direction —
// mean absolute error ≤ 0.01 per channel; the redraw time at the canvas resolution is reported; and
// with JavaScript disabled the static sweep figures must still be there.
// Screenshots go to _build/screenshots/. Usage (from the repository root, book already built):
//   node .ci/browser_check.mjs BASE_URL TOOLS_DIR
// BASE_URL serves _build/html (e.g. http://127.0.0.1:8765/); TOOLS_DIR holds node_modules with
// playwright-core. The book must read offline: it serves its own MathJax (book/_static/mathjax,
// built into _static/mathjax), so a request for anything not on BASE_URL's host (a CDN, a web font)
// is a problem, and so is one to it that fails (a MathJax component or font missing from the copy).
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
// index.html only redirects to book/intro.html
const pages = [...fs.readdirSync(path.join(htmlRoot, "book"))
  .filter((f) => f.endsWith(".html")).sort().map((f) => `book/${f}`)];
fs.mkdirSync("_build/screenshots", { recursive: true });

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"],
});
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

const failures = [];
for (const page_ of pages) {
  const page = await browser.newPage({ viewport: { width: 1280, height: 1600 } });
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
  if (problems.length) failures.push(page_);
  await page.close();
}
await browser.close();
console.log(`MathJax files requested: ${[...mathjaxFiles].sort().join(", ") || "none"}`);
console.log(`${pages.length - failures.length} passed, ${failures.length} failed`);
process.exit(failures.length ? 1 : 0);
