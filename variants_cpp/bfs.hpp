// Breadth-first search code variants for a multi-core CPU.
//
// The variants of Merrill, Garland and Grimshaw's GPU BFS (as tuned by Nitro), adapted from
// thread blocks to OpenMP threads, on three axes of the paper:
//   expand_contract  vertex frontier in, vertex frontier out: expand each frontier vertex's
//                    edges and keep the neighbours a compare-and-swap on depth[] claims;
//   contract_expand  edge frontier in, edge frontier out: claim each frontier item, and append
//                    all out-edges of the claimed ones unfiltered;
//   two_phase        an expansion pass (vertex frontier -> edge frontier) and a separate
//                    contraction pass (edge frontier -> vertex frontier);
// each "fused" (one parallel region steps through all levels, a barrier between passes) or
// "iterative" (a host loop opens one parallel region per pass, sized to that pass's work).
// serial_queue is the sequential queue BFS, the CPU member with no synchronisation at all.
//
// Graphs are CSR: the out-neighbours of u are indices[indptr[u] .. indptr[u+1]), n vertices,
// m = length of indices. Every function overwrites depth[0..n) with the BFS level of each vertex
// from source (-1: unreachable) and returns false when the CSR is malformed (an indptr range
// outside [0, m] or decreasing, or an index outside [0, n)); depth is unspecified then.
// Callers guarantee n >= 1 and 0 <= source < n.
#pragma once
#include <cstdint>

namespace nitro {

#define NITRO_BFS_DECLARE(name)                                                              \
  template <class Index>                                                                     \
  bool bfs_##name(const Index* indptr, const std::int32_t* indices, std::int32_t n,         \
                  std::int64_t m, std::int32_t source, std::int32_t* depth);

NITRO_BFS_DECLARE(serial_queue)
NITRO_BFS_DECLARE(expand_contract_fused)
NITRO_BFS_DECLARE(expand_contract_iterative)
NITRO_BFS_DECLARE(contract_expand_fused)
NITRO_BFS_DECLARE(contract_expand_iterative)
NITRO_BFS_DECLARE(two_phase_fused)
NITRO_BFS_DECLARE(two_phase_iterative)

#undef NITRO_BFS_DECLARE

}  // namespace nitro
