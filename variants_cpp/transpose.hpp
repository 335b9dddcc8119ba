// In-place transposition of an M x N row-major float64 matrix, after Catanzaro, Keller &
// Garland, "A decomposition for in-place matrix transposition" (PPoPP 2014).
//
// Transposition is decomposed into independent row and column permutations (a column
// rotation when gcd(M, N) > 1, a row shuffle, a column shuffle done as a second column
// rotation and a permutation of whole rows), each done with a scratch line per thread, so
// the extra memory is O(max(M, N)) per thread, not O(MN).
//   C2R: the gather form ("columns to rows") on the M x N view of the buffer.
//   R2C: the scatter form ("rows to columns"): the inverse of C2R on the N x M view,
//        its steps in reverse order.
// Both parallelise every step across lines (rows, or blocks of adjacent columns).
// The skinny specialisations are meant for shapes with one small dimension: a step over
// few long lines is parallelised *within* each line (threads share one line; the row
// permutation is split by columns), a step over many short lines across them, so that a
// 4 x 10^6 matrix still uses every core.
// On return data[0..M*N) holds the N x M row-major transpose.
#pragma once
#include <cstdint>

namespace nitro {

void transpose_c2r(double* data, std::int64_t m, std::int64_t n);
void transpose_r2c(double* data, std::int64_t m, std::int64_t n);
void transpose_skinny_c2r(double* data, std::int64_t m, std::int64_t n);
void transpose_skinny_r2c(double* data, std::int64_t m, std::int64_t n);

}  // namespace nitro
