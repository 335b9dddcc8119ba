// Thin pybind11 layer: NumPy arrays in (zero-copy), NumPy arrays out, GIL released.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include "cpu_microbench.hpp"
#include "cpu_proxies.hpp"
#include "histogram.hpp"
#include "solver.hpp"

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

// ---- solver ----
using I32Array = py::array_t<std::int32_t, py::array::c_style>;
using F64Array = py::array_t<double, py::array::c_style>;

// (x, status, iterations, relative residual); shapes are validated in nitro.benchmarks.solver.
template <nitro::solver::Method method, nitro::solver::Preconditioner precond>
py::tuple solve(const I32Array& indptr, const I32Array& indices, const F64Array& data, const F64Array& b,
                double tol, std::int64_t max_iter) {
  const nitro::solver::Csr A{static_cast<std::int64_t>(b.size()), indptr.data(), indices.data(), data.data()};
  F64Array x(b.size());
  double* out = x.mutable_data();
  const double* rhs = b.data();
  nitro::solver::SolveInfo info;
  {
    py::gil_scoped_release release;
    info = nitro::solver::solve(A, rhs, out, method, precond, tol, max_iter);
  }
  return py::make_tuple(x, static_cast<int>(info.status), info.iterations, info.relative_residual);
}

template <typename Fn>
void def_solver(py::module_& m, const char* name, Fn fn) {
  m.def(name, fn, py::arg("indptr").noconvert(), py::arg("indices").noconvert(), py::arg("data").noconvert(),
        py::arg("b").noconvert(), py::arg("tol"), py::arg("max_iter"));
}
// ---- end solver ----

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
  // ---- solver ----
  {
    py::module_ sv = m.def_submodule("solver", "CG/BiCGStab with Jacobi, block-Jacobi, Neumann preconditioners");
    using nitro::solver::Method;
    using nitro::solver::Preconditioner;
    sv.attr("BLOCK_SIZE") = nitro::solver::kSolverBlockSize;
    def_solver(sv, "cg_jacobi", &solve<Method::CG, Preconditioner::Jacobi>);
    def_solver(sv, "cg_block_jacobi", &solve<Method::CG, Preconditioner::BlockJacobi>);
    def_solver(sv, "cg_neumann", &solve<Method::CG, Preconditioner::Neumann>);
    def_solver(sv, "bicgstab_jacobi", &solve<Method::BiCGStab, Preconditioner::Jacobi>);
    def_solver(sv, "bicgstab_block_jacobi", &solve<Method::BiCGStab, Preconditioner::BlockJacobi>);
    def_solver(sv, "bicgstab_neumann", &solve<Method::BiCGStab, Preconditioner::Neumann>);
  }
  // ---- end solver ----
#ifdef NITRO_WITH_CUDA
  m.attr("HAVE_CUDA") = true;
#else
  m.attr("HAVE_CUDA") = false;
#endif
}
