// Compiled evaluators of exported selector models (nitro.model.SelectorModel), so that a
// dispatch costs about a microsecond instead of a NumPy or scikit-learn call. The arithmetic
// is nitro/selector_eval.hpp's (shared with the headers of `nitro export-cpp`); each class here
// only owns the model's arrays in the layout that file wants and reads Python values.
// predict_one returns -1 for a feature vector it cannot take (wrong length, not a number, not
// finite), and the Python side then raises the error that names the problem; predict_batch gives
// -1 for such a row. The models are built from plain lists (matrices flattened row-major, checked
// by nitro/model_params.py), so that loading one and dispatching never imports NumPy; only
// predict_batch takes an array.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <utility>
#include <vector>

// The RBF evaluators get an AVX2 clone and a baseline one, chosen when the module loads: the
// module runs on any x86-64 CPU. AVX2 without FMA, so both clones round alike.
#if defined(__GNUC__) && defined(__x86_64__) && !defined(__clang__)
#define NITRO_EVAL_CLONES __attribute__((target_clones("avx2", "default")))
#endif
#include "selector_eval.hpp"

namespace py = pybind11;

namespace {

using Vec = std::vector<double>;
using IVec = std::vector<std::int64_t>;
using Mat = py::array_t<double, py::array::c_style | py::array::forcecast>;

// Reads a Python list/tuple of numbers into out[0..n); false if it is not one of n finite floats.
bool read_values(py::handle values, std::size_t n, double* out) {
  PyObject* seq = values.ptr();
  const bool is_list = PyList_Check(seq);
  if (!is_list && !PyTuple_Check(seq)) return false;
  const Py_ssize_t len = is_list ? PyList_GET_SIZE(seq) : PyTuple_GET_SIZE(seq);
  if (static_cast<std::size_t>(len) != n) return false;
  for (Py_ssize_t i = 0; i < len; ++i) {
    PyObject* item = is_list ? PyList_GET_ITEM(seq, i) : PyTuple_GET_ITEM(seq, i);
    double v;
    if (PyFloat_Check(item)) {  // float and its subclasses (numpy.float64)
      v = PyFloat_AS_DOUBLE(item);
    } else if (PyLong_Check(item) && !PyBool_Check(item)) {
      v = PyLong_AsDouble(item);
      if (v == -1.0 && PyErr_Occurred()) { PyErr_Clear(); return false; }
    } else {
      return false;
    }
    if (!std::isfinite(v)) return false;
    out[i] = v;
  }
  return true;
}

class Model {
 public:
  virtual ~Model() = default;
  virtual int predict_row(const double* x) const = 0;
  std::size_t n_inputs = 0;

  int predict_one(py::handle values) const {
    double x[64];
    std::vector<double> big;
    double* buf = x;
    if (n_inputs > 64) { big.resize(n_inputs); buf = big.data(); }
    if (!read_values(values, n_inputs, buf)) return -1;
    return predict_row(buf);
  }

  // Scores whose argmax is the choice (SelectorModel.scores), for the kinds that have them
  // here; false otherwise (the Python side then scores with NumPy).
  virtual bool score_row(const double*, double*) const { return false; }
  std::size_t n_scores = 0;

  // One input's scores as a list, or None when this kind has no compiled scores or the
  // values are not n finite numbers (refining mode scores its candidate calls with it).
  py::object scores_one(py::handle values) const {
    std::vector<double> x(n_inputs), s(n_scores);
    if (!n_scores || !read_values(values, n_inputs, x.data()) || !score_row(x.data(), s.data())) return py::none();
    py::list out(s.size());
    for (std::size_t i = 0; i < s.size(); ++i) out[i] = s[i];
    return out;
  }

  py::array_t<std::int64_t> predict_batch(const Mat& X) const {
    if (X.ndim() != 2 || static_cast<std::size_t>(X.shape(1)) != n_inputs)
      throw std::invalid_argument("predict_batch: X must have shape (n, " + std::to_string(n_inputs) + ")");
    const auto n = X.shape(0);
    py::array_t<std::int64_t> out(n);
    auto* o = out.mutable_data();
    const double* x = X.data();
    {
      py::gil_scoped_release release;
      for (py::ssize_t i = 0; i < n; ++i) {  // -1 for a row with a value that is not finite, as predict_one
        const double* row = x + i * n_inputs;
        o[i] = std::all_of(row, row + n_inputs, [](double v) { return std::isfinite(v); }) ? predict_row(row) : -1;
      }
    }
    return out;
  }
};

// Scratch memory of the evaluators, one buffer per thread, grown once and reused: no call
// allocates after the first (predict_batch releases the GIL, so threads may evaluate at once).
double* scratch(std::size_t n) {
  thread_local std::vector<double> buf;
  if (buf.size() < n) buf.resize(n);
  return buf.data();
}

// A (rows × cols) row-major array transposed to (cols × rows): the feature-major layout of the
// RBF centres and the variant-major layout of the kernel weights (see selector_eval.hpp).
Vec transposed(const Vec& a, std::size_t rows, std::size_t cols) {
  Vec t(a.size());
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t c = 0; c < cols; ++c) t[c * rows + r] = a[r * cols + c];
  return t;
}

std::vector<unsigned char> bytes_of(const std::vector<bool>& mask) { return {mask.begin(), mask.end()}; }

// 1 / each column's unit (divided before its logarithm), or empty when every unit is 1 so
// that the dispatch path does no scaling; throws when there are not n units.
Vec inverse_units(const Vec& unit, std::size_t n, const char* model) {
  if (unit.size() != n) throw std::invalid_argument(std::string(model) + ": one unit per column expected");
  Vec inv;
  for (double u : unit)
    if (u != 1.0) {
      for (double v : unit) inv.push_back(1.0 / v);
      break;
    }
  return inv;
}

const double* or_null(const Vec& v) { return v.empty() ? nullptr : v.data(); }

class Constant final : public Model {
 public:
  Constant(std::size_t n, int label) : label_(label) { n_inputs = n; }
  int predict_row(const double*) const override { return label_; }
 private:
  int label_;
};

// One-versus-one RBF SVC as libsvm evaluates it (nitro_eval_v2::svc_predict), from the model's
// own parameters: support vectors grouped by class (n_support), libsvm's dual_coef layout.
class Svc final : public Model {
 public:
  Svc(std::size_t n_in, Vec device, const std::vector<bool>& log_mask, Vec mean, Vec scale, double gamma,
      const Vec& sv, const std::vector<std::size_t>& n_support, Vec dual_coef, Vec intercept, const Vec& unit)
      : dev_(std::move(device)), log_(bytes_of(log_mask)), mean_(std::move(mean)), scale_(std::move(scale)),
        coef_(std::move(dual_coef)), b_(std::move(intercept)) {
    n_inputs = n_in;
    const std::size_t d = n_in + dev_.size(), k = n_support.size();
    const std::size_t n_sv = d ? sv.size() / d : 0;
    start_.assign(1, 0);
    for (std::size_t n : n_support) start_.push_back(start_.back() + n);
    if (k < 2 || log_.size() != d || mean_.size() != d || scale_.size() != d || sv.size() != n_sv * d ||
        start_.back() != n_sv || coef_.size() != (k - 1) * n_sv || b_.size() != k * (k - 1) / 2)
      throw std::invalid_argument("Svc: inconsistent parameter shapes");
    if (!(gamma >= 0)) throw std::invalid_argument("Svc: gamma must be >= 0");
    sv_t_ = transposed(sv, n_sv, d);
    inv_unit_ = inverse_units(unit, d, "Svc");
    m_ = {n_in, dev_.size(), dev_.data(), log_.data(), mean_.data(), scale_.data(), gamma, n_sv, sv_t_.data(),
          k, start_.data(), coef_.data(), b_.data(), or_null(inv_unit_)};
  }

  int predict_row(const double* in) const override {
    return nitro_eval_v2::svc_predict(m_, in, scratch(nitro_eval_v2::svc_work_size(m_)));
  }

 private:
  Vec dev_;
  std::vector<unsigned char> log_;
  Vec mean_, scale_, coef_, b_, sv_t_, inv_unit_;
  std::vector<std::size_t> start_;
  nitro_eval_v2::SvcModel m_{};
};

// Kernel regression of every variant's fraction of the optimum (nitro.learn.kron export):
// signed log, standardise, RBF against the centres, linear read-out, argmax.
class Kernel final : public Model {
 public:
  Kernel(Vec mean, Vec scale, double gamma, const Vec& centers, const Vec& weights, Vec offset, const Vec& unit)
      : mean_(std::move(mean)), scale_(std::move(scale)), b_(std::move(offset)) {
    n_inputs = mean_.size();
    const std::size_t k = b_.size();
    const std::size_t n_c = n_inputs ? centers.size() / n_inputs : 0;
    if (scale_.size() != n_inputs || centers.size() != n_c * n_inputs || weights.size() != n_c * k || k == 0)
      throw std::invalid_argument("Kernel: inconsistent parameter shapes");
    if (!(gamma >= 0)) throw std::invalid_argument("Kernel: gamma must be >= 0");
    c_t_ = transposed(centers, n_c, n_inputs);
    w_t_ = transposed(weights, n_c, k);
    inv_unit_ = inverse_units(unit, n_inputs, "Kernel");
    m_ = {n_inputs, n_c, k, mean_.data(), scale_.data(), gamma, c_t_.data(), w_t_.data(), b_.data(),
          or_null(inv_unit_)};
    n_scores = k;
  }

  bool score_row(const double* in, double* score) const override {
    nitro_eval_v2::kernel_scores(m_, in, score, scratch(nitro_eval_v2::kernel_work_size(m_)));
    return true;
  }

  int predict_row(const double* in) const override {
    return nitro_eval_v2::kernel_predict(m_, in, scratch(nitro_eval_v2::kernel_work_size(m_) + m_.n_variants));
  }

 private:
  Vec mean_, scale_, b_, c_t_, w_t_, inv_unit_;
  nitro_eval_v2::KernelModel m_{};
};

// Base of the kinds that see the row [input features ∘ device features].
class WithDevice : public Model {
 protected:
  WithDevice(std::size_t n_in, Vec device) : dev_(std::move(device)) { n_inputs = n_in; }
  std::size_t width() const { return n_inputs + dev_.size(); }
  Vec dev_;
};

// Regression trees in scikit-learn's arrays, padded to one table (n_trees × n_nodes, given
// flattened), checked so that a traversal ends (children after their parent); view() for nitro_eval_v2.
struct Trees {
  IVec cl, cr, f;
  Vec thr, value;
  std::size_t n_trees = 0, n_nodes = 0, value_width = 0;
  Trees(std::size_t trees, IVec left, IVec right, IVec feature, Vec threshold, Vec values, std::size_t width)
      : cl(std::move(left)), cr(std::move(right)), f(std::move(feature)), thr(std::move(threshold)),
        value(std::move(values)), n_trees(trees) {
    n_nodes = n_trees ? cl.size() / n_trees : 0;
    const std::size_t n = n_trees * n_nodes;
    if (!n || cl.size() != n || cr.size() != n || f.size() != n || thr.size() != n || value.size() % n)
      throw std::invalid_argument("Trees: inconsistent parameter shapes");
    value_width = value.size() / n;
    const auto nn = static_cast<std::int64_t>(n_nodes);
    for (std::size_t i = 0; i < n; ++i) {
      const auto at = static_cast<std::int64_t>(i % n_nodes);
      if (cl[i] >= 0 && (cl[i] <= at || cl[i] >= nn || cr[i] <= at || cr[i] >= nn))
        throw std::invalid_argument("Trees: a child does not follow its parent");
      if (cl[i] >= 0 && (f[i] < 0 || static_cast<std::size_t>(f[i]) >= width))
        throw std::invalid_argument("Trees: a split names a feature outside the row");
    }
  }
  nitro_eval_v2::Trees view() const {
    return {n_trees, n_nodes, value_width, cl.data(), cr.data(), f.data(), thr.data(), value.data()};
  }
};

// One tree whose leaves hold a cost per variant: argmin.
class Tree final : public WithDevice {
 public:
  Tree(std::size_t n_in, Vec device, IVec cl, IVec cr, IVec f, Vec thr, Vec value, bool f32)
      : WithDevice(n_in, std::move(device)),
        trees_(1, std::move(cl), std::move(cr), std::move(f), std::move(thr), std::move(value), width()) {
    m_ = {n_inputs, dev_.size(), dev_.data(), trees_.view(), f32};
  }
  int predict_row(const double* in) const override {
    return nitro_eval_v2::tree_predict(m_, in, scratch(nitro_eval_v2::tree_work_size(m_)));
  }
 private:
  Trees trees_;
  nitro_eval_v2::TreeModel m_{};
};

// Boosted trees over [x ∘ code of variant]: init + Σ lr·leaf, summed in order; argmax.
class Gbt final : public WithDevice {
 public:
  // codes: (n_variants × q) flattened
  // variant_start: empty (every tree scores every variant), or n_variants + 1 ascending tree offsets
  Gbt(std::size_t n_in, Vec device, std::size_t n_trees, IVec cl, IVec cr, IVec f, Vec thr, Vec value, double lr,
      double init, Vec codes, std::size_t n_variants, bool f32, std::vector<std::size_t> variant_start)
      : WithDevice(n_in, std::move(device)),
        trees_(n_trees, std::move(cl), std::move(cr), std::move(f), std::move(thr), std::move(value),
               width() + (n_variants ? codes.size() / n_variants : 0)),
        codes_(std::move(codes)), start_(std::move(variant_start)) {
    if (n_variants == 0 || codes_.size() % n_variants) throw std::invalid_argument("Gbt: codes must be (n_variants, q)");
    if (!start_.empty() && (start_.size() != n_variants + 1 || start_.front() != 0 || start_.back() != n_trees ||
                            !std::is_sorted(start_.begin(), start_.end())))
      throw std::invalid_argument("Gbt: variant_start must be n_variants + 1 ascending offsets from 0 to n_trees");
    m_ = {n_inputs, dev_.size(), dev_.data(), trees_.view(), lr, init, n_variants, codes_.size() / n_variants,
          codes_.data(), f32, start_.empty() ? nullptr : start_.data()};
    n_scores = n_variants;
  }
  bool score_row(const double* in, double* score) const override {
    nitro_eval_v2::gbt_scores(m_, in, scratch(nitro_eval_v2::gbt_work_size(m_)), score);
    return true;
  }
  int predict_row(const double* in) const override {
    return nitro_eval_v2::gbt_predict(m_, in, scratch(nitro_eval_v2::gbt_work_size(m_)));
  }
 private:
  Trees trees_;
  Vec codes_;
  std::vector<std::size_t> start_;
  nitro_eval_v2::GbtModel m_{};
};

// Linear scores of the standardised (partly log1p) row: argmax or argmin.
class Linear final : public WithDevice {
 public:
  Linear(std::size_t n_in, Vec device, const std::vector<bool>& log_mask, Vec mean, Vec scale, Vec coef,
         Vec intercept, bool choose_max, const Vec& unit)
      : WithDevice(n_in, std::move(device)), log_(bytes_of(log_mask)), mean_(std::move(mean)),
        scale_(std::move(scale)), coef_(std::move(coef)), b_(std::move(intercept)) {
    const std::size_t d = width();
    if (log_.size() != d || mean_.size() != d || scale_.size() != d || b_.empty() || coef_.size() != d * b_.size())
      throw std::invalid_argument("Linear: inconsistent parameter shapes");
    inv_unit_ = inverse_units(unit, d, "Linear");
    m_ = {n_inputs, dev_.size(), dev_.data(), log_.data(), mean_.data(), scale_.data(), b_.size(), coef_.data(),
          b_.data(), choose_max, or_null(inv_unit_)};
  }
  int predict_row(const double* in) const override {
    return nitro_eval_v2::linear_predict(m_, in, scratch(nitro_eval_v2::linear_work_size(m_)));
  }
 private:
  std::vector<unsigned char> log_;
  Vec mean_, scale_, coef_, b_, inv_unit_;
  nitro_eval_v2::LinearModel m_{};
};

// Futhark-style threshold rule: labels[number of thresholds <= x[feature]].
class Intervals final : public WithDevice {
 public:
  Intervals(std::size_t n_in, Vec device, std::size_t feature, Vec thresholds, std::vector<int> labels)
      : WithDevice(n_in, std::move(device)), thr_(std::move(thresholds)), labels_(std::move(labels)) {
    if (feature >= width() || labels_.size() != thr_.size() + 1)
      throw std::invalid_argument("Intervals: inconsistent parameters");
    m_ = {n_inputs, dev_.size(), dev_.data(), feature, thr_.size(), thr_.data(), labels_.data()};
  }
  int predict_row(const double* in) const override { return nitro_eval_v2::intervals_predict(m_, in); }
 private:
  Vec thr_;
  std::vector<int> labels_;
  nitro_eval_v2::IntervalsModel m_{};
};

}  // namespace

PYBIND11_MODULE(_selector, m) {
  m.doc() = "compiled evaluators of nitro's exported selector models";
  py::class_<Model>(m, "Model")
      .def("predict_one", &Model::predict_one, py::arg("values"),
           "variant index for one feature list/tuple, or -1 if it is not n finite numbers")
      .def("predict_batch", &Model::predict_batch, py::arg("X"), "variant index for each row of X")
      .def("scores_one", &Model::scores_one, py::arg("values"),
           "scores (argmax = choice) for one feature list/tuple, or None (kind without compiled scores, bad values)")
      .def_readonly("n_inputs", &Model::n_inputs);
  py::class_<Constant, Model>(m, "Constant").def(py::init<std::size_t, int>(), py::arg("n_inputs"), py::arg("label"));
  // matrices are given flattened row-major (support_vectors: n_sv × width, dual_coef: (k-1) × n_sv,
  // centers: n_centers × n_inputs, weights: n_centers × k, trees: n_trees × n_nodes, codes: k × q)
  py::class_<Svc, Model>(m, "Svc")
      .def(py::init<std::size_t, Vec, const std::vector<bool>&, Vec, Vec, double, const Vec&,
                    const std::vector<std::size_t>&, Vec, Vec, const Vec&>(),
           py::arg("n_inputs"), py::arg("device"), py::arg("log_mask"), py::arg("mean"), py::arg("scale"),
           py::arg("gamma"), py::arg("support_vectors"), py::arg("n_support"), py::arg("dual_coef"),
           py::arg("intercept"), py::arg("unit"));
  py::class_<Kernel, Model>(m, "Kernel")
      .def(py::init<Vec, Vec, double, const Vec&, const Vec&, Vec, const Vec&>(), py::arg("mean"),
           py::arg("scale"), py::arg("gamma"), py::arg("centers"), py::arg("weights"), py::arg("offset"),
           py::arg("unit"));
  py::class_<Tree, Model>(m, "Tree").def(
      py::init<std::size_t, Vec, IVec, IVec, IVec, Vec, Vec, bool>(),
      py::arg("n_inputs"), py::arg("device"), py::arg("children_left"), py::arg("children_right"), py::arg("feature"),
      py::arg("threshold"), py::arg("value"), py::arg("float32"));
  py::class_<Gbt, Model>(m, "Gbt").def(
      py::init<std::size_t, Vec, std::size_t, IVec, IVec, IVec, Vec, Vec, double, double, Vec, std::size_t, bool,
               std::vector<std::size_t>>(),
      py::arg("n_inputs"), py::arg("device"), py::arg("n_trees"), py::arg("children_left"), py::arg("children_right"),
      py::arg("feature"), py::arg("threshold"), py::arg("value"), py::arg("learning_rate"), py::arg("init"),
      py::arg("codes"), py::arg("n_variants"), py::arg("float32"),
      py::arg("variant_start") = std::vector<std::size_t>{});
  py::class_<Linear, Model>(m, "Linear").def(
      py::init<std::size_t, Vec, const std::vector<bool>&, Vec, Vec, Vec, Vec, bool, const Vec&>(),
      py::arg("n_inputs"), py::arg("device"), py::arg("log_mask"), py::arg("mean"), py::arg("scale"), py::arg("coef"),
      py::arg("intercept"), py::arg("choose_max"), py::arg("unit"));
  py::class_<Intervals, Model>(m, "Intervals").def(
      py::init<std::size_t, Vec, std::size_t, Vec, std::vector<int>>(), py::arg("n_inputs"),
      py::arg("device"), py::arg("feature"), py::arg("thresholds"), py::arg("labels"));
}
