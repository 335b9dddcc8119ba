// Thin pybind11 layer: NumPy arrays in (zero-copy), NumPy arrays out, GIL released.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include "cpu_microbench.hpp"
#include "cpu_proxies.hpp"
#include "histogram.hpp"
#include "sort.hpp"
#include "transpose.hpp"

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

// ---- sort ----
template <class T>
using KeyArray = py::array_t<T, py::array::c_style>;

template <class T, void (*fn)(const T*, std::size_t, T*)>
py::array_t<T> sorted_copy(const KeyArray<T>& keys) {
  const std::size_t n = static_cast<std::size_t>(keys.size());
  py::array_t<T> out(n);
  const T* in = keys.data();
  T* o = out.mutable_data();
  {
    py::gil_scoped_release release;
    fn(in, n, o);
  }
  return out;
}

template <class T>
py::array_t<T> radix_sorted_copy(const KeyArray<T>& keys, int digit_bits) {
  const std::size_t n = static_cast<std::size_t>(keys.size());
  py::array_t<T> out(n);
  const T* in = keys.data();
  T* o = out.mutable_data();
  {
    py::gil_scoped_release release;
    nitro::sort_radix<T>(in, n, o, digit_bits);
  }
  return out;
}

// ---- transpose ----
using TransposeFn = void (*)(double*, std::int64_t, std::int64_t);

template <TransposeFn fn>
void transpose_in_place(py::array_t<double, py::array::c_style> data, std::int64_t m, std::int64_t n) {
  if (m < 0 || n < 0 || data.size() != m * n)
    throw py::value_error("transpose: the buffer must hold exactly m * n float64 values");
  double* d = data.mutable_data();
  py::gil_scoped_release release;
  fn(d, m, n);
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
  // ---- sort ----
  py::module_ so = m.def_submodule("sort", "sorted copies of float32/float64 keys (NaNs last)");
  so.def("merge", &sorted_copy<float, nitro::sort_merge<float>>, py::arg("keys").noconvert());
  so.def("merge", &sorted_copy<double, nitro::sort_merge<double>>, py::arg("keys").noconvert());
  so.def("locality", &sorted_copy<float, nitro::sort_locality<float>>, py::arg("keys").noconvert());
  so.def("locality", &sorted_copy<double, nitro::sort_locality<double>>, py::arg("keys").noconvert());
  so.def("radix", &radix_sorted_copy<float>, py::arg("keys").noconvert(), py::arg("digit_bits"));
  so.def("radix", &radix_sorted_copy<double>, py::arg("keys").noconvert(), py::arg("digit_bits"));
  // ---- transpose ----
  py::module_ tr = m.def_submodule("transpose", "in-place transposition of an m x n row-major float64 buffer");
  tr.def("c2r", &transpose_in_place<nitro::transpose_c2r>, py::arg("data").noconvert(), py::arg("m"), py::arg("n"));
  tr.def("r2c", &transpose_in_place<nitro::transpose_r2c>, py::arg("data").noconvert(), py::arg("m"), py::arg("n"));
  tr.def("skinny_c2r", &transpose_in_place<nitro::transpose_skinny_c2r>, py::arg("data").noconvert(),
         py::arg("m"), py::arg("n"));
  tr.def("skinny_r2c", &transpose_in_place<nitro::transpose_skinny_r2c>, py::arg("data").noconvert(),
         py::arg("m"), py::arg("n"));
#ifdef NITRO_WITH_CUDA
  m.attr("HAVE_CUDA") = true;
#else
  m.attr("HAVE_CUDA") = false;
#endif
}
