// nitro's selector evaluators: the arithmetic of every exported model kind
// (nitro.model.SelectorModel) as plain C++17 functions on plain arrays, with no dependency.
//
// One text serves two users, so that they cannot diverge: nitro/_selector.cpp (the compiled
// dispatch path, through pybind11) includes it, and `nitro export-cpp` copies it verbatim into
// the self-contained headers it writes. Each function repeats the arithmetic of the model's
// NumPy path (nitro/model.py); a model is a struct of sizes and pointers to its arrays, and the
// caller gives the scratch memory (`*_work_size` doubles), so no call allocates.
//
// The RBF kinds (svc, kernel) are laid out for vectorisation: centres feature-major (one row
// of all centres per feature). The squared distances are summed 16 centres at a time in
// registers, features in order; one exp loop then runs over the buffer, 16 values at a time,
// and the read-out is dot products with eight independent partial sums. The exp is this file's
// own (exp_nonpositive_one), as is the log1p of the standardised row (log1p_nonnegative_one):
// plain arithmetic the compiler vectorises without -ffast-math, within 1 ulp of std::exp and
// std::log1p. Define NITRO_EVAL_CLONES before including this file to put a
// function-multiversioning attribute on those evaluators and loops (nitro/_selector.cpp builds
// an AVX2 clone and a baseline one; the arithmetic and its order are the same in both); on
// x86-64 GCC the distance loop then gets an AVX2 version and a baseline one of its own.
//
// Layout version 2 (in the guard, the namespace and this file's own macros): bump all three when
// a model struct or a function's meaning changes, so that headers that different nitro versions
// exported (each a copy of this file) compile side by side in one translation unit, each with
// its own evaluators. Version 1 headers (nitro_eval, NITRO_SELECTOR_EVAL_HPP_V1) had one guard
// for two layouts of SvcModel.
#ifndef NITRO_SELECTOR_EVAL_HPP_V2
#define NITRO_SELECTOR_EVAL_HPP_V2

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>

#if defined(NITRO_EVAL_CLONES) && defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define NITRO_EVAL_V2_MULTIVERSION 1
#else
#define NITRO_EVAL_V2_MULTIVERSION 0
#endif
#ifdef NITRO_EVAL_CLONES
#define NITRO_EVAL_V2_CLONES NITRO_EVAL_CLONES
#else
#define NITRO_EVAL_V2_CLONES
#endif
// GCC if-converts (and so vectorises) the clamp of exp_nonpositive_one and the selects of
// log1p_nonnegative_one only without trapping math; this changes no result (it concerns
// floating-point exception flags only).
#if defined(__GNUC__) && !defined(__clang__)
#define NITRO_EVAL_V2_NO_TRAP __attribute__((optimize("no-trapping-math")))
#else
#define NITRO_EVAL_V2_NO_TRAP
#endif

namespace nitro_eval_v2 {

// exp(x) for x <= 0 (the RBF kernels' −γ·d²; below −746 the result is 0, as std::exp's), within
// 1 ulp of std::exp. Range reduction x = n·ln2 + r (|r| <= ln2/2, Cody-Waite with fdlibm's split
// of ln2), the degree-13 Taylor polynomial of exp(r) (truncation error < 2^-57) with a short
// dependency chain (so that the values of a block overlap), and the scaling by 2^n in two
// halves so that subnormal results are rounded once, as std::exp's are.
NITRO_EVAL_V2_NO_TRAP inline double exp_nonpositive_one(double x) {
  const double log2e = 1.4426950408889634;
  const double ln2_hi = 6.93147180369123816490e-01;
  const double ln2_lo = 1.90821492927058770002e-10;
  const double shifter = 6755399441055744.0;  // 1.5 * 2^52: adding it rounds to an integer
  x = x < -746.0 ? -746.0 : x;
  const double t = x * log2e + shifter;
  const double k = t - shifter;                // round(x / ln2), exactly
  const double r = (x - k * ln2_hi) - k * ln2_lo;
  // exp(r) = 1 + (r + r²·S(r)), S(r) = 1/2! + r/3! + … + r^11/13! by Estrin's scheme: S's
  // rounding errors are scaled down by r² <= 0.121, the two last additions round once each.
  const double r2 = r * r, r4 = r2 * r2, r8 = r4 * r4;
  const double s23 = 0.5 + r * 0.16666666666666666;
  const double s45 = 0.041666666666666664 + r * 0.008333333333333333;
  const double s67 = 0.001388888888888889 + r * 0.0001984126984126984;
  const double s89 = 2.48015873015873e-05 + r * 2.7557319223985893e-06;
  const double s1011 = 2.755731922398589e-07 + r * 2.505210838544172e-08;
  const double s1213 = 2.08767569878681e-09 + r * 1.6059043836821613e-10;
  const double q0 = s23 + r2 * s45, q1 = s67 + r2 * s89, q2 = s1011 + r2 * s1213;
  const double p = 1.0 + (r + r2 * ((q0 + r4 * q1) + r8 * q2));
  std::int64_t t_bits, shifter_bits;
  std::memcpy(&t_bits, &t, sizeof t_bits);
  std::memcpy(&shifter_bits, &shifter, sizeof shifter_bits);
  const std::uint64_t m = static_cast<std::uint64_t>(shifter_bits - t_bits);  // -n, 0..1076
  const std::uint64_t m1 = m >> 1, m2 = m - m1;
  const std::uint64_t b1 = (1023 - m1) << 52, b2 = (1023 - m2) << 52;
  double s1, s2;
  std::memcpy(&s1, &b1, sizeof s1);
  std::memcpy(&s2, &b2, sizeof s2);
  return p * s1 * s2;
}

// Centres handled together by the RBF loops: their running sums stay in registers, and as
// many independent exp chains overlap (four AVX2 vectors of doubles).
constexpr std::size_t kRbfBlock = 16;

// v[i] = exp(scale·v[i]) for every i, scale·v[i] <= 0 (see exp_nonpositive_one), a block of
// kRbfBlock values at a time: plain arithmetic the compiler vectorises without -ffast-math.
NITRO_EVAL_V2_CLONES NITRO_EVAL_V2_NO_TRAP inline void exp_scaled(double scale, double* v, std::size_t n) {
  const std::size_t blocks = n - n % kRbfBlock;  // the tail's start: see dot
  for (std::size_t i = 0; i < blocks; i += kRbfBlock)
    for (std::size_t l = 0; l < kRbfBlock; ++l) v[i + l] = exp_nonpositive_one(scale * v[i + l]);
  for (std::size_t i = blocks; i < n; ++i) v[i] = exp_nonpositive_one(scale * v[i]);
}

// log1p(x) for finite x >= 0, within 1 ulp of std::log1p (0.02% of values 1 ulp off), as
// fdlibm computes it but without branches, so that the RBF kinds' log-scaled rows vectorise:
// 1 + x = 2^k·m with m in [√2/2, √2), f = m − 1 (x itself when k = 0), c the rounding error of
// 1 + x relative to it, log(1 + f) = f − f²/2 + s·(f²/2 + R(s²)), s = f/(2 + f), fdlibm's R.
NITRO_EVAL_V2_NO_TRAP inline double log1p_nonnegative_one(double x) {
  const double ln2_hi = 6.93147180369123816490e-01, ln2_lo = 1.90821492927058770002e-10;
  const double lg1 = 6.666666666666735130e-01, lg2 = 3.999999999940941908e-01, lg3 = 2.857142874366239149e-01,
               lg4 = 2.222219843214978396e-01, lg5 = 1.818357216161805012e-01, lg6 = 1.531383769920937332e-01,
               lg7 = 1.479819860511658591e-01;
  const double u = 1.0 + x;
  std::uint64_t bits;
  std::memcpy(&bits, &u, sizeof bits);
  const std::uint64_t shifted = bits + (std::uint64_t{0x3ff00000 - 0x3fe6a09e} << 32);  // split at √2, not 2
  const std::uint64_t m_bits = (shifted & 0x000fffffffffffffULL) + (std::uint64_t{0x3fe6a09e} << 32);
  const std::uint64_t e_bits = (shifted >> 52) | 0x4330000000000000ULL;                 // 2^52 + exponent
  double m, e;
  std::memcpy(&m, &m_bits, sizeof m);
  std::memcpy(&e, &e_bits, sizeof e);
  const double k = e - (4503599627370496.0 + 1023.0);
  const double f = k == 0.0 ? x : m - 1.0;
  const double c = k == 0.0 ? 0.0 : (k >= 2.0 ? 1.0 - (u - x) : x - (u - 1.0)) / u;
  const double hfsq = 0.5 * f * f;
  const double s = f / (2.0 + f);
  const double z = s * s, w = z * z;
  const double r = z * (lg1 + w * (lg3 + w * (lg5 + w * lg7))) + w * (lg2 + w * (lg4 + w * lg6));
  return s * (hfsq + r) + (k * ln2_lo + c) - hfsq + f + k * ln2_hi;
}

// z[j] = (t(x[j]) − mean[j]) / scale[j], t: sign(x)·log1p|x| (signed), else log1p(max(x, 0)) where
// log_mask[j] is set and x itself elsewhere (log_mask null: every column).
NITRO_EVAL_V2_CLONES NITRO_EVAL_V2_NO_TRAP inline void standardise(const double* x, const unsigned char* log_mask, bool signed_log,
                                                             const double* mean, const double* scale, std::size_t n,
                                                             double* z) {
  for (std::size_t j = 0; j < n; ++j) {
    const double v = x[j];
    double t;
    if (signed_log) {
      const double l = log1p_nonnegative_one(std::fabs(v));
      t = v > 0 ? l : (v < 0 ? -l : 0.0);
    } else {
      const double l = log1p_nonnegative_one(v > 0.0 ? v : 0.0);
      t = (log_mask == nullptr || log_mask[j]) ? l : v;
    }
    z[j] = (t - mean[j]) / scale[j];
  }
}

// d2[c] = Σ_j (z[j] − centres_t[j][c])² for every centre c of the feature-major centres (d rows
// of n), features summed in order, kRbfBlock centres at a time with their sums in registers.
// GCC and Clang: as vectors of W doubles (W = 4 for AVX, 2 for SSE2: a 4-double vector without
// AVX compiles to far slower code); other compilers: the same arithmetic in a plain loop.
template <std::size_t W>
inline void squared_distances_in(const double* z, std::size_t d, const double* centres_t, std::size_t n,
                                 double* d2) {
  const std::size_t blocks = n - n % kRbfBlock;
  for (std::size_t c0 = 0; c0 < blocks; c0 += kRbfBlock) {
#if defined(__GNUC__)
    typedef double Lanes __attribute__((vector_size(W * sizeof(double))));
    Lanes acc[kRbfBlock / W] = {};
    for (std::size_t j = 0; j < d; ++j) {
      const double zj = z[j];
      const double* row = centres_t + j * n + c0;
#pragma GCC unroll 8
      for (std::size_t q = 0; q < kRbfBlock / W; ++q) {
        Lanes t;
        std::memcpy(&t, row + W * q, sizeof t);
        t = zj - t;
        acc[q] += t * t;
      }
    }
    for (std::size_t l = 0; l < kRbfBlock; ++l) d2[c0 + l] = acc[l / W][l % W];
#else
    double acc[kRbfBlock] = {};
    for (std::size_t j = 0; j < d; ++j)
      for (std::size_t l = 0; l < kRbfBlock; ++l) {
        const double t = z[j] - centres_t[j * n + c0 + l];
        acc[l] += t * t;
      }
    std::copy(acc, acc + kRbfBlock, d2 + c0);
#endif
  }
  for (std::size_t c = blocks; c < n; ++c) {
    double s = 0.0;
    for (std::size_t j = 0; j < d; ++j) {
      const double t = z[j] - centres_t[j * n + c];
      s += t * t;
    }
    d2[c] = s;
  }
}

// An includer that asks for clones (NITRO_EVAL_CLONES on x86-64 GCC) gets both widths, an AVX2
// version and a baseline one chosen when the program loads (GCC's function multiversioning);
// otherwise the width follows the compiler's target.
#if NITRO_EVAL_V2_MULTIVERSION
__attribute__((target("avx2"))) inline void squared_distances(const double* z, std::size_t d,
                                                               const double* centres_t, std::size_t n, double* d2) {
  squared_distances_in<4>(z, d, centres_t, n, d2);
}
__attribute__((target("default"))) inline void squared_distances(const double* z, std::size_t d,
                                                                  const double* centres_t, std::size_t n, double* d2) {
  squared_distances_in<2>(z, d, centres_t, n, d2);
}
#else
inline void squared_distances(const double* z, std::size_t d, const double* centres_t, std::size_t n, double* d2) {
#if defined(__AVX__)
  squared_distances_in<4>(z, d, centres_t, n, d2);
#else
  squared_distances_in<2>(z, d, centres_t, n, d2);
#endif
}
#endif

// Σ a[i]·b[i] with eight partial sums (vectorisable without reassociating by the compiler). The
// tail starts at n − n % 8, not at the main loop's exit value: with constant sizes (exported
// headers at -O3) GCC cannot bound a tail that starts there, and warns.
inline double dot(const double* a, const double* b, std::size_t n) {
  double acc[8] = {0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0};
  const std::size_t n8 = n - n % 8;
  for (std::size_t i = 0; i < n8; i += 8)
    for (std::size_t l = 0; l < 8; ++l) acc[l] += a[i + l] * b[i + l];
  double tail = 0.0;
  for (std::size_t i = n8; i < n; ++i) tail += a[i] * b[i];
  return ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7])) + tail;
}

// Index of the first largest (or smallest) of v[0..n), as NumPy's argmax/argmin.
inline int arg_best(const double* v, std::size_t n, bool largest) {
  const double* it = largest ? std::max_element(v, v + n) : std::min_element(v, v + n);
  return static_cast<int>(it - v);
}

// True when the n values are all finite (a model takes nothing else).
inline bool all_finite(const double* x, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i)
    if (!std::isfinite(x[i])) return false;
  return true;
}

// The row [input features ∘ device features] of the kinds that see device features.
inline void with_device(const double* in, std::size_t n_inputs, const double* device, std::size_t n_device,
                        double* row) {
  std::copy(in, in + n_inputs, row);
  std::copy(device, device + n_device, row + n_inputs);
}

// ---- kernel: regression of each variant's fraction of the optimum (nitro.learn.kron) --------
// z = (sign(x')·log1p|x'| − mean) / scale with x' = x·inv_unit (x where inv_unit is null);
// score[v] = offset[v] + Σ_c exp(−γ|z − c|²)·W[c][v].
struct KernelModel {
  std::size_t n_inputs, n_centers, n_variants;
  const double* mean;       // n_inputs
  const double* scale;      // n_inputs
  double gamma;             // >= 0
  const double* centers_t;  // n_inputs rows of n_centers (feature-major)
  const double* weights_t;  // n_variants rows of n_centers (variant-major)
  const double* offset;     // n_variants
  const double* inv_unit = nullptr;  // n_inputs (1 / each feature's unit), or null: every unit 1
};

inline std::size_t kernel_work_size(const KernelModel& m) { return m.n_inputs + m.n_centers; }

NITRO_EVAL_V2_CLONES inline void kernel_scores(const KernelModel& m, const double* in, double* score, double* work) {
  const std::size_t nc = m.n_centers;
  double* z = work;
  double* kv = work + m.n_inputs;
  if (m.inv_unit != nullptr) {              // in units, then standardised in place
    for (std::size_t j = 0; j < m.n_inputs; ++j) z[j] = in[j] * m.inv_unit[j];
    standardise(z, nullptr, true, m.mean, m.scale, m.n_inputs, z);
  } else {
    standardise(in, nullptr, true, m.mean, m.scale, m.n_inputs, z);
  }
  squared_distances(z, m.n_inputs, m.centers_t, nc, kv);
  exp_scaled(-m.gamma, kv, nc);
  for (std::size_t v = 0; v < m.n_variants; ++v) score[v] = m.offset[v] + dot(kv, m.weights_t + v * nc, nc);
}

// scratch: kernel_work_size(m) + n_variants doubles.
inline int kernel_predict(const KernelModel& m, const double* in, double* work) {
  double* score = work + kernel_work_size(m);
  kernel_scores(m, in, score, work);
  return arg_best(score, m.n_variants, true);
}

// ---- svc: one-versus-one RBF SVC as libsvm evaluates it ---------------------------------------
// each column in its unit, log1p of marked columns, standardise, exp(−γ|x − sv|²) per support vector, one decision per
// class pair (i < j): Σ_{class i} coef[j−1]·k + Σ_{class j} coef[i]·k + intercept; a positive
// decision votes for i; the most votes win, ties to the lower class index.
struct SvcModel {
  std::size_t n_inputs, n_device;
  const double* device;              // n_device
  const unsigned char* log_mask;     // d = n_inputs + n_device
  const double* mean;                // d
  const double* scale;               // d
  double gamma;                      // >= 0
  std::size_t n_sv;
  const double* sv_t;                // d rows of n_sv (feature-major)
  std::size_t n_classes;
  const std::size_t* class_start;    // n_classes + 1: first support vector of each class, then n_sv
  const double* dual_coef;           // (n_classes − 1) rows of n_sv, libsvm's layout
  const double* intercept;           // one per pair (0,1), (0,2), …, (1,2), …
  const double* inv_unit = nullptr;  // d (1 / each column's unit), or null: every unit 1
};

inline std::size_t svc_work_size(const SvcModel& m) { return m.n_inputs + m.n_device + m.n_sv + m.n_classes; }

NITRO_EVAL_V2_CLONES inline int svc_predict(const SvcModel& m, const double* in, double* work) {
  const std::size_t d = m.n_inputs + m.n_device, ns = m.n_sv;
  double* x = work;
  double* kv = work + d;
  double* votes = kv + ns;
  with_device(in, m.n_inputs, m.device, m.n_device, x);
  if (m.inv_unit != nullptr)
    for (std::size_t j = 0; j < d; ++j) x[j] *= m.inv_unit[j];
  standardise(x, m.log_mask, false, m.mean, m.scale, d, x);
  squared_distances(x, d, m.sv_t, ns, kv);
  exp_scaled(-m.gamma, kv, ns);
  std::fill(votes, votes + m.n_classes, 0.0);
  std::size_t q = 0;
  for (std::size_t i = 0; i < m.n_classes; ++i)
    for (std::size_t j = i + 1; j < m.n_classes; ++j, ++q) {
      const std::size_t si = m.class_start[i], ni = m.class_start[i + 1] - si;
      const std::size_t sj = m.class_start[j], nj = m.class_start[j + 1] - sj;
      const double dec = dot(m.dual_coef + (j - 1) * ns + si, kv + si, ni) +
                         dot(m.dual_coef + i * ns + sj, kv + sj, nj) + m.intercept[q];
      votes[dec > 0 ? i : j] += 1.0;
    }
  return arg_best(votes, m.n_classes, true);
}

// ---- trees (scikit-learn's arrays) -----------------------------------------------------------
// n_trees tables of n_nodes (padded): the leaf reached by a row, comparing x[feature] <= threshold.
struct Trees {
  std::size_t n_trees, n_nodes, value_width;
  const std::int64_t* left;    // n_trees × n_nodes, −1 at a leaf
  const std::int64_t* right;
  const std::int64_t* feature;
  const double* threshold;
  const double* value;         // n_trees × n_nodes × value_width
};

inline const double* tree_leaf(const Trees& t, std::size_t tree, const double* x) {
  std::size_t node = 0;
  const std::size_t base = tree * t.n_nodes;
  while (t.left[base + node] >= 0)
    node = static_cast<std::size_t>(x[t.feature[base + node]] <= t.threshold[base + node] ? t.left[base + node]
                                                                                           : t.right[base + node]);
  return t.value + (base + node) * t.value_width;
}

inline void round_to_float32(double* x, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) x[i] = static_cast<double>(static_cast<float>(x[i]));
}

// tree: one tree whose leaves hold a cost per variant (x rounded to float32 if asked); argmin.
struct TreeModel {
  std::size_t n_inputs, n_device;
  const double* device;
  Trees trees;
  bool float32;
};

inline std::size_t tree_work_size(const TreeModel& m) { return m.n_inputs + m.n_device; }

inline int tree_predict(const TreeModel& m, const double* in, double* work) {
  with_device(in, m.n_inputs, m.device, m.n_device, work);
  if (m.float32) round_to_float32(work, m.n_inputs + m.n_device);
  return arg_best(tree_leaf(m.trees, 0, work), m.trees.value_width, false);
}

// gbt: boosted trees over [x ∘ code of variant v]: init + Σ lr·leaf, summed in order; argmax.
// With variant_start (n_variants + 1 offsets), variant v sums only trees [start[v], start[v+1]):
// one booster per variant.
struct GbtModel {
  std::size_t n_inputs, n_device;
  const double* device;
  Trees trees;                 // value_width 1
  double learning_rate, init;
  std::size_t n_variants, code_width;
  const double* codes;         // n_variants rows of code_width
  bool float32;
  const std::size_t* variant_start = nullptr;
};

inline std::size_t gbt_work_size(const GbtModel& m) { return m.n_inputs + m.n_device + m.code_width; }

// Variant v's score, init + Σ lr·leaf over its trees; work holds [x ∘ device] (rounded if
// float32) and room for one code after it.
inline double gbt_variant_score(const GbtModel& m, double* work, std::size_t v) {
  const std::size_t w = m.n_inputs + m.n_device;
  std::copy(m.codes + v * m.code_width, m.codes + (v + 1) * m.code_width, work + w);
  if (m.float32) round_to_float32(work + w, m.code_width);
  double s = m.init;
  const std::size_t first = m.variant_start ? m.variant_start[v] : 0;
  const std::size_t last = m.variant_start ? m.variant_start[v + 1] : m.trees.n_trees;
  for (std::size_t t = first; t < last; ++t) s += m.learning_rate * tree_leaf(m.trees, t, work)[0];
  return s;
}

// Every variant's score into score[0..n_variants) (what refining mode ranks candidates by).
inline void gbt_scores(const GbtModel& m, const double* in, double* work, double* score) {
  with_device(in, m.n_inputs, m.device, m.n_device, work);
  if (m.float32) round_to_float32(work, m.n_inputs + m.n_device);
  for (std::size_t v = 0; v < m.n_variants; ++v) score[v] = gbt_variant_score(m, work, v);
}

inline int gbt_predict(const GbtModel& m, const double* in, double* work) {
  with_device(in, m.n_inputs, m.device, m.n_device, work);
  if (m.float32) round_to_float32(work, m.n_inputs + m.n_device);
  int best = 0;
  double best_score = 0.0;
  for (std::size_t v = 0; v < m.n_variants; ++v) {
    const double s = gbt_variant_score(m, work, v);
    if (v == 0 || s > best_score) {
      best = static_cast<int>(v);
      best_score = s;
    }
  }
  return best;
}

// ---- linear: scores of the standardised (partly log1p, each column in its unit) row; argmax or argmin
struct LinearModel {
  std::size_t n_inputs, n_device;
  const double* device;
  const unsigned char* log_mask;  // d
  const double* mean;             // d
  const double* scale;            // d
  std::size_t n_variants;
  const double* coef;             // d rows of n_variants
  const double* intercept;        // n_variants
  bool choose_max;
  const double* inv_unit = nullptr;  // d (1 / each column's unit), or null: every unit 1
};

inline std::size_t linear_work_size(const LinearModel& m) { return m.n_inputs + m.n_device + m.n_variants; }

inline int linear_predict(const LinearModel& m, const double* in, double* work) {
  const std::size_t d = m.n_inputs + m.n_device, k = m.n_variants;
  double* x = work;
  double* score = work + d;
  with_device(in, m.n_inputs, m.device, m.n_device, x);
  std::copy(m.intercept, m.intercept + k, score);
  for (std::size_t j = 0; j < d; ++j) {
    const double xj = m.inv_unit != nullptr ? x[j] * m.inv_unit[j] : x[j];
    const double v = m.log_mask[j] ? std::log1p(std::max(xj, 0.0)) : xj;
    const double z = (v - m.mean[j]) / m.scale[j];
    for (std::size_t c = 0; c < k; ++c) score[c] += z * m.coef[j * k + c];
  }
  return arg_best(score, k, m.choose_max);
}

// ---- intervals: Futhark-style threshold rule, labels[number of thresholds <= x[feature]] -----
struct IntervalsModel {
  std::size_t n_inputs, n_device;
  const double* device;
  std::size_t feature;         // index into [input features ∘ device features]
  std::size_t n_thresholds;
  const double* thresholds;    // ascending
  const int* labels;           // n_thresholds + 1
};

inline int intervals_predict(const IntervalsModel& m, const double* in) {
  const double v = m.feature < m.n_inputs ? in[m.feature] : m.device[m.feature - m.n_inputs];
  return m.labels[std::upper_bound(m.thresholds, m.thresholds + m.n_thresholds, v) - m.thresholds];
}

}  // namespace nitro_eval_v2

#endif  // NITRO_SELECTOR_EVAL_HPP_V2
