// Thin pybind11 layer: NumPy arrays in (zero-copy), NumPy arrays out, GIL released.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include "cpu_microbench.hpp"
#include "callgrind_markers.hpp"
#include "cpu_proxies.hpp"
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
  // ---- profiling ----
  py::module_ pr = m.def_submodule("profiling", "callgrind client requests bracketing a profiled call");
  pr.def("available", &nitro::profiling::available);
  pr.def("start", &nitro::profiling::start);
  pr.def("stop", &nitro::profiling::stop);
  pr.def("dump", &nitro::profiling::dump);
#ifdef NITRO_WITH_CUDA
  m.attr("HAVE_CUDA") = true;
#else
  m.attr("HAVE_CUDA") = false;
#endif
}
