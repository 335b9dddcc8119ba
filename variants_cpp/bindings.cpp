// Thin pybind11 layer: NumPy arrays in (zero-copy), NumPy arrays out, GIL released.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <string>
#include <cstdint>

#include "cpu_microbench.hpp"
#include "callgrind_markers.hpp"
#include "cpu_proxies.hpp"
#include "bfs.hpp"
#include "histogram.hpp"
#include "spmv.hpp"
#ifdef NITRO_WITH_CUDA
#include "histogram_cuda.hpp"
#endif
#include "solver.hpp"
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

// ---- spmv ----
using I32Array = py::array_t<std::int32_t, py::array::c_style>;
using F64Array = py::array_t<double, py::array::c_style>;
using CsrFn = void (*)(std::int32_t, const std::int32_t*, const std::int32_t*, const double*,
                       const double*, double*);

void require(bool ok, const std::string& message) {
  if (!ok) throw py::value_error("spmv: " + message);
}

std::int32_t checked_rows(py::ssize_t n) {
  require(n >= 0 && n < (py::ssize_t{1} << 31), "more rows than int32 indices can address");
  return static_cast<std::int32_t>(n);
}

template <CsrFn fn>
F64Array spmv_csr(const I32Array& indptr, const I32Array& indices, const F64Array& data,
                  const F64Array& x) {
  require(indptr.ndim() == 1 && indptr.size() >= 1, "indptr needs n_rows + 1 entries");
  require(indices.size() == data.size(), "indices and data differ in length");
  require(indptr.data()[0] == 0 && indptr.data()[indptr.size() - 1] == data.size(),
          "indptr must start at 0 and end at the number of nonzeros");
  const std::int32_t n_rows = checked_rows(indptr.size() - 1);
  F64Array y(n_rows);
  const std::int32_t *p = indptr.data(), *c = indices.data();
  const double *v = data.data(), *xv = x.data();
  double* out = y.mutable_data();
  {
    py::gil_scoped_release release;
    fn(n_rows, p, c, v, xv, out);
  }
  return y;
}

F64Array spmv_ell(const I32Array& indices, const F64Array& data, const F64Array& x) {
  require(indices.ndim() == 2 && data.ndim() == 2 && indices.shape(0) == data.shape(0) &&
              indices.shape(1) == data.shape(1),
          "ELL indices and data must both have shape (width, n_rows)");
  const std::int32_t width = checked_rows(indices.shape(0)), n_rows = checked_rows(indices.shape(1));
  F64Array y(n_rows);
  const std::int32_t* c = indices.data();
  const double *v = data.data(), *xv = x.data();
  double* out = y.mutable_data();
  {
    py::gil_scoped_release release;
    nitro::spmv_ell(n_rows, width, c, v, xv, out);
  }
  return y;
}

F64Array spmv_dia(const I32Array& offsets, const F64Array& data, const F64Array& x) {
  require(offsets.ndim() == 1 && data.ndim() == 2 && data.shape(0) == offsets.size(),
          "DIA data must have shape (len(offsets), n_rows)");
  const std::int32_t n_diags = checked_rows(offsets.size()), n_rows = checked_rows(data.shape(1));
  const std::int32_t n_cols = checked_rows(x.size());
  F64Array y(n_rows);
  const std::int32_t* o = offsets.data();
  const double *v = data.data(), *xv = x.data();
  double* out = y.mutable_data();
  {
    py::gil_scoped_release release;
    nitro::spmv_dia(n_rows, n_cols, n_diags, o, v, xv, out);
  }
  return y;
}

F64Array spmv_coo(py::ssize_t n_rows_in, const I32Array& rows, const I32Array& cols,
                  const F64Array& data, const F64Array& x) {
  require(rows.size() == cols.size() && cols.size() == data.size(),
          "COO rows, cols and data differ in length");
  const std::int32_t n_rows = checked_rows(n_rows_in);
  F64Array y(n_rows);
  const std::int64_t nnz = data.size();
  const std::int32_t *r = rows.data(), *c = cols.data();
  const double *v = data.data(), *xv = x.data();
  double* out = y.mutable_data();
  {
    py::gil_scoped_release release;
    nitro::spmv_coo(n_rows, nnz, r, c, v, xv, out);
  }
  return y;
}
// ---- end spmv ----
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

// ---- transpose ----
using TransposeFn = void (*)(double*, std::int64_t, std::int64_t);

template <TransposeFn fn>
void transpose_in_place(py::array_t<double, py::array::c_style> data, std::int64_t m, std::int64_t n) {
  const std::int64_t size = data.size();  // m * n, compared by division: the product can overflow
  if (m < 0 || n < 0 || (m == 0 ? size != 0 : size % m != 0 || size / m != n))
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
  h.def("subsample_std", [](const U8Array& data, std::size_t samples) {
          return nitro::histogram_subsample_std(data.data(), static_cast<std::size_t>(data.size()), samples);
        }, py::arg("data").noconvert(), py::arg("samples") = 1024,
        "input feature: std of an evenly strided sample of about `samples` values");
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
  // ---- spmv ----
  py::module_ sp = m.def_submodule(
      "spmv", "y = A x in double precision by storage format (int32 indices; columns must be < len(x))");
  sp.def("csr_scalar", &spmv_csr<nitro::spmv_csr_scalar>, py::arg("indptr").noconvert(),
         py::arg("indices").noconvert(), py::arg("data").noconvert(), py::arg("x").noconvert());
  sp.def("csr_vector", &spmv_csr<nitro::spmv_csr_vector>, py::arg("indptr").noconvert(),
         py::arg("indices").noconvert(), py::arg("data").noconvert(), py::arg("x").noconvert());
  sp.def("ell", &spmv_ell, py::arg("indices").noconvert(), py::arg("data").noconvert(),
         py::arg("x").noconvert());
  sp.def("dia", &spmv_dia, py::arg("offsets").noconvert(), py::arg("data").noconvert(),
         py::arg("x").noconvert());
  sp.def("coo", &spmv_coo, py::arg("n_rows"), py::arg("rows").noconvert(), py::arg("cols").noconvert(),
         py::arg("data").noconvert(), py::arg("x").noconvert());
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
  // ---- sort ----
  py::module_ so = m.def_submodule("sort", "sorted copies of float32/float64 keys (NaNs last)");
  so.def("merge", &sorted_copy<float, nitro::sort_merge<float>>, py::arg("keys").noconvert());
  so.def("merge", &sorted_copy<double, nitro::sort_merge<double>>, py::arg("keys").noconvert());
  so.def("locality", &sorted_copy<float, nitro::sort_locality<float>>, py::arg("keys").noconvert());
  so.def("locality", &sorted_copy<double, nitro::sort_locality<double>>, py::arg("keys").noconvert());
  so.def("radix", &sorted_copy<float, nitro::sort_radix<float>>, py::arg("keys").noconvert());
  so.def("radix", &sorted_copy<double, nitro::sort_radix<double>>, py::arg("keys").noconvert());
#ifdef NITRO_WITH_HWY
  so.def("simd_sample", &sorted_copy<float, nitro::sort_simd_sample<float>>, py::arg("keys").noconvert());
  so.def("simd_sample", &sorted_copy<double, nitro::sort_simd_sample<double>>, py::arg("keys").noconvert());
#endif
  // ---- transpose ----
  py::module_ tr = m.def_submodule("transpose", "in-place transposition of an m x n row-major float64 buffer");
  tr.def("c2r", &transpose_in_place<nitro::transpose_c2r>, py::arg("data").noconvert(), py::arg("m"), py::arg("n"));
  tr.def("r2c", &transpose_in_place<nitro::transpose_r2c>, py::arg("data").noconvert(), py::arg("m"), py::arg("n"));
  tr.def("skinny_c2r", &transpose_in_place<nitro::transpose_skinny_c2r>, py::arg("data").noconvert(),
         py::arg("m"), py::arg("n"));
  tr.def("skinny_r2c", &transpose_in_place<nitro::transpose_skinny_r2c>, py::arg("data").noconvert(),
         py::arg("m"), py::arg("n"));
  // ---- profiling ----
  py::module_ pr = m.def_submodule("profiling", "callgrind client requests bracketing a profiled call");
  pr.def("available", &nitro::profiling::available);
  pr.def("start", &nitro::profiling::start);
  pr.def("stop", &nitro::profiling::stop);
  pr.def("dump", &nitro::profiling::dump);
#ifdef NITRO_WITH_CUDA
  py::module_ spc = m.def_submodule(
      "spmv_cuda", "CUDA y = A x; arguments are device pointers (ints) and sizes; waits for the kernel");
  spc.def("csr_scalar", &nitro::gpu::spmv_csr_scalar, py::arg("n_rows"), py::arg("indptr"),
          py::arg("indices"), py::arg("data"), py::arg("x"), py::arg("y"), released);
  spc.def("csr_vector", &nitro::gpu::spmv_csr_vector, py::arg("n_rows"), py::arg("indptr"),
          py::arg("indices"), py::arg("data"), py::arg("x"), py::arg("y"), released);
  spc.def("ell", &nitro::gpu::spmv_ell, py::arg("n_rows"), py::arg("width"), py::arg("indices"),
          py::arg("data"), py::arg("x"), py::arg("y"), released);
  spc.def("dia", &nitro::gpu::spmv_dia, py::arg("n_rows"), py::arg("n_cols"), py::arg("n_diags"),
          py::arg("offsets"), py::arg("data"), py::arg("x"), py::arg("y"), released);
#endif
  // ---- end spmv ----
#ifdef NITRO_WITH_CUDA
  // ---- histogram_cuda ----
  {
    py::module_ hc = m.def_submodule(
        "histogram_cuda", "256-bin histograms on an NVIDIA GPU: fn(data_ptr, n, bins_ptr, stream=0), device pointers");
    hc.attr("BINS") = nitro::cuda::kHistogramBins;
    hc.attr("MAX_ITEMS") = nitro::cuda::kMaxItems;
    namespace nc = nitro::cuda;
    const auto bind = [](py::module_& mod, const char* name, auto fn) {
      mod.def(name, fn, py::arg("data"), py::arg("n"), py::arg("bins"), py::arg("stream") = 0,
              py::call_guard<py::gil_scoped_release>());
    };
    bind(hc, "sort_even", &nc::histogram_sort_even);
    bind(hc, "sort_dynamic", &nc::histogram_sort_dynamic);
    bind(hc, "global_atomic_even", &nc::histogram_global_atomic_even);
    bind(hc, "global_atomic_dynamic", &nc::histogram_global_atomic_dynamic);
    bind(hc, "shared_atomic_even", &nc::histogram_shared_atomic_even);
    bind(hc, "shared_atomic_dynamic", &nc::histogram_shared_atomic_dynamic);
  }
  // ---- end histogram_cuda ----
  m.attr("HAVE_CUDA") = true;
#else
  m.attr("HAVE_CUDA") = false;
#endif
}
