// The book's weight explorer: draws a network exported by volratio.explorer.export exactly as
// volratio.nets.CoordMLP.render does (same coordinates, activations and colour head), and lets a
// reader move one weight, or all weights along a random direction, and watch the image.
// No dependencies. Works in a browser (the {weight-explorer} directive's pages) and under node
// (tests/test_explorer.py: `require` it and call render()).
(function (root) {
  "use strict";

  // ---------------------------------------------------------------- decoding the export
  function b64bytes(s) {
    if (typeof atob === "function") {
      const bin = atob(s), out = new Uint8Array(bin.length);
      for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
      return out;
    }
    return new Uint8Array(Buffer.from(s, "base64"));
  }

  function floats(s, dtype) {
    const b = b64bytes(s), dv = new DataView(b.buffer, b.byteOffset, b.byteLength);
    const size = dtype === "<f8" ? 8 : 4, n = b.byteLength / size, out = new Float64Array(n);
    for (let i = 0; i < n; i++) out[i] = size === 8 ? dv.getFloat64(8 * i, true) : dv.getFloat32(4 * i, true);
    return out;
  }

  // ---------------------------------------------------------------- the maths of volratio.nets
  const ACT = {
    cache: null, identity: null,  // carry a value unchanged
    sin: Math.sin, cos: Math.cos, tanh: Math.tanh,
    sigmoid: (z) => 2 / (1 + Math.exp(-z)) - 1,  // 2σ(z) − 1
    gaussian: (z) => 2 * Math.exp(-z * z) - 1,   // 2·exp(−z²) − 1
    relu: (z) => (z > 0 ? z : 0),
  };

  // volratio.nets.coords: lin = linspace(−1, 1, res), x, y = meshgrid(lin, lin, "ij"), inputs
  // (y, x, 1.4·sqrt(x² + y²), 1); pixel p = i·res + j has x = lin[i], y = lin[j]. Units-major.
  function coords(res) {
    const P = res * res, g = new Float64Array(4 * P), step = res > 1 ? 2 / (res - 1) : 0;
    // torch.linspace: the first half counts up from start, the second half down from end
    const lin = new Float64Array(res);
    for (let i = 0; i < res; i++) lin[i] = i < res / 2 ? -1 + step * i : 1 - step * (res - 1 - i);
    if (res === 1) lin[0] = -1;
    for (let i = 0; i < res; i++) for (let j = 0; j < res; j++) {
      const p = i * res + j, x = lin[i], y = lin[j];
      g[p] = y; g[P + p] = x; g[2 * P + p] = 1.4 * Math.sqrt(x * x + y * y); g[3 * P + p] = 1;
    }
    return g;
  }

  const rem = (a, b) => a - b * Math.floor(a / b);  // torch.remainder: the sign of the divisor
  const clip01 = (v) => (v < 0 ? 0 : v > 1 ? 1 : v);

  // volratio.nets.head_to_rgb for raw outputs (units-major, n_out × P) → rgb (P × 3)
  function headToRgb(head, raw, P, out) {
    for (let p = 0; p < P; p++) {
      if (head === "hsv") {
        const h = rem(raw[p] + 1, 1), s = clip01(raw[P + p]), v = clip01(Math.abs(raw[2 * P + p]));
        const ns = [5, 3, 1];
        for (let c = 0; c < 3; c++) {
          const k = rem(ns[c] + h * 6, 6);
          out[3 * p + c] = v - v * s * clip01(Math.min(k, 4 - k));
        }
      } else if (head === "grey") {
        const v = clip01(Math.abs(raw[p]));
        out[3 * p] = out[3 * p + 1] = out[3 * p + 2] = v;
      } else {  // rgb
        for (let c = 0; c < 3; c++) out[3 * p + c] = 1 / (1 + Math.exp(-raw[c * P + p]));
      }
    }
    return out;
  }

  // mulberry32 + Box–Muller: the generator volratio.explorer.random_direction mirrors
  function mulberry32(a) {
    return function () {
      a |= 0; a = (a + 0x6D2B79F5) | 0;
      let t = Math.imul(a ^ (a >>> 15), 1 | a);
      t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
      return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    };
  }

  // ---------------------------------------------------------------- the network
  class Network {
    constructor(doc) {
      if (!doc || doc.format !== "volratio.explorer/1") {
        throw new Error("weight explorer: not an export of format volratio.explorer/1 (got " +
                        (doc && doc.format) + "); rebuild the book");
      }
      this.doc = doc;
      this.head = doc.head;
      this.depth = doc.depth;
      this.acts = doc.activations.map((a) => {
        if (!(a in ACT)) throw new Error("weight explorer: unknown activation " + a);
        return ACT[a];
      });
      // kernels: dense values (fan_in × fan_out, row-major), masks, shapes
      this.kernels = doc.kernels.map((k) => {
        const [fi, fo] = k.shape, bits = b64bytes(k.mask), vals = floats(k.values, doc.dtype);
        const mask = new Uint8Array(fi * fo), w = new Float64Array(fi * fo);
        let n = 0;
        for (let e = 0; e < fi * fo; e++) {
          if ((bits[e >> 3] >> (7 - (e & 7))) & 1) { mask[e] = 1; w[e] = vals[n++]; }
        }
        if (n !== vals.length) throw new Error("weight explorer: a kernel's mask and values disagree");
        return { fi, fo, mask, w, nMask: n };
      });
      this.csrBase = this.kernels.map((k) => this.csr(k, k.w));
      this.res = 0;
    }

    // per output unit c: the rows and values of its non-zero incoming weights
    csr(k, w) {
      const rows = [], vals = [];
      for (let c = 0; c < k.fo; c++) {
        const rr = [], vv = [];
        for (let r = 0; r < k.fi; r++) { const x = w[r * k.fo + c]; if (x !== 0) { rr.push(r); vv.push(x); } }
        rows.push(Int32Array.from(rr)); vals.push(Float64Array.from(vv));
      }
      return { rows, vals };
    }

    // the base pass at resolution res: activations of every layer, kept for incremental redraws
    setRes(res) {
      if (res === this.res) return;
      this.res = res; this.P = res * res;
      this.H = [coords(res)];                 // H[l]: layer l's activations, (units, P)
      for (let i = 0; i < this.kernels.length; i++) {
        this.H.push(new Float64Array(this.kernels[i].fo * this.P));
      }
      this.buf = this.H.map((h) => new Float64Array(h.length));  // layers of a perturbed network
      this.rgb = new Float64Array(3 * this.P);
      this.layer(0, this.csrBase, this.H, null);
    }

    // kernels `from` … L: reads H[from], writes H[from + 1] … H[L + 1] (the raw outputs);
    // `poke` = [kernel, row, col, δ] adds δ·h_row to unit col's pre-activation at that kernel
    layer(from, csrs, H, poke) {
      const P = this.P, L = this.kernels.length - 1;
      for (let i = from; i <= L; i++) {
        const k = this.kernels[i], { rows, vals } = csrs[i];
        const hin = H[i], z = H[i + 1];
        z.fill(0);
        for (let c = 0; c < k.fo; c++) {
          const off = c * P, rr = rows[c], vv = vals[c], n = rr.length;
          let e = 0;
          for (; e + 4 <= n; e += 4) {  // four inputs per pass: a quarter of the loads and stores of z
            const w0 = vv[e], w1 = vv[e + 1], w2 = vv[e + 2], w3 = vv[e + 3];
            const a = rr[e] * P, b = rr[e + 1] * P, cc = rr[e + 2] * P, d = rr[e + 3] * P;
            for (let p = 0; p < P; p++) {
              z[off + p] += w0 * hin[a + p] + w1 * hin[b + p] + w2 * hin[cc + p] + w3 * hin[d + p];
            }
          }
          for (; e < n; e++) {
            const w = vv[e], ro = rr[e] * P;
            for (let p = 0; p < P; p++) z[off + p] += w * hin[ro + p];
          }
          if (poke && poke[0] === i && poke[2] === c) {
            const d = poke[3], ro = poke[1] * P;
            for (let p = 0; p < P; p++) z[off + p] += d * hin[ro + p];
          }
          if (i < L) {
            const f = this.acts[c];
            if (f) for (let p = off; p < off + P; p++) z[p] = f(z[p]);
          }
        }
      }
    }

    // the image (P × 3 floats in [0, 1]) for a perturbation: null, {param: [k, r, c], delta},
    // or {seed, delta} (all weights along random direction `seed`). Returns the layers used.
    render(res, pert) {
      this.setRes(res);
      let H = this.H;
      if (pert && pert.delta !== 0) {
        let from = 0, csrs = this.csrBase, poke = null;
        if (pert.param) {
          const [k, r, c] = pert.param, K = this.kernels[k];
          if (!K || r < 0 || r >= K.fi || c < 0 || c >= K.fo || !K.mask[r * K.fo + c]) {
            throw new Error("weight explorer: weight " + pert.param + " is not an unmasked weight");
          }
          from = k; poke = [k, r, c, pert.delta];  // layers up to k are unchanged
        } else {
          const dir = this.direction(pert.seed);
          csrs = this.kernels.map((K, i) => {
            const w = new Float64Array(K.w.length), d = dir[i];
            for (let e = 0; e < w.length; e++) w[e] = K.w[e] + pert.delta * d[e];
            return this.csr(K, w);
          });
        }
        H = this.H.map((h, l) => (l <= from ? h : this.buf[l]));
        this.layer(from, csrs, H, poke);
      }
      headToRgb(this.head, H[H.length - 1], this.P, this.rgb);
      return { rgb: this.rgb, layers: H };
    }

    // volratio.explorer.random_direction: unit norm over the unmasked weights
    direction(seed) {
      if (this._dirSeed === seed) return this._dir;
      const u = mulberry32(seed);
      let ss = 0;
      const dir = this.kernels.map((K) => {
        const d = new Float64Array(K.w.length);
        for (let e = 0; e < d.length; e++) {
          if (!K.mask[e]) continue;
          const u1 = u(), u2 = u();
          d[e] = Math.sqrt(-2 * Math.log(1 - u1)) * Math.cos(2 * Math.PI * u2);
          ss += d[e] * d[e];
        }
        return d;
      });
      const n = Math.sqrt(ss);
      dir.forEach((d) => { for (let e = 0; e < d.length; e++) d[e] /= n; });
      this._dirSeed = seed; this._dir = dir;
      return dir;
    }

    // hidden units with a non-zero incoming and outgoing weight, per hidden layer
    liveUnits() {
      const out = [];
      for (let l = 1; l <= this.depth; l++) {
        const a = this.kernels[l - 1], b = this.kernels[l], live = [];
        for (let u = 0; u < a.fo; u++) {
          let inn = false, outw = false;
          for (let r = 0; r < a.fi && !inn; r++) inn = a.w[r * a.fo + u] !== 0;
          for (let c = 0; c < b.fo && !outw; c++) outw = b.w[u * b.fo + c] !== 0;
          if (inn && outw) live.push(u);
        }
        out.push(live);
      }
      return out;
    }
  }

  // ---------------------------------------------------------------- the page widget
  function el(tag, attrs, ...kids) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === "style") e.style.cssText = v; else if (k in e && k !== "list") e[k] = v; else e.setAttribute(k, v);
    }
    for (const k of kids) e.append(k);
    return e;
  }

  const TILE = 16;  // feature-map tile size, pixels

  class Panel {
    constructor(data, host) {
      this.data = data;
      this.net = new Network(data.net);
      this.res = data.res;
      this.seed = data.seed;
      this.mode = "weight";
      this.top = data.ranking.top;
      this.selected = 0;  // index into the ranked list, or −1 for a weight typed in
      this.weight = this.top[0];  // {k, r, c, w}: the weight the slider moves
      this.delta = 0;
      this.frameMs = [];
      const id = Math.random().toString(36).slice(2, 8);
      this.canvas = el("canvas", { width: this.res, height: this.res, className: "vx-canvas",
                                   style: "width:256px;height:256px;image-rendering:pixelated;border:1px solid #ccc" });
      this.list = el("select", { size: 8, className: "vx-weights", style: "width:100%;font-family:monospace;font-size:12px" });
      this.top.forEach((t, i) => this.list.append(el("option", { value: String(i) },
        `${String(i + 1).padStart(2)}. k${t.k} r${t.r}→c${t.c}  w=${t.w >= 0 ? "+" : ""}${t.w.toFixed(2)}  moves ${t.effect.toFixed(3)}`)));
      this.list.selectedIndex = 0;
      this.slider = el("input", { type: "range", min: "-2", max: "2", step: "0.01", value: "0", className: "vx-slider",
                                  style: "width:200px;vertical-align:middle" });
      this.label = el("span", { className: "vx-delta", style: "font-family:monospace" }, "Δw = +0.00");
      this.modeWeight = el("input", { type: "radio", name: "vx-mode-" + id, checked: true, className: "vx-mode-weight" });
      this.modeRandom = el("input", { type: "radio", name: "vx-mode-" + id, className: "vx-mode-random" });
      this.newDir = el("button", { type: "button", className: "vx-new-direction" }, "new random direction");
      this.info = el("div", { className: "vx-info", style: "font-size:12px;color:#555" });
      this.entry = el("input", { type: "text", className: "vx-entry", placeholder: "kernel row col", size: 12,
                                 style: "font-family:monospace" });
      this.entryGo = el("button", { type: "button", className: "vx-entry-go" }, "move this weight");
      this.features = el("canvas", { className: "vx-features", style: "image-rendering:pixelated;max-width:100%" });
      this.root = el("div", { className: "vx-panel", style: "flex:1 1 300px;min-width:280px" },
        el("div", { style: "font-weight:bold;margin-bottom:4px" }, `${data.spec}`,
           el("span", { style: "font-weight:normal;color:#555" }, ` · ${data.n_nonzero} non-zero weights`)),
        this.canvas,
        el("div", { style: "white-space:nowrap" }, this.slider, " ", this.label),
        el("div", { style: "font-size:13px" },
           el("label", {}, this.modeWeight, " selected weight"), " ",
           el("label", {}, this.modeRandom, " all weights, random direction"), " ", this.newDir),
        el("div", { style: "font-size:12px;margin-top:4px" },
           `weights ranked by how much Δw = ±1 moves the image (RMS, ${data.ranking.res}×${data.ranking.res}):`),
        this.list,
        el("div", { style: "font-size:12px" }, "or any weight: ", this.entry, " ", this.entryGo),
        this.info,
        el("details", { className: "vx-features-box" }, el("summary", {}, "hidden units' feature maps"),
           el("div", { style: "font-size:12px;color:#555" },
              "one row per layer (units with a non-zero input and output), blue negative, red positive; " +
              "units that change are outlined"), this.features));
      host.append(this.root);
      this.slider.addEventListener("input", () => this.set({ delta: parseFloat(this.slider.value) }));
      this.list.addEventListener("change", () => { this.modeWeight.checked = true; this.set({ mode: "weight", selected: this.list.selectedIndex }); });
      const typed = () => this.typeWeight(this.entry.value);
      this.entryGo.addEventListener("click", typed);
      this.entry.addEventListener("keydown", (e) => { if (e.key === "Enter") typed(); });
      this.modeWeight.addEventListener("change", () => this.set({ mode: "weight" }));
      this.modeRandom.addEventListener("change", () => this.set({ mode: "random" }));
      this.newDir.addEventListener("click", () => { this.modeRandom.checked = true; this.set({ mode: "random", seed: this.seed + 1 }); });
      this.root.querySelector(".vx-features-box").addEventListener("toggle", () => this.draw());
      this.live = this.net.liveUnits();
      this.draw();
    }

    set(s) {
      if ("delta" in s) this.delta = s.delta;
      if ("mode" in s) this.mode = s.mode;
      if ("selected" in s) { this.selected = s.selected; if (s.selected >= 0) this.weight = this.top[s.selected]; }
      if ("weight" in s) this.weight = s.weight;
      if ("seed" in s) this.seed = s.seed;
      this.slider.value = String(this.delta);
      this.list.selectedIndex = this.selected;
      this.draw();
    }

    // "k r c" (or "k,r,c") typed by the reader: any unmasked weight
    typeWeight(text) {
      const v = text.trim().split(/[\s,]+/).map(Number), K = this.net.kernels[v[0]];
      const ok = v.length === 3 && v.every(Number.isInteger) && K && v[1] >= 0 && v[1] < K.fi && v[2] >= 0 &&
                 v[2] < K.fo && K.mask[v[1] * K.fo + v[2]];
      if (!ok) { this.info.textContent = `"${text}" is not an unmasked weight: give kernel (0–${this.net.kernels.length - 1}), row and column`; return; }
      const [k, r, c] = v, i = this.top.findIndex((t) => t.k === k && t.r === r && t.c === c);
      this.modeWeight.checked = true;
      this.set({ mode: "weight", selected: i, weight: { k, r, c, w: K.w[r * K.fo + c] } });
    }

    perturbation() {
      if (this.mode === "random") return { seed: this.seed, delta: this.delta };
      const t = this.weight;
      return { param: [t.k, t.r, t.c], delta: this.delta };
    }

    draw() {
      const t0 = performance.now();
      const pert = this.perturbation(), { rgb, layers } = this.net.render(this.res, pert);
      const ctx = this.canvas.getContext("2d"), img = ctx.createImageData(this.res, this.res);
      for (let p = 0; p < this.res * this.res; p++) {
        for (let c = 0; c < 3; c++) img.data[4 * p + c] = Math.round(255 * rgb[3 * p + c]);
        img.data[4 * p + 3] = 255;
      }
      ctx.putImageData(img, 0, 0);
      const ms = performance.now() - t0;
      this.frameMs.push(ms);
      this.lastFrameMs = ms;
      this.label.textContent = `Δw = ${this.delta >= 0 ? "+" : ""}${this.delta.toFixed(2)}`;
      const what = this.mode === "random" ? `all ${this.net.kernels.reduce((a, k) => a + k.nMask, 0)} weights along random direction ${this.seed} (unit norm)`
        : (() => { const t = this.weight; return `kernel ${t.k}, unit ${t.r} → unit ${t.c}: w = ${(t.w + this.delta).toFixed(3)} (was ${t.w.toFixed(3)})`; })();
      this.info.textContent = `${what} · redraw ${ms.toFixed(1)} ms`;
      const box = this.root.querySelector(".vx-features-box");
      if (box && box.open) this.drawFeatures(layers);
    }

    drawFeatures(layers) {
      const P = this.net.P, res = this.res, stride = Math.max(1, Math.floor(res / TILE)), n = Math.min(TILE, res);
      const rows = this.live, cols = Math.max(1, ...rows.map((r) => r.length));
      const W = cols * (n + 2), Hh = rows.length * (n + 2);
      this.features.width = W; this.features.height = Hh;
      this.features.style.width = 2 * W + "px";
      const ctx = this.features.getContext("2d"), img = ctx.createImageData(W, Hh);
      img.data.fill(255);
      rows.forEach((units, li) => units.forEach((u, ui) => {
        const base = this.net.H[li + 1], cur = layers[li + 1];
        let m = 1e-12, change = 0;
        for (let p = u * P; p < (u + 1) * P; p++) { m = Math.max(m, Math.abs(base[p])); change = Math.max(change, Math.abs(cur[p] - base[p])); }
        const changed = change > 0.02 * Math.max(m, 1e-3);
        const x0 = ui * (n + 2), y0 = li * (n + 2);
        for (let y = 0; y < n + 2; y++) for (let x = 0; x < n + 2; x++) {
          const q = 4 * ((y0 + y) * W + x0 + x);
          if (y === 0 || x === 0 || y === n + 1 || x === n + 1) {
            if (changed) { img.data[q] = 230; img.data[q + 1] = 120; img.data[q + 2] = 0; }
            continue;
          }
          const v = cur[u * P + (y - 1) * stride * res + (x - 1) * stride] / m;  // in [−1, 1] at Δw = 0
          const a = Math.min(1, Math.abs(v));
          img.data[q] = v > 0 ? 255 : Math.round(255 * (1 - a));
          img.data[q + 1] = Math.round(255 * (1 - a));
          img.data[q + 2] = v < 0 ? 255 : Math.round(255 * (1 - a));
        }
      }));
      ctx.putImageData(img, 0, 0);
    }
  }

  const instances = [];

  function mount(widget) {
    if (widget.dataset.vxMounted) return;
    widget.dataset.vxMounted = "1";
    const data = JSON.parse(widget.querySelector("script.vx-data").textContent);
    const live = widget.querySelector(".vx-live");
    const panels = data.networks.map((d) => new Panel(d, live));
    live.hidden = false;
    live.style.cssText = "display:flex;flex-wrap:wrap;gap:16px;margin-bottom:12px";
    instances.push({ widget, panels });
  }

  const api = { Network, coords, headToRgb, mulberry32, instances, mount };
  if (typeof module !== "undefined" && module.exports) module.exports = api;
  if (typeof document !== "undefined") {
    root.VolratioExplorer = api;
    const start = () => document.querySelectorAll(".volratio-explorer").forEach(mount);
    if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start); else start();
  }
})(typeof window !== "undefined" ? window : globalThis);
