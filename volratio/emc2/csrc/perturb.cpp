// Fused single-weight perturbations of one compacted coordinate MLP (volratio.emc2.fused).
//
// Plain C ABI (loaded with ctypes, no torch headers), built and cached like the fused training
// kernel (volratio/train/csrc/fused_mlp.cpp, whose vector type, exp polynomial and activations this
// follows). All tensors are float32, contiguous, row-major; Pp is the pixel count padded to a
// multiple of T = 64:
//
//   widths (L+2,)                  units per layer after dead-unit compaction (layer 0 = inputs)
//   wt[l]  (n_{l+1}, n_l)          kernel l transposed (output unit, input unit), l = 0 … L
//   acts[l] (n_l,)                 activation kind of each unit of hidden layer l = 1 … L (ACT_*; acts[0] unused)
//   H[l]   (n_l, Pp)               the base pass: input of kernel l (H[0] is the pixel grid)
//   Z[l]   (n_{l+1}, Pp)           the base pass: output of kernel l before the activation
//   rows, cols, deltas (N,)        perturbation n moves kernel i's weight (rows[n], cols[n]) by deltas[n]
//   img    (N, P, 3)               the perturbed networks' images (volratio.nets.head_to_rgb of their outputs)
//
// What one perturbation costs (volratio.emc2.engine explains the cone): moving W_i[r, c] by δ
// changes unit c of layer i+1 by δ·h_i[r]; above it only the *forward cone* of c changes. For each
// target unit c a program lists, per kernel l above it, the units of the cone (src → dst) and only
// the non-zero weights between them — as a dense block (input-major, `dense_block`) when at least
// half of them are non-zero, else per destination unit (`sparse_rows`). While the cone covers part
// of a layer the program carries the *change* of the activations, z' = Z + W·Δh; once it covers a
// whole layer it carries the activations, z' = W·h (a plain forward pass). Masked weights, dead
// units and units outside the cone cost nothing.
//
// The pixels are processed in tiles of 64 (NU vectors of NL floats per unit, the machine's vectors:
// NL = 16 with AVX-512, 8 with AVX2, 4 otherwise; every operation is per pixel, so the width
// changes no result). One thread runs one
// perturbation through all tiles (its program, ≤ 22×22 weights per layer, stays in L1); the tile's
// activations of one layer are ≤ 22 × 256 bytes. Threads split the perturbations, so results do
// not depend on the thread count. Determinism: compiled with -ffp-contract=off and no -ffast-math;
// every sum has the order of this source (input units ascending); fused multiply-adds only where
// the source writes `fmadd`, exactly defined — so the bits are the same for every run, thread
// count and instruction set (AVX-512, AVX2, baseline).

#include <cmath>
#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>
#if defined(__AVX512F__) || defined(__FMA__)
#include <immintrin.h>
#endif

namespace {

constexpr int T = 64;  // pixels per tile
#if defined(__AVX512F__)
constexpr int NL = 16;  // floats per machine vector
#elif defined(__AVX2__) && defined(__FMA__)
constexpr int NL = 8;
#else
constexpr int NL = 4;
#endif
constexpr int NU = T / NL;  // machine vectors per tile row

typedef float vf __attribute__((vector_size(4 * NL)));
typedef float vfu __attribute__((vector_size(4 * NL), aligned(4)));  // an unaligned load / store
typedef int32_t vi __attribute__((vector_size(4 * NL)));

enum Act { ACT_IDENTITY = 0, ACT_GAUSSIAN = 1, ACT_SIGMOID = 2, ACT_TANH = 3, ACT_SIN = 4, ACT_COS = 5, ACT_RELU = 6 };

#if NL == 4
__attribute__((noinline))
#endif
inline vf fmadd(vf a, vf b, vf c) {
#if defined(__AVX512F__)
    return (vf)_mm512_fmadd_ps((__m512)a, (__m512)b, (__m512)c);
#elif NL == 8
    return (vf)_mm256_fmadd_ps((__m256)a, (__m256)b, (__m256)c);
#else
    vf r;
    for (int l = 0; l < NL; ++l) r[l] = std::fma(a[l], b[l], c[l]);
    return r;
#endif
}

inline vf splat(float x) { return x - vf{}; }
inline vf load(const float* p) { return (vf) * (const vfu*)p; }
inline void store(float* p, vf x) { *(vfu*)p = (vfu)x; }

// e^x: the training kernel's Cephes expf (~1 ulp; exactly 0 below −80, +inf above 88.72).
inline vf vexp(vf x) {
    const vf zero = splat(0.0f), inf = splat(INFINITY);
    vf xc = x > 88.0f ? splat(88.0f) : x;
    xc = xc < -80.0f ? splat(-80.0f) : xc;
    vf n = (xc * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
    vf r = fmadd(n, splat(-0.693359375f), xc);
    r = fmadd(n, splat(2.12194440e-4f), r);
    vf y = fmadd(r, splat(1.9875691500e-4f), splat(1.3981999507e-3f));
    y = fmadd(y, r, splat(8.3334519073e-3f));
    y = fmadd(y, r, splat(4.1665795894e-2f));
    y = fmadd(y, r, splat(1.6666665459e-1f));
    y = fmadd(y, r, splat(5.0000001201e-1f));
    y = fmadd(y, r * r, r) + 1.0f;
    vi e = (__builtin_convertvector(n, vi) + 127) << 23;
    y = y * (vf)e;
    y = x < -80.0f ? zero : y;
    y = x > 88.72f ? inf : y;
    return y;
}

inline vf vtanh(vf x) {  // the training kernel's Cephes tanhf
    vf ax = x < 0.0f ? -x : x;
    vf z = x * x;
    vf p = z * -5.70498872745e-3f + 2.06390887954e-2f;
    p = p * z - 5.37397155531e-2f;
    p = p * z + 1.33314422036e-1f;
    p = p * z - 3.33332819422e-1f;
    vf small = p * z * x + x;
    vf big = 1.0f - 2.0f / (vexp(ax + ax) + 1.0f);
    big = x < 0.0f ? -big : big;
    return ax < 0.625f ? small : big;
}

// sin x or cos x (Cephes sinf/cosf: reduction by multiples of π/4 in three parts, then the sine or
// cosine polynomial on |r| ≤ π/4; ~1 ulp for |x| ≤ 8192). Lanes beyond 8192, inf or NaN take the
// C library's value.
inline vf vsincos(vf x, bool cosine) {
    vf ax = x < 0.0f ? -x : x;
    vf xr = ax > 8192.0f ? splat(0.0f) : ax;
    vi j = __builtin_convertvector(xr * 1.27323954473516f, vi);  // truncation: |x|·4/π ≥ 0
    j = (j + 1) & ~1;
    vf y = __builtin_convertvector(j, vf);
    vf r = ((xr - y * 0.78515625f) - y * 2.4187564849853515625e-4f) - y * 3.77489497744594108e-8f;
    j = j & 7;
    vi flip = j > 3;  // π further: the sign flips
    j = j > 3 ? j - 4 : j;
    vi use_cos = (j == 1) | (j == 2);  // the other polynomial
    vf z = r * r;
    vf pc = ((z * 2.443315711809948e-5f - 1.388731625493765e-3f) * z + 4.166664568298827e-2f) * z * z - z * 0.5f + 1.0f;
    vf ps = ((z * -1.9515295891e-4f + 8.3321608736e-3f) * z - 1.6666654611e-1f) * z * r + r;
    vf v;
    if (!cosine) {
        v = use_cos ? pc : ps;
        vi neg = flip ^ (x < 0.0f);
        v = neg ? -v : v;
    } else {
        v = use_cos ? ps : pc;
        vi neg = flip ^ (j > 1);
        v = neg ? -v : v;
    }
    vi big = !(ax <= 8192.0f);  // beyond the reduction's range, inf or NaN
    for (int l = 0; l < NL; ++l)
        if (big[l]) v[l] = cosine ? std::cos(x[l]) : std::sin(x[l]);
    return v;
}

inline void activate_row(int kind, vf* z) {  // in place, one tile row (NU vectors)
    for (int v = 0; v < NU; ++v) {
        vf x = z[v];
        switch (kind) {
            case ACT_GAUSSIAN: z[v] = vexp(-(x * x)) * 2.0f - 1.0f; break;             // 2·exp(−z²) − 1
            case ACT_SIGMOID: z[v] = (1.0f / (vexp(-x) + 1.0f)) * 2.0f - 1.0f; break;  // 2σ(z) − 1
            case ACT_TANH: z[v] = vtanh(x); break;
            case ACT_SIN: z[v] = vsincos(x, false); break;
            case ACT_COS: z[v] = vsincos(x, true); break;
            case ACT_RELU: z[v] = x < 0.0f ? splat(0.0f) : x; break;  // NaN passes, as torch.relu
            default: break;                                           // identity, cache
        }
    }
}

// Register blocking: JB rows × VB vectors of a row at a time. AVX-512: 24 accumulators, 4 inputs
// and a broadcast within its 32 registers; AVX2 and SSE: 12, 2 and 1 within 16.
constexpr int JB = 6;
constexpr int VB = NL == 16 ? 4 : 2;
static_assert(NU % VB == 0, "a tile row is a whole number of register blocks");

// out[j] = init[j] + Σ_s in[s] · w[s·ld + j0 + j] for JB rows from j0 (s ascending), vectors
// u0 … u0+VB−1 of the rows; init may be null.
template <int JB>
inline void dense_rows(const vf* in, int n_src, const float* w, int ld, int j0, int u0, const vf* const* init,
                       vf* out) {
    vf acc[JB][VB];
#pragma GCC unroll 8
    for (int b = 0; b < JB; ++b)
#pragma GCC unroll 4
        for (int v = 0; v < VB; ++v) acc[b][v] = init ? init[j0 + b][u0 + v] : splat(0.0f);
    for (int s = 0; s < n_src; ++s) {
        const vf* x = in + s * NU + u0;
        vf xv[VB];
#pragma GCC unroll 4
        for (int v = 0; v < VB; ++v) xv[v] = x[v];
        const float* wr = w + s * ld + j0;
#pragma GCC unroll 8
        for (int b = 0; b < JB; ++b) {
            vf c = splat(wr[b]);
#pragma GCC unroll 4
            for (int v = 0; v < VB; ++v) acc[b][v] = fmadd(xv[v], c, acc[b][v]);
        }
    }
#pragma GCC unroll 8
    for (int b = 0; b < JB; ++b)
#pragma GCC unroll 4
        for (int v = 0; v < VB; ++v) out[(j0 + b) * NU + u0 + v] = acc[b][v];
}

// (an element of init is read before the same element of out is written: init may point into out)
inline void dense_block(const vf* in, int n_src, const float* w, int n_dst, const vf* const* init, vf* out) {
    for (int u0 = 0; u0 < NU; u0 += VB) {
        int j = 0;
        for (; j + JB <= n_dst; j += JB) dense_rows<JB>(in, n_src, w, n_dst, j, u0, init, out);
        switch (n_dst - j) {
            case 5: dense_rows<5>(in, n_src, w, n_dst, j, u0, init, out); break;
            case 4: dense_rows<4>(in, n_src, w, n_dst, j, u0, init, out); break;
            case 3: dense_rows<3>(in, n_src, w, n_dst, j, u0, init, out); break;
            case 2: dense_rows<2>(in, n_src, w, n_dst, j, u0, init, out); break;
            case 1: dense_rows<1>(in, n_src, w, n_dst, j, u0, init, out); break;
            default: break;
        }
    }
}

// out[j] = init[j] + Σ_k in[idx[k]] · val[k] over k = off[j] … off[j+1]−1 (ascending source units).
inline void sparse_rows(const vf* in, const int* off, const int* idx, const float* val, int n_dst,
                        const vf* const* init, vf* out) {
    for (int j = 0; j < n_dst; ++j) {
        vf acc[NU];
        for (int v = 0; v < NU; ++v) acc[v] = init ? init[j][v] : splat(0.0f);
        for (int k = off[j]; k < off[j + 1]; ++k) {
            const vf* x = in + idx[k] * NU;
            const vf c = splat(val[k]);
            for (int v = 0; v < NU; ++v) acc[v] = fmadd(x[v], c, acc[v]);
        }
        for (int v = 0; v < NU; ++v) out[j * NU + v] = acc[v];
    }
}

struct Step {  // kernel l of a program: cone units src (of layer l) → dst (of layer l+1)
    int l;
    bool full;                  // src is the whole layer: carry h (z' = W·h), else Δh (z' = Z + W·Δh)
    std::vector<int> src, dst;  // compacted unit indices, ascending
    bool dense;
    std::vector<float> w;  // dense: (|src|, |dst|) input-major
    std::vector<int> off, idx;
    std::vector<float> val;  // sparse: per dst slot, (source slot, weight)
};

struct Program {         // the cone of one target unit c of kernel i's output
    std::vector<Step> steps;
    bool reaches_out;    // false: the cone dies before the output (the image does not change)
    int64_t madds;       // multiply-adds per pixel: the perturbed unit's and every step's
};

struct Net {
    int Pp, L;
    const int32_t* widths;
    const float* const* wt;
    const int32_t* const* acts;
    const float* const* H;
    const float* const* Z;
    int n(int layer) const { return widths[layer]; }
    float w(int l, int s, int j) const { return wt[l][(size_t)j * n(l) + s]; }  // kernel l, input s → output j
};

Program plan(const Net& net, int i, int c) {
    Program p;
    p.reaches_out = true;
    p.madds = 1;
    std::vector<int> src{c};
    for (int l = i + 1; l <= net.L; ++l) {
        Step st;
        st.l = l;
        st.src = src;
        st.full = (int)src.size() == net.n(l);
        std::vector<int> cnt;  // non-zero weights into each dst
        for (int j = 0; j < net.n(l + 1); ++j) {
            int k = 0;
            for (int s : src) k += net.w(l, s, j) != 0.0f;
            if (k) {
                st.dst.push_back(j);
                cnt.push_back(k);
            }
        }
        if (st.dst.empty()) {
            p.reaches_out = false;
            return p;
        }
        size_t nnz = 0;
        for (int k : cnt) nnz += k;
        st.dense = 2 * nnz >= src.size() * st.dst.size();
        if (st.dense) {
            st.w.resize(src.size() * st.dst.size());
            for (size_t a = 0; a < src.size(); ++a)
                for (size_t b = 0; b < st.dst.size(); ++b) st.w[a * st.dst.size() + b] = net.w(l, src[a], st.dst[b]);
        } else {
            st.off.push_back(0);
            for (int j : st.dst) {
                for (size_t a = 0; a < src.size(); ++a) {
                    float v = net.w(l, src[a], j);
                    if (v != 0.0f) {
                        st.idx.push_back((int)a);
                        st.val.push_back(v);
                    }
                }
                st.off.push_back((int)st.idx.size());
            }
        }
        p.madds += st.dense ? (int64_t)(src.size() * st.dst.size()) : (int64_t)nnz;
        src = st.dst;
        p.steps.push_back(std::move(st));
    }
    return p;
}

// The head (volratio.nets.head_to_rgb, as the training kernel's head_tile computes it): one tile's
// outputs o (n_out rows) → RGB in [0, 1], written pixel-major to img (P, 3) for the tile's pixels < P.
enum Head { HEAD_HSV = 0, HEAD_GREY = 1, HEAD_RGB = 2 };

inline vf clamp01(vf x) {  // NaN passes, as torch.clamp
    x = x < 0.0f ? splat(0.0f) : x;
    return x > 1.0f ? splat(1.0f) : x;
}
inline vf vabs(vf x) { return x < 0.0f ? -x : x; }

// torch.remainder(a, 1) = fmod(a, 1), plus 1 when negative; fmod(a, 1) = a − trunc(a) exactly.
inline vf remainder1(vf a) {
    vf tr = __builtin_convertvector(__builtin_convertvector(a, vi), vf);
    vf m = vabs(a) < 8388608.0f ? a - tr : a - a;
    return ((m != 0.0f) & (m < 0.0f)) ? m + 1.0f : m;
}

inline void head_tile(int head, const vf* o, int n_valid, float* img) {
    for (int v = 0; v < NU && v * NL < n_valid; ++v) {
        vf c[3];
        if (head == HEAD_RGB) {
            for (int n = 0; n < 3; ++n) c[n] = 1.0f / (vexp(-o[n * NU + v]) + 1.0f);
        } else if (head == HEAD_GREY) {
            c[0] = c[1] = c[2] = clamp01(vabs(o[v]));
        } else {
            vf h = remainder1(o[v] + 1.0f), s = clamp01(o[NU + v]), val = clamp01(vabs(o[2 * NU + v]));
            const float ns[3] = {5.0f, 3.0f, 1.0f};  // r, g, b
            for (int n = 0; n < 3; ++n) {
                vf x = h * 6.0f + ns[n];  // in [1, 12): fmod(x, 6) is x or x − 6, exactly
                vf k = x < 6.0f ? x : x - 6.0f;
                vf k2 = 4.0f - k;
                vf u = k < k2 ? k : k2;
                c[n] = val - val * s * clamp01(u);
            }
        }
        const int m = n_valid - v * NL < NL ? n_valid - v * NL : NL;
        float* px = img + (size_t)v * NL * 3;
        for (int l = 0; l < m; ++l) {
            px[3 * l] = c[0][l];
            px[3 * l + 1] = c[1][l];
            px[3 * l + 2] = c[2][l];
        }
    }
}

// Perturbation (r, c, δ) of kernel i through program p: its image (P, 3). O: n_out tile rows.
void run_one(const Net& net, const Program& p, int i, int r, int c, float delta, int P, int head, float* img,
             vf* A, vf* B, vf* O, std::vector<const vf*>& init) {
    const int L = net.L, Pp = net.Pp, n_out = net.n(L + 1);
    for (int t = 0; t < Pp / T; ++t) {
        const size_t px = (size_t)t * T;
        for (int j = 0; j < n_out; ++j)
            for (int v = 0; v < NU; ++v) O[j * NU + v] = load(net.Z[L] + (size_t)j * Pp + px + v * NL);
        // unit c of layer i+1: z + δ·h_i[r]
        const float* z = net.Z[i] + (size_t)c * Pp + px;
        const float* h = net.H[i] + (size_t)r * Pp + px;
        for (int v = 0; v < NU; ++v) A[v] = fmadd(splat(delta), load(h + v * NL), load(z + v * NL));
        if (i == L) {
            for (int v = 0; v < NU; ++v) O[c * NU + v] = A[v];
        } else if (p.reaches_out) {
            activate_row(net.acts[i + 1][c], A);
            vf* cur = A;
            vf* nxt = B;
            for (const Step& st : p.steps) {
                const int l = st.l, nd = (int)st.dst.size();
                const bool top = l == L;
                vf* dst = top ? O : nxt;  // the output rows: straight into O when every one changes
                const bool direct = top && nd == n_out;
                if (top && !direct) dst = nxt;
                const vf* const* ini = nullptr;
                if (!st.full) {  // cur holds h' of src: make it Δh, and start from the base pre-activations
                    for (size_t a = 0; a < st.src.size(); ++a) {
                        const float* hb = net.H[l] + (size_t)st.src[a] * Pp + px;
                        for (int v = 0; v < NU; ++v) cur[a * NU + v] -= load(hb + v * NL);
                    }
                    for (int b = 0; b < nd; ++b) {
                        const float* zr = net.Z[l] + (size_t)st.dst[b] * Pp + px;
                        for (int v = 0; v < NU; ++v) dst[b * NU + v] = load(zr + v * NL);
                        init[b] = dst + b * NU;
                    }
                    ini = init.data();
                }
                if (st.dense)
                    dense_block(cur, (int)st.src.size(), st.w.data(), nd, ini, dst);  // reads init[b] before writing row b
                else
                    sparse_rows(cur, st.off.data(), st.idx.data(), st.val.data(), nd, ini, dst);
                if (top) {
                    if (!direct)
                        for (int b = 0; b < nd; ++b)
                            for (int v = 0; v < NU; ++v) O[st.dst[b] * NU + v] = nxt[b * NU + v];
                    break;
                }
                for (int b = 0; b < nd; ++b) activate_row(net.acts[l + 1][st.dst[b]], nxt + b * NU);
                vf* tmp = cur;
                cur = nxt;
                nxt = tmp;
            }
        }
        const int n_valid = P - (int)px < T ? P - (int)px : T;
        head_tile(head, O, n_valid, img + px * 3);
    }
}

}  // namespace

extern "C" {

int vr_perturb_abi_version() { return 1; }

// Images img (N, P, 3) of the N perturbations (rows[n], cols[n], deltas[n]) of kernel i under the
// head `head` (HEAD_*); *madds = the multiply-adds the call executes (pixels × weights, padding included).
int vr_perturb(int P, int Pp, int L, const int32_t* widths, const float* const* wt, const int32_t* const* acts,
               const float* const* H, const float* const* Z, int i, int N, const int32_t* rows, const int32_t* cols,
               const float* deltas, int head, float* img, int n_threads, int64_t* madds) {
    if (Pp % T != 0 || P > Pp || Pp - P >= T || i < 0 || i > L) return 1;
    if (head == HEAD_GREY ? widths[L + 1] < 1 : widths[L + 1] < 3) return 2;
    const Net net{Pp, L, widths, wt, acts, H, Z};
    int wmax = 1;
    for (int l = 0; l <= L + 1; ++l) wmax = widths[l] > wmax ? widths[l] : wmax;
    std::vector<int> slot(widths[i + 1], -1);  // target unit -> its program
    std::vector<Program> progs;
    for (int n = 0; n < N; ++n)
        if (slot[cols[n]] < 0) {
            slot[cols[n]] = (int)progs.size();
            progs.push_back(i < L ? plan(net, i, cols[n]) : Program{{}, true, 1});
        }
    *madds = 0;
    for (int n = 0; n < N; ++n) *madds += progs[slot[cols[n]]].madds * Pp;
    const int nt = n_threads < 1 ? 1 : (n_threads < N ? n_threads : (N > 0 ? N : 1));
    auto work = [&](int t0) {
        std::vector<vf> A((size_t)wmax * NU), B((size_t)wmax * NU), O((size_t)widths[L + 1] * NU);
        std::vector<const vf*> init(wmax);
        for (int n = t0; n < N; n += nt)
            run_one(net, progs[slot[cols[n]]], i, rows[n], cols[n], deltas[n], P, head, img + (size_t)n * P * 3,
                    A.data(), B.data(), O.data(), init);
    };
    if (nt == 1) {
        work(0);
    } else {
        std::vector<std::thread> pool;
        for (int t = 0; t < nt; ++t) pool.emplace_back(work, t);
        for (auto& th : pool) th.join();
    }
    return 0;
}

}  // extern "C"
