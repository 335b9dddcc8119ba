// Thin pybind11 layer: NumPy arrays in (zero-copy), NumPy arrays out, GIL released.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

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
#ifdef NITRO_WITH_CUDA
  m.attr("HAVE_CUDA") = true;
#else
  m.attr("HAVE_CUDA") = false;
#endif
}
