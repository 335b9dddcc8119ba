// Compiled evaluators of exported selector models (nitro.model.SelectorModel), so that a
// dispatch costs about a microsecond instead of a NumPy or scikit-learn call. Each class
// repeats the arithmetic of the model's NumPy path; predict_one returns -1 for a feature
// vector it cannot take (wrong length, not a number, not finite), and the Python side then
// raises the error that names the problem.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <utility>
#include <vector>

namespace py = pybind11;

namespace {

using Vec = std::vector<double>;
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

Vec to_vec(const Mat& a) { return Vec(a.data(), a.data() + a.size()); }

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

  py::array_t<std::int64_t> predict_batch(const Mat& X) const {
    if (X.ndim() != 2 || static_cast<std::size_t>(X.shape(1)) != n_inputs)
      throw std::invalid_argument("predict_batch: X must have shape (n, " + std::to_string(n_inputs) + ")");
    const auto n = X.shape(0);
    py::array_t<std::int64_t> out(n);
    auto* o = out.mutable_data();
    const double* x = X.data();
    {
      py::gil_scoped_release release;
      for (py::ssize_t i = 0; i < n; ++i) o[i] = predict_row(x + i * n_inputs);
    }
    return out;
  }
};

class Constant final : public Model {
 public:
  Constant(std::size_t n, int label) : label_(label) { n_inputs = n; }
  int predict_row(const double*) const override { return label_; }
 private:
  int label_;
};

// One-versus-one RBF SVC as libsvm evaluates it: log1p of marked columns, standardise,
// exp(-gamma * |x - sv|^2) per support vector, one decision per class pair, majority vote
// with ties to the lower class index.
class Svc final : public Model {
 public:
  Svc(std::size_t n_in, const Mat& device, const std::vector<bool>& log_mask, const Mat& mean,
      const Mat& scale, double gamma, const Mat& sv, const Mat& coef_pairs, const Mat& intercept,
      std::vector<std::pair<int, int>> pairs, int n_classes)
      : dev_(to_vec(device)), log_(log_mask), mean_(to_vec(mean)), scale_(to_vec(scale)), gamma_(gamma),
        sv_(to_vec(sv)), w_(to_vec(coef_pairs)), b_(to_vec(intercept)), pairs_(std::move(pairs)),
        k_(n_classes) {
    n_inputs = n_in;
    d_ = n_in + dev_.size();
    n_sv_ = d_ ? sv_.size() / d_ : 0;
    if (log_.size() != d_ || mean_.size() != d_ || scale_.size() != d_ || sv_.size() != n_sv_ * d_ ||
        w_.size() != pairs_.size() * n_sv_ || b_.size() != pairs_.size())
      throw std::invalid_argument("Svc: inconsistent parameter shapes");
  }

  int predict_row(const double* in) const override {
    std::vector<double> x(d_), kv(n_sv_);
    for (std::size_t j = 0; j < d_; ++j) {
      double v = j < n_inputs ? in[j] : dev_[j - n_inputs];
      if (log_[j]) v = std::log1p(std::max(v, 0.0));
      x[j] = (v - mean_[j]) / scale_[j];
    }
    for (std::size_t s = 0; s < n_sv_; ++s) {
      const double* sv = &sv_[s * d_];
      double d2 = 0.0;
      for (std::size_t j = 0; j < d_; ++j) { const double t = x[j] - sv[j]; d2 += t * t; }
      kv[s] = std::exp(-gamma_ * d2);
    }
    std::vector<int> votes(k_, 0);
    for (std::size_t q = 0; q < pairs_.size(); ++q) {
      const double* w = &w_[q * n_sv_];
      double dec = b_[q];
      for (std::size_t s = 0; s < n_sv_; ++s) dec += w[s] * kv[s];
      ++votes[dec > 0 ? pairs_[q].first : pairs_[q].second];
    }
    return static_cast<int>(std::max_element(votes.begin(), votes.end()) - votes.begin());
  }

 private:
  Vec dev_;
  std::vector<bool> log_;
  Vec mean_, scale_;
  double gamma_;
  Vec sv_, w_, b_;
  std::vector<std::pair<int, int>> pairs_;
  int k_;
  std::size_t d_ = 0, n_sv_ = 0;
};

// Kernel regression of every variant's fraction of the optimum (nitro.learn.kron export):
// signed log, standardise, RBF against the centres, linear read-out, argmax.
class Kernel final : public Model {
 public:
  Kernel(const Mat& mean, const Mat& scale, double gamma, const Mat& centers, const Mat& weights, const Mat& offset)
      : mean_(to_vec(mean)), scale_(to_vec(scale)), gamma_(gamma), c_(to_vec(centers)), w_(to_vec(weights)),
        b_(to_vec(offset)) {
    n_inputs = mean_.size();
    k_ = b_.size();
    n_c_ = n_inputs ? c_.size() / n_inputs : 0;
    if (scale_.size() != n_inputs || c_.size() != n_c_ * n_inputs || w_.size() != n_c_ * k_ || k_ == 0)
      throw std::invalid_argument("Kernel: inconsistent parameter shapes");
  }

  int predict_row(const double* in) const override {
    std::vector<double> z(n_inputs), score(b_);
    for (std::size_t j = 0; j < n_inputs; ++j) {
      const double v = in[j];
      const double s = (v > 0) - (v < 0);
      z[j] = (s * std::log1p(std::fabs(v)) - mean_[j]) / scale_[j];
    }
    for (std::size_t c = 0; c < n_c_; ++c) {
      const double* ctr = &c_[c * n_inputs];
      double d2 = 0.0;
      for (std::size_t j = 0; j < n_inputs; ++j) { const double t = z[j] - ctr[j]; d2 += t * t; }
      const double kv = std::exp(-gamma_ * d2);
      const double* w = &w_[c * k_];
      for (std::size_t v = 0; v < k_; ++v) score[v] += kv * w[v];
    }
    return static_cast<int>(std::max_element(score.begin(), score.end()) - score.begin());
  }

 private:
  Vec mean_, scale_;
  double gamma_;
  Vec c_, w_, b_;
  std::size_t k_ = 0, n_c_ = 0;
};

}  // namespace

PYBIND11_MODULE(_selector, m) {
  m.doc() = "compiled evaluators of nitro's exported selector models";
  py::class_<Model>(m, "Model")
      .def("predict_one", &Model::predict_one, py::arg("values"),
           "variant index for one feature list/tuple, or -1 if it is not n finite numbers")
      .def("predict_batch", &Model::predict_batch, py::arg("X"), "variant index for each row of X")
      .def_readonly("n_inputs", &Model::n_inputs);
  py::class_<Constant, Model>(m, "Constant").def(py::init<std::size_t, int>(), py::arg("n_inputs"), py::arg("label"));
  py::class_<Svc, Model>(m, "Svc")
      .def(py::init<std::size_t, const Mat&, const std::vector<bool>&, const Mat&, const Mat&, double, const Mat&,
                    const Mat&, const Mat&, std::vector<std::pair<int, int>>, int>(),
           py::arg("n_inputs"), py::arg("device"), py::arg("log_mask"), py::arg("mean"), py::arg("scale"),
           py::arg("gamma"), py::arg("support_vectors"), py::arg("pair_weights"), py::arg("intercept"),
           py::arg("pairs"), py::arg("n_classes"));
  py::class_<Kernel, Model>(m, "Kernel")
      .def(py::init<const Mat&, const Mat&, double, const Mat&, const Mat&, const Mat&>(), py::arg("mean"),
           py::arg("scale"), py::arg("gamma"), py::arg("centers"), py::arg("weights"), py::arg("offset"));
}
