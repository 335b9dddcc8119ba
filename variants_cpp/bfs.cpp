#include "bfs.hpp"

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <memory>
#include <vector>

namespace nitro {
namespace {

// Frontier items per dynamically scheduled chunk.
constexpr int kChunk = 64;
// An iterative pass engages one thread per this many frontier items (at least one).
constexpr std::int64_t kItemsPerThread = 1024;
// A thread-local queue is appended to the shared one once it holds this many items.
constexpr std::size_t kFlushAt = 4096;

// The graph, and the flag raised when a malformed CSR entry is met (the entry is skipped).
template <class Index>
struct Csr {
  const Index* indptr;
  const std::int32_t* indices;
  std::int32_t n;
  std::int64_t m;
  std::atomic<bool>* malformed;

  // [begin, end) of u's out-edges; an empty range (and the flag) when indptr is invalid there.
  inline void edges(std::int32_t u, std::int64_t& begin, std::int64_t& end) const {
    begin = static_cast<std::int64_t>(indptr[u]);
    end = static_cast<std::int64_t>(indptr[u + 1]);
    if (begin < 0 || begin > end || end > m) {
      malformed->store(true, std::memory_order_relaxed);
      begin = end = 0;
    }
  }
  // Whether v names a vertex (raising the flag when not).
  inline bool vertex(std::int32_t v) const {
    if (static_cast<std::uint32_t>(v) < static_cast<std::uint32_t>(n)) return true;
    malformed->store(true, std::memory_order_relaxed);
    return false;
  }
};

// Claims v for `level` by compare-and-swap on its depth (-1 = unvisited); true for one caller only.
inline bool claim(std::int32_t* depth, std::int32_t v, std::int32_t level) {
  if (__atomic_load_n(&depth[v], __ATOMIC_RELAXED) != -1) return false;
  std::int32_t expected = -1;
  return __atomic_compare_exchange_n(&depth[v], &expected, level, false, __ATOMIC_RELAXED,
                                     __ATOMIC_RELAXED);
}

// A shared queue that threads append to by reserving a block with one atomic add. Appends past
// the capacity (possible only on a malformed CSR whose edge ranges overlap) are dropped and flagged.
struct SharedQueue {
  std::unique_ptr<std::int32_t[]> items;
  std::int64_t capacity;
  std::int64_t size = 0;
  std::atomic<std::int64_t> tail{0};
  explicit SharedQueue(std::int64_t cap)
      : items(new std::int32_t[std::max<std::int64_t>(cap, 1)]),
        capacity(std::max<std::int64_t>(cap, 1)) {}
};

// One thread's queue, on its own cache lines.
struct alignas(64) LocalQueue {
  std::vector<std::int32_t> items;
  LocalQueue() { items.reserve(kFlushAt); }
};

inline void flush(LocalQueue& local, SharedQueue& out, std::atomic<bool>* malformed) {
  const auto count = static_cast<std::int64_t>(local.items.size());
  if (count == 0) return;
  const std::int64_t at = out.tail.fetch_add(count, std::memory_order_relaxed);
  if (at + count <= out.capacity)
    std::memcpy(out.items.get() + at, local.items.data(), count * sizeof(std::int32_t));
  else
    malformed->store(true, std::memory_order_relaxed);
  local.items.clear();
}

inline void push(LocalQueue& local, SharedQueue& out, std::int32_t v, std::atomic<bool>* malformed) {
  local.items.push_back(v);
  if (local.items.size() >= kFlushAt) flush(local, out, malformed);
}

// Makes the queue filled during the last pass readable by the next pass.
inline void publish(SharedQueue& q) {
  q.size = std::min(q.tail.load(std::memory_order_relaxed), q.capacity);
  q.tail.store(0, std::memory_order_relaxed);
}

// Exchanges two published queues (both tails are zero).
inline void exchange(SharedQueue& a, SharedQueue& b) {
  std::swap(a.items, b.items);
  std::swap(a.capacity, b.capacity);
  std::swap(a.size, b.size);
}

// -- the three algorithms: passes over a frontier, run by every thread of a team -----------------
// Allocation happens in the constructor (outside parallel regions, so that std::bad_alloc reaches
// Python); start(source) seeds the frontier once depth[] is all -1.
// step(pass, level, local) processes this thread's share of the pass with an orphaned `omp for`;
// advance(pass) runs on one thread after all threads finished the pass and says whether to go on;
// work(pass) is the number of items the pass will process.

template <class Index>
struct ExpandContract {
  static constexpr int kPasses = 1;
  Csr<Index> g;
  std::int32_t* depth;
  SharedQueue cur, next;

  ExpandContract(const Csr<Index>& graph, std::int32_t* d) : g(graph), depth(d), cur(graph.n), next(graph.n) {}
  void start(std::int32_t source) {
    depth[source] = 0;
    cur.items[0] = source;
    cur.size = 1;
  }
  std::int64_t work(int) const { return cur.size; }
  void step(int, std::int32_t level, LocalQueue& local) {
#pragma omp for schedule(dynamic, kChunk) nowait
    for (std::int64_t i = 0; i < cur.size; ++i) {
      std::int64_t b, e;
      g.edges(cur.items[i], b, e);
      for (std::int64_t k = b; k < e; ++k) {
        const std::int32_t v = g.indices[k];
        if (g.vertex(v) && claim(depth, v, level + 1)) push(local, next, v, g.malformed);
      }
    }
    flush(local, next, g.malformed);
  }
  bool advance(int) {
    publish(next);
    exchange(cur, next);
    return cur.size > 0;
  }
};

template <class Index>
struct ContractExpand {
  static constexpr int kPasses = 1;
  Csr<Index> g;
  std::int32_t* depth;
  SharedQueue cur, next;  // edge frontiers: candidate vertices, duplicates and visited ones included

  ContractExpand(const Csr<Index>& graph, std::int32_t* d) : g(graph), depth(d), cur(graph.m), next(graph.m) {}
  void start(std::int32_t source) {
    cur.items[0] = source;
    cur.size = 1;
  }
  std::int64_t work(int) const { return cur.size; }
  void step(int, std::int32_t level, LocalQueue& local) {
#pragma omp for schedule(dynamic, kChunk) nowait
    for (std::int64_t i = 0; i < cur.size; ++i) {
      const std::int32_t u = cur.items[i];
      if (!claim(depth, u, level)) continue;
      std::int64_t b, e;
      g.edges(u, b, e);
      for (std::int64_t k = b; k < e; ++k) {
        const std::int32_t v = g.indices[k];
        if (g.vertex(v)) push(local, next, v, g.malformed);
      }
    }
    flush(local, next, g.malformed);
  }
  bool advance(int) {
    publish(next);
    exchange(cur, next);
    return cur.size > 0;
  }
};

template <class Index>
struct TwoPhase {
  static constexpr int kPasses = 2;  // 0: expansion, 1: contraction
  Csr<Index> g;
  std::int32_t* depth;
  SharedQueue vertices, edges, next_vertices;

  TwoPhase(const Csr<Index>& graph, std::int32_t* d)
      : g(graph), depth(d), vertices(graph.n), edges(graph.m), next_vertices(graph.n) {}
  void start(std::int32_t source) {
    depth[source] = 0;
    vertices.items[0] = source;
    vertices.size = 1;
  }
  std::int64_t work(int pass) const { return pass == 0 ? vertices.size : edges.size; }
  void step(int pass, std::int32_t level, LocalQueue& local) {
    if (pass == 0) {
#pragma omp for schedule(dynamic, kChunk) nowait
      for (std::int64_t i = 0; i < vertices.size; ++i) {
        std::int64_t b, e;
        g.edges(vertices.items[i], b, e);
        for (std::int64_t k = b; k < e; ++k) push(local, edges, g.indices[k], g.malformed);
      }
      flush(local, edges, g.malformed);
    } else {
#pragma omp for schedule(dynamic, kChunk) nowait
      for (std::int64_t i = 0; i < edges.size; ++i) {
        const std::int32_t v = edges.items[i];
        if (g.vertex(v) && claim(depth, v, level + 1)) push(local, next_vertices, v, g.malformed);
      }
      flush(local, next_vertices, g.malformed);
    }
  }
  bool advance(int pass) {
    if (pass == 0) {
      publish(edges);
      return edges.size > 0;
    }
    publish(next_vertices);
    exchange(vertices, next_vertices);
    return vertices.size > 0;
  }
};

// -- the two ways of driving the passes ---------------------------------------------------------------

// One parallel region for the whole search: all threads step through the levels together.
template <class Algo, class Index>
bool fused(const Index* indptr, const std::int32_t* indices, std::int32_t n, std::int64_t m,
           std::int32_t source, std::int32_t* depth) {
  std::atomic<bool> malformed{false};
  const Csr<Index> g{indptr, indices, n, m, &malformed};
  const int threads = omp_get_max_threads();
  std::vector<LocalQueue> locals(threads);
  Algo algo(g, depth);
  bool more = true;
#pragma omp parallel num_threads(threads)
  {
#pragma omp for schedule(static)
    for (std::int32_t v = 0; v < n; ++v) depth[v] = -1;
#pragma omp single
    algo.start(source);
    LocalQueue& local = locals[omp_get_thread_num()];
    for (std::int32_t level = 0; more; ++level) {
      for (int pass = 0; pass < Algo::kPasses && more; ++pass) {
        algo.step(pass, level, local);
#pragma omp barrier
#pragma omp single
        more = algo.advance(pass);
      }
    }
  }
  return !malformed.load();
}

// A host loop: one parallel region per pass, with as many threads as the pass has work for.
template <class Algo, class Index>
bool iterative(const Index* indptr, const std::int32_t* indices, std::int32_t n, std::int64_t m,
               std::int32_t source, std::int32_t* depth) {
  std::atomic<bool> malformed{false};
  const Csr<Index> g{indptr, indices, n, m, &malformed};
  const int max_threads = omp_get_max_threads();
  const auto team = [max_threads](std::int64_t items) {
    return static_cast<int>(std::clamp<std::int64_t>(
        (items + kItemsPerThread - 1) / kItemsPerThread, 1, max_threads));
  };
#pragma omp parallel for schedule(static) num_threads(team(n))
  for (std::int32_t v = 0; v < n; ++v) depth[v] = -1;
  Algo algo(g, depth);
  std::vector<LocalQueue> locals(max_threads);
  algo.start(source);
  for (std::int32_t level = 0;; ++level) {
    for (int pass = 0; pass < Algo::kPasses; ++pass) {
#pragma omp parallel num_threads(team(algo.work(pass)))
      algo.step(pass, level, locals[omp_get_thread_num()]);
      if (!algo.advance(pass)) return !malformed.load();
    }
  }
}

}  // namespace

template <class Index>
bool bfs_serial_queue(const Index* indptr, const std::int32_t* indices, std::int32_t n,
                      std::int64_t m, std::int32_t source, std::int32_t* depth) {
  std::atomic<bool> malformed{false};
  const Csr<Index> g{indptr, indices, n, m, &malformed};
  std::fill(depth, depth + n, -1);
  std::unique_ptr<std::int32_t[]> queue(new std::int32_t[n]);
  std::int64_t head = 0, tail = 0;
  depth[source] = 0;
  queue[tail++] = source;
  while (head < tail) {
    const std::int32_t u = queue[head++];
    std::int64_t b, e;
    g.edges(u, b, e);
    for (std::int64_t k = b; k < e; ++k) {
      const std::int32_t v = indices[k];
      if (g.vertex(v) && depth[v] == -1) {
        depth[v] = depth[u] + 1;
        queue[tail++] = v;
      }
    }
  }
  return !malformed.load();
}

#define NITRO_BFS_DEFINE(name, driver, algo)                                                    \
  template <class Index>                                                                        \
  bool bfs_##name(const Index* indptr, const std::int32_t* indices, std::int32_t n,            \
                  std::int64_t m, std::int32_t source, std::int32_t* depth) {                   \
    return driver<algo<Index>>(indptr, indices, n, m, source, depth);                          \
  }

NITRO_BFS_DEFINE(expand_contract_fused, fused, ExpandContract)
NITRO_BFS_DEFINE(expand_contract_iterative, iterative, ExpandContract)
NITRO_BFS_DEFINE(contract_expand_fused, fused, ContractExpand)
NITRO_BFS_DEFINE(contract_expand_iterative, iterative, ContractExpand)
NITRO_BFS_DEFINE(two_phase_fused, fused, TwoPhase)
NITRO_BFS_DEFINE(two_phase_iterative, iterative, TwoPhase)
#undef NITRO_BFS_DEFINE

#define NITRO_BFS_INSTANTIATE(name)                                                             \
  template bool bfs_##name<std::int32_t>(const std::int32_t*, const std::int32_t*, std::int32_t, \
                                         std::int64_t, std::int32_t, std::int32_t*);            \
  template bool bfs_##name<std::int64_t>(const std::int64_t*, const std::int32_t*, std::int32_t, \
                                         std::int64_t, std::int32_t, std::int32_t*);

NITRO_BFS_INSTANTIATE(serial_queue)
NITRO_BFS_INSTANTIATE(expand_contract_fused)
NITRO_BFS_INSTANTIATE(expand_contract_iterative)
NITRO_BFS_INSTANTIATE(contract_expand_fused)
NITRO_BFS_INSTANTIATE(contract_expand_iterative)
NITRO_BFS_INSTANTIATE(two_phase_fused)
NITRO_BFS_INSTANTIATE(two_phase_iterative)
#undef NITRO_BFS_INSTANTIATE

}  // namespace nitro
