// Fused forward / backward of a population of masked coordinate MLPs (volratio.train.fused).
//
// Plain C ABI (loaded with ctypes, no torch headers: it compiles in about a second). All tensors
// are float32, contiguous, row-major:
//
//   grid   (P, n_in)                  the pixel inputs, shared by the population
//   w[l]   (K, fan_in_l, fan_out_l)   effective kernels (weight * mask), l = 0 … L
//   acts   (W,)                       activation kind of each hidden unit (ACT_* below)
//   raw    (K, P, n_out)              output of vr_fused_forward (the outputs before the head)
//   target (P, 3) or (K, P, 3)        RGB target of vr_fused_step
//   losses (K,)                       per-network mean squared RGB error, output of vr_fused_step
//   g[l]   (K, fan_in_l, fan_out_l)   dLoss/dw[l], output of vr_fused_step (overwritten)
//
// The pixels are processed in tiles of T = 64. A tile's activations are stored unit-major,
// `[unit][pixel]`, as NU vectors of NL floats per unit (the machine's vectors: NL = 16 with AVX-512,
// 8 with AVX2, 4 otherwise; NU = 64 / NL); every layer of one tile (values and
// activation derivatives) stays in L1/L2, so there is one pass over the pixels per call instead of
// a few passes over (K, P, W) buffers per layer. vr_fused_step does a whole training step's work
// in that one pass: per tile the forward pass (storing each unit's activation derivative), the
// head (volratio.nets.head_to_rgb) and the squared error with its gradient, then back-propagation,
// adding the tile's share of every kernel's gradient.
//
// Determinism: every sum has an order fixed by this source — matmuls sum over the input units in
// ascending order; kernel gradients sum, per lane of VL = 16 lanes (pixel q of a tile in lane q mod
// 16, NA = 16 / NL machine vectors), over the pixels q, q + 16, q + 32, q + 48 of every tile in
// ascending order, and the 16 lanes in a fixed tree at the end; a loss sums its tiles (each in a fixed tree) in
// ascending order, in double. Threads split the population (each network's outputs and
// gradients are computed by one thread), so results do not depend on the thread count. It is
// compiled with -ffp-contract=off and without -ffast-math: no reassociation, and a fused
// multiply-add only where the source writes one (`fmadd`: the matmuls, kernel gradients and the
// exp polynomial), which is exactly defined — the AVX-512/AVX2 instruction and the C library's
// fmaf give the same bits. So the same bits come out whatever instruction set the compiler
// targets: the vector width only changes which pixels share an instruction, never an operation's
// operands or order (the baseline build is correct but slow, its fmaf being a library call).

#include <cmath>
#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>
#if defined(__AVX512F__) || defined(__FMA__)
#include <immintrin.h>
#endif

namespace {

constexpr int T = 64;   // pixels per tile
constexpr int VL = 16;  // lanes of the partial sums of kernel gradients and losses (fixed: the bits)
#if defined(__AVX512F__)
constexpr int NL = 16;  // floats per machine vector
#elif defined(__AVX2__) && defined(__FMA__)
constexpr int NL = 8;
#else
constexpr int NL = 4;
#endif
constexpr int NU = T / NL;   // machine vectors per tile row
constexpr int NA = VL / NL;  // machine vectors per 16-lane partial sum
static_assert(T == 4 * VL, "the summation trees below are written for 4 groups of 16 pixels per tile");

typedef float vf __attribute__((vector_size(4 * NL)));
typedef int32_t vi __attribute__((vector_size(4 * NL)));

enum Act { ACT_IDENTITY = 0, ACT_GAUSSIAN = 1, ACT_SIGMOID = 2, ACT_TANH = 3, ACT_SIN = 4, ACT_COS = 5, ACT_RELU = 6 };

// a · b + c rounded once (a fused multiply-add, exactly defined: the same bits with the AVX-512 or
// AVX2 instruction as with the C library's fmaf, which the baseline build uses — not inlined
// there, which would make the compiler spend half a minute on the unrolled lane loops)
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

inline vf splat(float x) { return x - vf{}; }  // a broadcast (x − 0 = x exactly; `vf{} + x` costs an add)

// e^x (Cephes expf: range reduction x = n·ln2 + r, |r| ≤ ln2/2, degree-6 polynomial; ~1 ulp).
// Exactly 0 below x = −80 (e^x < 2e-35: no subnormal arithmetic downstream), +inf above 88.72,
// NaN stays NaN.
inline vf vexp(vf x) {
    const vf zero = splat(0.0f), inf = splat(INFINITY);
    vf xc = x > 88.0f ? splat(88.0f) : x;  // keeps 2^n a normal float (n ≤ 127)
    xc = xc < -80.0f ? splat(-80.0f) : xc;
    vf n = (xc * 1.44269504088896341f + 12582912.0f) - 12582912.0f;  // round to nearest integer
    vf r = fmadd(n, splat(-0.693359375f), xc);
    r = fmadd(n, splat(2.12194440e-4f), r);
    vf y = fmadd(r, splat(1.9875691500e-4f), splat(1.3981999507e-3f));
    y = fmadd(y, r, splat(8.3334519073e-3f));
    y = fmadd(y, r, splat(4.1665795894e-2f));
    y = fmadd(y, r, splat(1.6666665459e-1f));
    y = fmadd(y, r, splat(5.0000001201e-1f));
    y = fmadd(y, r * r, r) + 1.0f;
    vi e = (__builtin_convertvector(n, vi) + 127) << 23;  // the bits of 2^n
    y = y * (vf)e;
    y = x < -80.0f ? zero : y;
    y = x > 88.72f ? inf : y;
    return y;
}

// tanh (Cephes tanhf: odd polynomial for |x| < 0.625, else 1 − 2/(e^{2|x|} + 1) with x's sign).
inline vf vtanh(vf x) {
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

// h = act(z) for one tile row (NU vectors), and with d != nullptr also d = dh/dz.
inline void activate_row(int kind, const vf* z, vf* h, vf* d) {
    for (int v = 0; v < NU; ++v) {
        vf x = z[v], y = x, g = x;
        switch (kind) {
            case ACT_GAUSSIAN: {  // 2·exp(−z²) − 1, dh/dz = −4·z·exp(−z²)
                vf e = vexp(-(x * x));
                y = e * 2.0f - 1.0f;
                g = x * e * -4.0f;
                break;
            }
            case ACT_SIGMOID: {  // 2σ(z) − 1, dh/dz = 2σ(1 − σ)
                vf s = 1.0f / (vexp(-x) + 1.0f);
                y = s * 2.0f - 1.0f;
                g = s * (1.0f - s) * 2.0f;
                break;
            }
            case ACT_TANH:
                y = vtanh(x);
                g = 1.0f - y * y;
                break;
            case ACT_RELU:  // NaN passes (as torch.relu); dh/dz = 1[z > 0]
                y = x < 0.0f ? splat(0.0f) : x;
                g = x > 0.0f ? splat(1.0f) : splat(0.0f);
                break;
            case ACT_SIN:
            case ACT_COS:  // scalar libm: these units are rare (Picbreeder mixes)
                for (int l = 0; l < NL; ++l) {
                    float s = std::sin(x[l]), c = std::cos(x[l]);
                    y[l] = kind == ACT_SIN ? s : c;
                    g[l] = kind == ACT_SIN ? c : -s;
                }
                break;
            default:  // identity, cache
                y = x;
                g = splat(1.0f);
        }
        h[v] = y;
        if (d) d[v] = g;
    }
}

// Register blocking of the matmuls: JB output rows × VB vectors of a row at a time. AVX-512: 24
// accumulators, 4 inputs and a broadcast within its 32 registers; AVX2 and SSE: 12, 2 and 1 within 16.
constexpr int JB = 6;
constexpr int VB = NL == 16 ? 4 : 2;
static_assert(NU % VB == 0, "a tile row is a whole number of register blocks");

// out[j] = Σ_i in[i] · w[i·ldw + j] for the JB output rows j0 … j0+JB−1 (i ascending) and the
// vectors u0 … u0+VB−1 of the rows.
template <int JB>
inline void matmul_block(const vf* in, int fan_in, const float* w, int ldw, int j0, int u0, vf* out) {
    vf acc[JB][VB];
#pragma GCC unroll 8
    for (int b = 0; b < JB; ++b)
#pragma GCC unroll 4
        for (int v = 0; v < VB; ++v) acc[b][v] = splat(0.0f);
    for (int i = 0; i < fan_in; ++i) {
        const vf* x = in + i * NU + u0;
        vf xv[VB];
#pragma GCC unroll 4
        for (int v = 0; v < VB; ++v) xv[v] = x[v];
        const float* wr = w + i * ldw + j0;
#pragma GCC unroll 8
        for (int b = 0; b < JB; ++b) {
            vf s = splat(wr[b]);
#pragma GCC unroll 4
            for (int v = 0; v < VB; ++v) acc[b][v] = fmadd(xv[v], s, acc[b][v]);
        }
    }
#pragma GCC unroll 8
    for (int b = 0; b < JB; ++b)
#pragma GCC unroll 4
        for (int v = 0; v < VB; ++v) out[(j0 + b) * NU + u0 + v] = acc[b][v];
}

// out rows (fan_out of them) = in rows (fan_in) · w, w row-major with leading dimension ldw.
inline void matmul_tile(const vf* in, int fan_in, const float* w, int ldw, int fan_out, vf* out) {
    for (int u0 = 0; u0 < NU; u0 += VB) {
        int j = 0;
        for (; j + JB <= fan_out; j += JB) matmul_block<JB>(in, fan_in, w, ldw, j, u0, out);
        switch (fan_out - j) {
            case 5: matmul_block<5>(in, fan_in, w, ldw, j, u0, out); break;
            case 4: matmul_block<4>(in, fan_in, w, ldw, j, u0, out); break;
            case 3: matmul_block<3>(in, fan_in, w, ldw, j, u0, out); break;
            case 2: matmul_block<2>(in, fan_in, w, ldw, j, u0, out); break;
            case 1: matmul_block<1>(in, fan_in, w, ldw, j, u0, out); break;
            default: break;
        }
    }
}

// G[i·fan_out + j] += Σ_v in[i][v] · dz[j][v]: per-lane partial sums of a kernel gradient, 16
// lanes (NA vectors) per entry; lane l adds the pixels l, l + 16, l + 32, l + 48, in this order.
inline void grad_tile(const vf* in, int fan_in, const vf* dz, int fan_out, vf* G) {
    for (int i = 0; i < fan_in; ++i) {
        vf a[NU];  // in registers (through a pointer they would be reloaded after every store to G)
#pragma GCC unroll 16
        for (int u = 0; u < NU; ++u) a[u] = in[i * NU + u];
        vf* g = G + (size_t)i * fan_out * NA;
        for (int j = 0; j < fan_out; ++j) {
            const vf* d = dz + j * NU;
#pragma GCC unroll 4
            for (int c = 0; c < NA; ++c) {
                vf* gc = g + j * NA + c;
                *gc = fmadd(a[3 * NA + c], d[3 * NA + c],
                            fmadd(a[2 * NA + c], d[2 * NA + c], fmadd(a[NA + c], d[NA + c], fmadd(a[c], d[c], *gc))));
            }
        }
    }
}

inline float lane_sum(const vf* x) {  // a fixed tree over the 16 lanes of NA vectors
    const float* f = (const float*)x;
    float s[8];
    for (int l = 0; l < 8; ++l) s[l] = f[2 * l] + f[2 * l + 1];
    return (((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7])));
}

// ---------------------------------------------------------------------------------------------
// The head and the loss (volratio.nets.head_to_rgb; gradients as torch's autograd defines them:
// clamp passes the gradient on its closed interval, |x|' = sign(x), remainder's is 1, minimum
// splits a tie in half).

enum Head { HEAD_HSV = 0, HEAD_GREY = 1, HEAD_RGB = 2 };

inline vf select(vi c, vf a, vf b) { return c ? a : b; }
inline vf clamp01(vf x) {  // NaN passes, as torch.clamp
    x = x < 0.0f ? splat(0.0f) : x;
    return x > 1.0f ? splat(1.0f) : x;
}
inline vf inside01(vf x) { return select((x >= 0.0f) & (x <= 1.0f), splat(1.0f), splat(0.0f)); }
inline vf vabs(vf x) { return x < 0.0f ? -x : x; }
inline vf vsign(vf x) { return select(x > 0.0f, splat(1.0f), select(x < 0.0f, splat(-1.0f), splat(0.0f))); }

// torch.remainder(a, 1) = fmod(a, 1), plus 1 when negative; fmod(a, 1) = a − trunc(a) exactly.
// |a| ≥ 2^23 is an integer (0); ±inf and NaN give NaN.
inline vf remainder1(vf a) {
    vf tr = __builtin_convertvector(__builtin_convertvector(a, vi), vf);
    vf m = vabs(a) < 8388608.0f ? a - tr : a - a;
    return select((m != 0.0f) & (m < 0.0f), m + 1.0f, m);
}

// One tile's head and squared error: o (n_out rows) → dz = dLoss/do (n_out rows); returns the
// tile's sum of squared errors. t: (3 rows) target; valid: 1 for pixels < P, 0 for padding;
// scale = 2 / (3 P), the derivative of the mean's square.
inline float head_tile(int head, const vf* o, const vf* t, const vf* valid, float scale, vf* dz) {
    vf err_sum[NA];  // 16 lanes: lane l sums the pixels l, l + 16, l + 32, l + 48 in this order
    for (int c = 0; c < NA; ++c) err_sum[c] = splat(0.0f);
    for (int v = 0; v < NU; ++v) {
        const vf ok = valid[v];
        vf c[3] = {}, g[3] = {};
        if (head == HEAD_RGB) {
            for (int n = 0; n < 3; ++n) c[n] = 1.0f / (vexp(-o[n * NU + v]) + 1.0f);
        } else if (head == HEAD_GREY) {
            vf x = o[v];
            vf val = clamp01(vabs(x));
            c[0] = c[1] = c[2] = val;
        }
        vf h = splat(0.0f), s = h, val = h, m[3] = {h, h, h}, dm[3] = {h, h, h};
        if (head == HEAD_HSV) {
            h = remainder1(o[v] + 1.0f);
            s = clamp01(o[NU + v]);
            val = clamp01(vabs(o[2 * NU + v]));
            const float ns[3] = {5.0f, 3.0f, 1.0f};  // r, g, b
            for (int n = 0; n < 3; ++n) {
                vf x = h * 6.0f + ns[n];  // in [1, 12): fmod(x, 6) is x or x − 6, exactly
                vf k = x < 6.0f ? x : x - 6.0f;
                vf k2 = 4.0f - k;
                vf u = k < k2 ? k : k2;  // NaN passes (as torch.minimum)
                m[n] = clamp01(u);
                // d clamp(min(k, 4 − k))/dk: ±1 inside [0, 1], 0 on a tie (torch splits it) or outside
                dm[n] = inside01(u) * select(k < k2, splat(1.0f), select(k > k2, splat(-1.0f), splat(0.0f)));
                c[n] = val - val * s * m[n];
            }
        }
        vf e2 = splat(0.0f);
        for (int n = 0; n < 3; ++n) {
            vf e = select(ok > 0.0f, c[n] - t[n * NU + v], splat(0.0f));
            e2 += e * e;
            g[n] = e * scale;  // dLoss/dc
        }
        err_sum[v % NA] += e2;
        if (head == HEAD_RGB) {
            for (int n = 0; n < 3; ++n) dz[n * NU + v] = g[n] * (c[n] * (1.0f - c[n]));
        } else if (head == HEAD_GREY) {
            vf x = o[v];
            dz[v] = ((g[0] + g[1]) + g[2]) * (vsign(x) * inside01(vabs(x)));
        } else {
            vf dv = splat(0.0f), ds = dv, dh = dv;
            for (int n = 0; n < 3; ++n) {
                dv += g[n] * (1.0f - s * m[n]);
                ds += g[n] * (val * m[n]);
                dh += g[n] * (val * s * dm[n]);
            }
            dz[v] = dh * -6.0f;
            dz[NU + v] = -ds * inside01(o[NU + v]);
            vf x = o[2 * NU + v];
            dz[2 * NU + v] = dv * (vsign(x) * inside01(vabs(x)));
        }
    }
    return lane_sum(err_sum);
}

struct Net {
    int P, n_in, K, L, W, n_out;
    const float* const* w;
    const int32_t* acts;
    int fan_in(int l) const { return l == 0 ? n_in : W; }
    int fan_out(int l) const { return l == L ? n_out : W; }
    int tiles() const { return (P + T - 1) / T; }
};

// The grid as tiles: (tiles, n_in, NU) vectors, zero-padded past P.
std::vector<vf> grid_tiles(const Net& net, const float* grid) {
    std::vector<vf> x((size_t)net.tiles() * net.n_in * NU, splat(0.0f));
    for (int p = 0; p < net.P; ++p) {
        int t = p / T, q = p % T;
        for (int i = 0; i < net.n_in; ++i) x[((size_t)t * net.n_in + i) * NU + q / NL][q % NL] = grid[p * net.n_in + i];
    }
    return x;
}

// One tile's forward pass through the hidden layers of network k: H[l] (and with D, the
// derivatives D[l]) for l = 0 … L−1, each W rows; returns the last hidden layer's rows.
const vf* forward_tile(const Net& net, int k, const vf* x0, vf* H, vf* D) {
    const int W = net.W, stride = W * NU;
    const vf* in = x0;
    for (int l = 0; l < net.L; ++l) {
        const int fi = net.fan_in(l);
        const float* w = net.w[l] + (size_t)k * fi * W;
        vf* h = H + (size_t)l * stride;
        matmul_tile(in, fi, w, W, W, h);  // z, activated in place
        for (int j = 0; j < W; ++j) activate_row(net.acts[j], h + j * NU, h + j * NU, D ? D + (size_t)l * stride + j * NU : nullptr);
        in = h;
    }
    return in;
}

template <class F>
void for_each_network(int K, int n_threads, F f) {
    if (n_threads <= 1 || K <= 1) {
        for (int k = 0; k < K; ++k) f(k);
        return;
    }
    int n = n_threads < K ? n_threads : K;
    std::vector<std::thread> pool;
    for (int t = 0; t < n; ++t)
        pool.emplace_back([=] {
            for (int k = t; k < K; k += n) f(k);
        });
    for (auto& th : pool) th.join();
}

}  // namespace

extern "C" {

int vr_fused_abi_version() { return 2; }

// raw (K, P, n_out) = the network outputs before the head.
int vr_fused_forward(const float* grid, int P, int n_in, int K, int L, int W, int n_out, const float* const* w,
                     const int32_t* acts, float* raw, int n_threads) {
    const Net net{P, n_in, K, L, W, n_out, w, acts};
    const std::vector<vf> x = grid_tiles(net, grid);
    for_each_network(K, n_threads, [&](int k) {
        std::vector<vf> H((size_t)L * W * NU), out((size_t)n_out * NU);
        const float* wl = w[L] + (size_t)k * W * n_out;
        for (int t = 0; t < net.tiles(); ++t) {
            const vf* h = forward_tile(net, k, x.data() + (size_t)t * n_in * NU, H.data(), nullptr);
            matmul_tile(h, W, wl, n_out, n_out, out.data());
            for (int q = 0; q < T && t * T + q < P; ++q)
                for (int j = 0; j < n_out; ++j) raw[((size_t)k * P + t * T + q) * n_out + j] = out[j * NU + q / NL][q % NL];
        }
    });
    return 0;
}

// One training step's losses (K,) and kernel gradients g[l] (K, fan_in, fan_out) = dΣloss/dw[l].
// target: (P, 3), or (K, P, 3) with target_per_network = 1.
int vr_fused_step(const float* grid, int P, int n_in, int K, int L, int W, int n_out, const float* const* w,
                  const int32_t* acts, int head, const float* target, int target_per_network, float* losses,
                  float* const* g, int n_threads) {
    const Net net{P, n_in, K, L, W, n_out, w, acts};
    const std::vector<vf> x = grid_tiles(net, grid);
    const float scale = 2.0f / (3.0f * (float)P);
    for_each_network(K, n_threads, [&](int k) {
        const int stride = W * NU;
        const int rows = W > n_out ? W : n_out;  // dz holds a hidden layer's or the output's rows
        std::vector<vf> H((size_t)L * stride), D((size_t)L * stride), dz((size_t)rows * NU), dh((size_t)stride);
        std::vector<vf> o((size_t)n_out * NU), tt(3 * NU), valid(NU);
        std::vector<size_t> off(L + 2, 0);  // offsets of each kernel's lane sums in G
        for (int l = 0; l <= L; ++l) off[l + 1] = off[l] + (size_t)net.fan_in(l) * net.fan_out(l);
        std::vector<vf> G(off[L + 1] * NA, splat(0.0f));  // per entry 16 lanes of partial sums
        std::vector<std::vector<float>> wt(L + 1);  // wᵀ (fan_out, fan_in) of each kernel but the first
        for (int l = 1; l <= L; ++l) {
            const int fi = net.fan_in(l), fo = net.fan_out(l);
            const float* wl = w[l] + (size_t)k * fi * fo;
            wt[l].resize((size_t)fi * fo);
            for (int i = 0; i < fi; ++i)
                for (int j = 0; j < fo; ++j) wt[l][(size_t)j * fi + i] = wl[i * fo + j];
        }
        const float* tk = target + (target_per_network ? (size_t)k * P * 3 : 0);
        double sq = 0.0;
        for (int t = 0; t < net.tiles(); ++t) {
            const vf* x0 = x.data() + (size_t)t * n_in * NU;
            const vf* hL = forward_tile(net, k, x0, H.data(), D.data());
            matmul_tile(hL, W, w[L] + (size_t)k * W * n_out, n_out, n_out, o.data());
            for (int q = 0; q < T; ++q) {  // this tile's target and valid pixels
                const bool in = t * T + q < P;
                valid[q / NL][q % NL] = in ? 1.0f : 0.0f;
                for (int n = 0; n < 3; ++n) tt[n * NU + q / NL][q % NL] = in ? tk[(size_t)(t * T + q) * 3 + n] : 0.0f;
            }
            sq += head_tile(head, o.data(), tt.data(), valid.data(), scale, dz.data());
            for (int l = L; l >= 0; --l) {
                const int fi = net.fan_in(l), fo = net.fan_out(l);
                const vf* in = l > 0 ? H.data() + (size_t)(l - 1) * stride : x0;
                grad_tile(in, fi, dz.data(), fo, G.data() + off[l] * NA);  // dLoss/dw[l] += inᵀ · dz
                if (l == 0) break;
                matmul_tile(dz.data(), fo, wt[l].data(), fi, fi, dh.data());  // dLoss/dh = dz · wᵀ
                const vf* d = D.data() + (size_t)(l - 1) * stride;
                for (int r = 0; r < stride; ++r) dz[r] = dh[r] * d[r];  // dLoss/dz = dLoss/dh · dh/dz
            }
        }
        losses[k] = (float)(sq / (3.0 * (double)P));
        for (int l = 0; l <= L; ++l) {
            const size_t n = off[l + 1] - off[l];
            float* gl = g[l] + (size_t)k * n;
            for (size_t e = 0; e < n; ++e) gl[e] = lane_sum(G.data() + (off[l] + e) * NA);
        }
    });
    return 0;
}

}  // extern "C"
