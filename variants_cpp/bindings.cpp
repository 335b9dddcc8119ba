// Thin pybind11 layer: NumPy arrays in (zero-copy), NumPy arrays out, GIL released.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cstdint>

#include "cpu_microbench.hpp"
#include "cpu_proxies.hpp"
#include "bfs.hpp"
#include "histogram.hpp"

namespace py = pybind11;

namespace {

using U8Array = py::array_t<std::uint8_t, py::array::c_style>;
using HistogramFn = void (*)(const std::uint8_t*, std::size_t, std::uint64_t*);

template <HistogramFn fn>
py::array_t<std::uint64_t> histogram(const U8Array& data) {
  py::array_t<std::uint64_t> bins(nitro::kHistogramBins);
  const std::uint8_t* in = data.data();
  const std::size_t n = static_cast<std::size_t>(data.size());
  std::uint64_t* out = bins.mutable_data();
  {
    py::gil_scoped_release release;
    fn(in, n, out);
  }
  return bins;
}

// ---- bfs ----
using I32Array = py::array_t<std::int32_t, py::array::c_style>;
template <class Index>
using BfsFn = bool (*)(const Index*, const std::int32_t*, std::int32_t, std::int64_t, std::int32_t,
                       std::int32_t*);

template <class Index, BfsFn<Index> fn>
py::array_t<std::int32_t> bfs(const py::array_t<Index, py::array::c_style>& indptr,
                              const I32Array& indices, std::int64_t source) {
  const std::int64_t n = static_cast<std::int64_t>(indptr.size()) - 1;
  if (n < 1 || n > INT32_MAX) throw py::value_error("bfs: indptr must have 2 to 2**31 entries");
  if (source < 0 || source >= n) throw py::value_error("bfs: source vertex out of range");
  py::array_t<std::int32_t> depth(n);
  const Index* p = indptr.data();
  const std::int32_t* idx = indices.data();
  const std::int64_t m = static_cast<std::int64_t>(indices.size());
  std::int32_t* out = depth.mutable_data();
  bool ok;
  {
    py::gil_scoped_release release;
    ok = fn(p, idx, static_cast<std::int32_t>(n), m, static_cast<std::int32_t>(source), out);
  }
  if (!ok) throw py::value_error("bfs: malformed CSR graph (indptr not nondecreasing within [0, len(indices)], or an index outside [0, n))");
  return depth;
}

template <BfsFn<std::int32_t> fn32, BfsFn<std::int64_t> fn64>
void def_bfs(py::module_& b, const char* name) {
  b.def(name, &bfs<std::int64_t, fn64>, py::arg("indptr").noconvert(), py::arg("indices").noconvert(),
        py::arg("source"));
  b.def(name, &bfs<std::int32_t, fn32>, py::arg("indptr").noconvert(), py::arg("indices").noconvert(),
        py::arg("source"));
}
// ---- end bfs ----

}  // namespace

PYBIND11_MODULE(_variants, m) {
  m.doc() = "nitro's compiled code variants";
  py::module_ h = m.def_submodule("histogram", "256-bin histograms of uint8 data");
  h.attr("BINS") = nitro::kHistogramBins;
  h.def("sort_even", &histogram<nitro::histogram_sort_even>, py::arg("data").noconvert());
  h.def("sort_dynamic", &histogram<nitro::histogram_sort_dynamic>, py::arg("data").noconvert());
  h.def("global_atomic_even", &histogram<nitro::histogram_global_atomic_even>,
        py::arg("data").noconvert());
  h.def("global_atomic_dynamic", &histogram<nitro::histogram_global_atomic_dynamic>,
        py::arg("data").noconvert());
  h.def("shared_atomic_even", &histogram<nitro::histogram_shared_atomic_even>,
        py::arg("data").noconvert());
  h.def("shared_atomic_dynamic", &histogram<nitro::histogram_shared_atomic_dynamic>,
        py::arg("data").noconvert());
  // ---- bfs ----
  py::module_ bfs_m = m.def_submodule("bfs", "BFS depths from CSR graphs (int32/int64 indptr, int32 indices)");
#define NITRO_DEF_BFS(name) \
  def_bfs<nitro::bfs_##name<std::int32_t>, nitro::bfs_##name<std::int64_t>>(bfs_m, #name);
  NITRO_DEF_BFS(serial_queue)
  NITRO_DEF_BFS(expand_contract_fused)
  NITRO_DEF_BFS(expand_contract_iterative)
  NITRO_DEF_BFS(contract_expand_fused)
  NITRO_DEF_BFS(contract_expand_iterative)
  NITRO_DEF_BFS(two_phase_fused)
  NITRO_DEF_BFS(two_phase_iterative)
#undef NITRO_DEF_BFS
  // ---- end bfs ----
  py::module_ mb = m.def_submodule("microbench", "one timed repetition of each CPU microbenchmark");
  namespace nm = nitro::microbench;
  const auto released = py::call_guard<py::gil_scoped_release>();
  mb.def("atomic_contended_ns", &nm::atomic_contended_ns, py::arg("increments_per_thread"), released);
  mb.def("atomic_uncontended_ns", &nm::atomic_uncontended_ns, py::arg("increments_per_thread"), released);
  mb.def("stream_triad_gbps", &nm::stream_triad_gbps, py::arg("n"), released);
  mb.def("peak_gflops_dp", &nm::peak_gflops_dp, py::arg("iterations"), released);
  mb.def("peak_gflops_sp", &nm::peak_gflops_sp, py::arg("iterations"), released);
  py::module_ px = m.def_submodule("proxies", "CPU application proxies: run(kind, phi, n) -> ops of that kind");
  using nitro::proxies::Kind;
  py::enum_<Kind>(px, "Kind")
      .value("SP_GFLOP", Kind::SpFlop).value("DP_GFLOP", Kind::DpFlop).value("ATOMIC", Kind::Atomic)
      .value("MEM_BW", Kind::MemBw).value("SH_MEM_BW", Kind::ShMemBw);
  px.def("run", &nitro::proxies::run, py::arg("kind"), py::arg("phi"), py::arg("n"), released);
#ifdef NITRO_WITH_CUDA
  m.attr("HAVE_CUDA") = true;
#else
  m.attr("HAVE_CUDA") = false;
#endif
}
