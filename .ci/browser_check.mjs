// Open every chapter of the built book in headless Chromium and check what a reader sees:
// the page loads, its math is typeset by MathJax, its figures load, and the console has no errors.
// Screenshots go to _build/screenshots/. Usage (from the repository root, book already built):
//   node .ci/browser_check.mjs BASE_URL TOOLS_DIR
// BASE_URL serves _build/html (e.g. http://127.0.0.1:8765/); TOOLS_DIR holds node_modules with
// playwright-core and mathjax@3. The book loads MathJax from its CDN; this machine has no network,
// so those requests are answered from the local mathjax package — the same files.
import fs from "node:fs";
import path from "node:path";
import { createRequire } from "node:module";

const [base, tools] = process.argv.slice(2);
const require = createRequire(path.join(path.resolve(tools), "node_modules", "x.js"));
const { chromium } = require("playwright-core");
const mathjaxDir = path.join(path.resolve(tools), "node_modules", "mathjax");

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
const failures = [];
for (const page_ of pages) {
  const page = await browser.newPage({ viewport: { width: 1280, height: 1600 } });
  const errors = [];
  page.on("console", (m) => { if (m.type() === "error") errors.push(m.text()); });
  page.on("pageerror", (e) => errors.push(String(e)));
  // MathJax from its CDN → the local package; any other off-machine request is dropped silently
  // (fonts/analytics a theme may reference), since the check is about the book's own content.
  await page.route(/^https?:\/\/(?!127\.0\.0\.1|localhost)/, async (route) => {
    const url = route.request().url();
    const m = url.match(/mathjax@3\/(es5\/.*)$/);
    if (m) {
      const file = path.join(mathjaxDir, m[1].split("?")[0]);
      if (fs.existsSync(file)) return route.fulfill({ path: file });
    }
    return route.abort();
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
  const realErrors = errors.filter((e) => !/net::ERR_FAILED|ERR_BLOCKED|Failed to load resource/.test(e));
  if (realErrors.length) problems.push(`console errors: ${realErrors.join(" | ")}`);
  console.log(`${problems.length ? "FAIL" : "ok  "} ${page_}: ${info.images} figures, ${info.typeset} formulas` +
              (problems.length ? ` — ${problems.join("; ")}` : ""));
  if (problems.length) failures.push(page_);
  await page.close();
}
await browser.close();
console.log(`${pages.length - failures.length} passed, ${failures.length} failed`);
process.exit(failures.length ? 1 : 0);
