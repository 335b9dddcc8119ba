// In-place transposition after Catanzaro, Keller & Garland (PPoPP 2014); see transpose.hpp.
//
// With c = gcd(m, n), a = m / c, b = n / c and k the inverse of a modulo b, C2R on the
// m x n row-major view D (gather form: new D[i][j] = old D[source]) is
//   1. if c > 1, rotate every column j down by floor(j / b):   source row (i + j/b) mod m
//   2. shuffle every row i:                                   source column d(i, j)
//   3. permute every column j:                                source row (j + q(i)) mod m,
//      q(i) = (i n - floor(i / a)) mod m, done as
//      3a. rotate every column j down by j:                     source row (i + j) mod m
//      3b. permute whole rows:                                  source row q(i)
// after which the buffer holds the n x m row-major transpose. R2C runs the inverse steps
// in reverse order (scatter form: new D[target] = old D[i][j]) on the n x m view.
// Row permutations follow the cycles of q (one scratch row per thread).
#include "transpose.hpp"

#include <omp.h>

#include <algorithm>
#include <vector>

namespace nitro {
namespace {

using i64 = std::int64_t;
constexpr i64 kColumns = 8;             // adjacent columns moved together: one 64-byte line of doubles
constexpr i64 kParallelMin = 1 << 15;   // smaller matrices: one thread (no fork/join cost)
constexpr i64 kGroup = 1 << 16;         // skinny: elements moved between two barriers, at least

i64 gcd(i64 x, i64 y) {
  while (y) {
    const i64 r = x % y;
    x = y;
    y = r;
  }
  return x;
}

// x^-1 mod p for gcd(x, p) == 1 (extended Euclid); 0 when p == 1.
i64 mod_inverse(i64 x, i64 p) {
  if (p == 1) return 0;
  i64 r0 = p, r1 = x % p, s0 = 0, s1 = 1;
  while (r1) {
    const i64 q = r0 / r1;
    i64 t = r0 - q * r1;
    r0 = r1;
    r1 = t;
    t = s0 - q * s1;
    s0 = s1;
    s1 = t;
  }
  return ((s0 % p) + p) % p;
}

struct Shape {
  i64 m, n, c, a, b, k;
  Shape(i64 rows, i64 cols) : m(rows), n(cols), c(gcd(rows, cols)), a(rows / c), b(cols / c),
                              k(mod_inverse(a, b)) {}
};

// Source row of element (i, j) in a column rotation by floor(j / div) (steps 1 and 3a).
struct Rotate {
  i64 m, div;
  i64 operator()(i64 i, i64 j) const { return (i + j / div) % m; }
};

// Source column of element (i, j) in step 2 (row shuffle).
struct RowShuffle {
  i64 m, n, c, b, k;
  i64 operator()(i64 i, i64 j) const {
    i64 f = j + i * (n - 1);
    if (i - j % c > m - c) f += m;
    return (k * ((f / c) % b)) % b + (f % c) * b;
  }
};

// Source row of row i in step 3b (row permutation).
struct RowPermute {
  i64 m, n, a;
  i64 operator()(i64 i) const { return (i * n - i / a) % m; }
};

// -- one step over all rows: gather (tmp[j] = row[map(i, j)]) or scatter (tmp[map(i, j)] = row[j])
template <bool Gather, class Map>
void move_row(double* row, double* tmp, i64 i, i64 lo, i64 hi, const Map& map) {
  for (i64 j = lo; j < hi; ++j) {
    if (Gather) tmp[j] = row[map(i, j)]; else tmp[map(i, j)] = row[j];
  }
}

template <bool Gather, class Map>
void rows_across(double* d, i64 m, i64 n, const Map& map) {
#pragma omp parallel if (m * n >= kParallelMin)
  {
    std::vector<double> tmp(n);
#pragma omp for schedule(static)
    for (i64 i = 0; i < m; ++i) {
      move_row<Gather>(d + i * n, tmp.data(), i, 0, n, map);
      std::copy(tmp.begin(), tmp.end(), d + i * n);
    }
  }
}

template <bool Gather, class Map>
void rows_within(double* d, i64 m, i64 n, const Map& map) {
  const i64 group = std::max<i64>(1, kGroup / n);  // rows per pair of barriers
  std::vector<double> tmp(std::min(group, m) * n);
#pragma omp parallel if (m * n >= kParallelMin)
  for (i64 i0 = 0; i0 < m; i0 += group) {  // every thread walks the groups; each is split among them
    const i64 size = std::min(group, m - i0) * n;
#pragma omp for schedule(static)
    for (i64 e = 0; e < size; ++e) {
      const i64 i = i0 + e / n, j = e % n;
      move_row<Gather>(d + i * n, tmp.data() + (i - i0) * n, i, j, j + 1, map);
    }
#pragma omp for schedule(static)
    for (i64 e = 0; e < size; ++e) d[i0 * n + e] = tmp[e];
  }
}

// -- one step over all columns, w adjacent columns at a time; tmp is m x ld
template <bool Gather, class Map>
void move_columns(double* d, double* tmp, i64 ld, i64 n, i64 j0, i64 w, i64 lo, i64 hi,
                  const Map& map) {
  for (i64 i = lo; i < hi; ++i) {
    for (i64 q = 0; q < w; ++q) {
      const i64 j = j0 + q;
      if (Gather) tmp[i * ld + q] = d[map(i, j) * n + j];
      else tmp[map(i, j) * ld + q] = d[i * n + j];
    }
  }
}

template <bool Gather, class Map>
void columns_across(double* d, i64 m, i64 n, const Map& map) {
  const i64 blocks = (n + kColumns - 1) / kColumns;
#pragma omp parallel if (m * n >= kParallelMin)
  {
    std::vector<double> tmp(m * kColumns);
#pragma omp for schedule(static)
    for (i64 blk = 0; blk < blocks; ++blk) {
      const i64 j0 = blk * kColumns, w = std::min(kColumns, n - j0);
      move_columns<Gather>(d, tmp.data(), kColumns, n, j0, w, 0, m, map);
      for (i64 i = 0; i < m; ++i)
        std::copy(tmp.data() + i * kColumns, tmp.data() + i * kColumns + w, d + i * n + j0);
    }
  }
}

template <bool Gather, class Map>
void columns_within(double* d, i64 m, i64 n, const Map& map) {
  // columns per pair of barriers: a multiple of kColumns, at least kGroup elements
  const i64 width = std::min(n, kColumns * std::max<i64>(1, kGroup / (m * kColumns)));
  std::vector<double> tmp(m * width);
#pragma omp parallel if (m * n >= kParallelMin)
  for (i64 j0 = 0; j0 < n; j0 += width) {  // each block of columns is split among threads by rows
    const i64 w = std::min(width, n - j0);
#pragma omp for schedule(static)
    for (i64 i = 0; i < m; ++i) move_columns<Gather>(d, tmp.data(), width, n, j0, w, i, i + 1, map);
#pragma omp for schedule(static)
    for (i64 i = 0; i < m; ++i)
      std::copy(tmp.data() + i * width, tmp.data() + i * width + w, d + i * n + j0);
  }
}

// -- step 3b: whole rows permuted along the cycles of q; gather: row i <- row q(i),
// scatter: row q(i) <- row i. Columns [lo, hi) only: the permutation is the same in every
// column, so threads may split the columns between them.
template <bool Gather>
void permute_cycle(double* d, i64 n, i64 start, i64 lo, i64 hi, const RowPermute& q, double* tmp) {
  const i64 w = hi - lo;
  std::copy(d + start * n + lo, d + start * n + hi, tmp);
  i64 i = start;
  if (Gather) {
    for (i64 src = q(i); src != start; i = src, src = q(i))
      std::copy(d + src * n + lo, d + src * n + hi, d + i * n + lo);
    std::copy(tmp, tmp + w, d + i * n + lo);
  } else {
    do {
      i = q(i);
      std::swap_ranges(tmp, tmp + w, d + i * n + lo);
    } while (i != start);
  }
}

template <bool Gather>
void permute_rows(bool skinny, double* d, i64 m, i64 n, const RowPermute& q) {
  std::vector<i64> leaders;  // one row of every cycle longer than 1
  std::vector<char> seen(m, 0);
  for (i64 s = 0; s < m; ++s) {
    if (seen[s]) continue;
    if (q(s) != s) leaders.push_back(s);
    for (i64 i = s; !seen[i]; i = q(i)) seen[i] = 1;
  }
  const i64 cycles = static_cast<i64>(leaders.size());
  if (skinny && m < n) {  // few long rows: every thread permutes its own slice of columns
#pragma omp parallel if (m * n >= kParallelMin)
    {
      const i64 t = omp_get_thread_num(), p = omp_get_num_threads();
      const i64 lo = n * t / p, hi = n * (t + 1) / p;
      std::vector<double> tmp(hi - lo);
      for (i64 c = 0; c < cycles; ++c) permute_cycle<Gather>(d, n, leaders[c], lo, hi, q, tmp.data());
    }
  } else {                // cycles in parallel
#pragma omp parallel if (m * n >= kParallelMin)
    {
      std::vector<double> tmp(n);
#pragma omp for schedule(dynamic, 1)
      for (i64 c = 0; c < cycles; ++c) permute_cycle<Gather>(d, n, leaders[c], 0, n, q, tmp.data());
    }
  }
}

// Skinny: parallelise within lines when the lines of a step are few and long.
template <bool Gather, class Map>
void rows_step(bool skinny, double* d, i64 m, i64 n, const Map& map) {
  if (skinny && m < n) rows_within<Gather>(d, m, n, map); else rows_across<Gather>(d, m, n, map);
}

template <bool Gather, class Map>
void columns_step(bool skinny, double* d, i64 m, i64 n, const Map& map) {
  if (skinny && n < m) columns_within<Gather>(d, m, n, map); else columns_across<Gather>(d, m, n, map);
}

// C2R on the m x n row-major buffer (gather form).
void c2r(bool skinny, double* d, i64 m, i64 n) {
  if (m <= 1 || n <= 1) return;  // a vector's transpose has the same memory layout
  const Shape s(m, n);
  if (s.c > 1) columns_step<true>(skinny, d, m, n, Rotate{m, s.b});
  rows_step<true>(skinny, d, m, n, RowShuffle{m, n, s.c, s.b, s.k});
  columns_step<true>(skinny, d, m, n, Rotate{m, 1});
  permute_rows<true>(skinny, d, m, n, RowPermute{m, n, s.a});
}

// R2C of the rows x cols matrix: the inverse of C2R on the cols x rows view (scatter form).
void r2c(bool skinny, double* d, i64 rows, i64 cols) {
  if (rows <= 1 || cols <= 1) return;
  const i64 m = cols, n = rows;
  const Shape s(m, n);
  permute_rows<false>(skinny, d, m, n, RowPermute{m, n, s.a});
  columns_step<false>(skinny, d, m, n, Rotate{m, 1});
  rows_step<false>(skinny, d, m, n, RowShuffle{m, n, s.c, s.b, s.k});
  if (s.c > 1) columns_step<false>(skinny, d, m, n, Rotate{m, s.b});
}

}  // namespace

void transpose_c2r(double* data, std::int64_t m, std::int64_t n) { c2r(false, data, m, n); }
void transpose_r2c(double* data, std::int64_t m, std::int64_t n) { r2c(false, data, m, n); }
void transpose_skinny_c2r(double* data, std::int64_t m, std::int64_t n) { c2r(true, data, m, n); }
void transpose_skinny_r2c(double* data, std::int64_t m, std::int64_t n) { r2c(true, data, m, n); }

}  // namespace nitro
