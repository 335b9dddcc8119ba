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
    n_scores = k_;
  }

  bool score_row(const double* in, double* score) const override {
    std::vector<double> z(n_inputs);
    for (std::size_t j = 0; j < n_inputs; ++j) {
      const double v = in[j];
      const double s = (v > 0) - (v < 0);
      z[j] = (s * std::log1p(std::fabs(v)) - mean_[j]) / scale_[j];
    }
    std::copy(b_.begin(), b_.end(), score);
    for (std::size_t c = 0; c < n_c_; ++c) {
      const double* ctr = &c_[c * n_inputs];
      double d2 = 0.0;
      for (std::size_t j = 0; j < n_inputs; ++j) { const double t = z[j] - ctr[j]; d2 += t * t; }
      const double kv = std::exp(-gamma_ * d2);
      const double* w = &w_[c * k_];
      for (std::size_t v = 0; v < k_; ++v) score[v] += kv * w[v];
    }
    return true;
  }

  int predict_row(const double* in) const override {
    std::vector<double> score(k_);
    score_row(in, score.data());
    return static_cast<int>(std::max_element(score.begin(), score.end()) - score.begin());
  }

 private:
  Vec mean_, scale_;
  double gamma_;
  Vec c_, w_, b_;
  std::size_t k_ = 0, n_c_ = 0;
};

// Base of the kinds that see the row [input features ∘ device features].
class WithDevice : public Model {
 protected:
  WithDevice(std::size_t n_in, const Mat& device) : dev_(to_vec(device)) { n_inputs = n_in; }
  void row(const double* in, double* x) const {
    std::copy(in, in + n_inputs, x);
    std::copy(dev_.begin(), dev_.end(), x + n_inputs);
  }
  std::size_t width() const { return n_inputs + dev_.size(); }
  Vec dev_;
};

using IMat = py::array_t<std::int64_t, py::array::c_style | py::array::forcecast>;

// Regression trees in scikit-learn's arrays, padded to one table (n_trees × n_nodes): the
// leaf reached by a row, comparing x[feature] <= threshold (x rounded to float32 if asked).
struct Trees {
  std::vector<std::int64_t> cl, cr, f;
  Vec thr, value;
  std::size_t n_trees = 0, n_nodes = 0, value_width = 0;
  Trees(const IMat& left, const IMat& right, const IMat& feature, const Mat& threshold, const Mat& values)
      : cl(left.data(), left.data() + left.size()), cr(right.data(), right.data() + right.size()),
        f(feature.data(), feature.data() + feature.size()), thr(to_vec(threshold)), value(to_vec(values)) {
    if (left.ndim() != 2) throw std::invalid_argument("Trees: node tables must be (n_trees, n_nodes)");
    n_trees = left.shape(0);
    n_nodes = left.shape(1);
    const std::size_t n = n_trees * n_nodes;
    if (!n || cr.size() != n || f.size() != n || thr.size() != n || value.size() % n)
      throw std::invalid_argument("Trees: inconsistent parameter shapes");
    value_width = value.size() / n;
    for (std::size_t i = 0; i < n; ++i)  // children after their parent: traversal ends
      if (cl[i] >= 0 && (cl[i] <= static_cast<std::int64_t>(i % n_nodes) || cl[i] >= static_cast<std::int64_t>(n_nodes) ||
                         cr[i] <= static_cast<std::int64_t>(i % n_nodes) || cr[i] >= static_cast<std::int64_t>(n_nodes)))
        throw std::invalid_argument("Trees: a child does not follow its parent");
  }
  const double* leaf(std::size_t t, const double* x) const {
    std::size_t node = 0;
    const std::size_t base = t * n_nodes;
    while (cl[base + node] >= 0)
      node = static_cast<std::size_t>(x[f[base + node]] <= thr[base + node] ? cl[base + node] : cr[base + node]);
    return &value[(base + node) * value_width];
  }
};

// One tree whose leaves hold a cost per variant: argmin.
class Tree final : public WithDevice {
 public:
  Tree(std::size_t n_in, const Mat& device, const IMat& cl, const IMat& cr, const IMat& f, const Mat& thr,
       const Mat& value, bool f32)
      : WithDevice(n_in, device), trees_(cl, cr, f, thr, value), f32_(f32) {}
  int predict_row(const double* in) const override {
    std::vector<double> x(width());
    row(in, x.data());
    if (f32_) for (auto& v : x) v = static_cast<double>(static_cast<float>(v));
    const double* v = trees_.leaf(0, x.data());
    return static_cast<int>(std::min_element(v, v + trees_.value_width) - v);
  }
 private:
  Trees trees_;
  bool f32_;
};

// Boosted trees over [x ∘ code of variant]: init + Σ lr·leaf, summed in order; argmax.
class Gbt final : public WithDevice {
 public:
  Gbt(std::size_t n_in, const Mat& device, const IMat& cl, const IMat& cr, const IMat& f, const Mat& thr,
      const Mat& value, double lr, double init, const Mat& codes, bool f32)
      : WithDevice(n_in, device), trees_(cl, cr, f, thr, value), lr_(lr), init_(init), codes_(to_vec(codes)),
        f32_(f32) {
    if (codes.ndim() != 2 || codes.shape(0) == 0) throw std::invalid_argument("Gbt: codes must be (n_variants, q)");
    k_ = codes.shape(0);
    q_ = codes.shape(1);
  }
  int predict_row(const double* in) const override {
    std::vector<double> x(width() + q_);
    row(in, x.data());
    int best = 0;
    double best_score = 0.0;
    for (std::size_t v = 0; v < k_; ++v) {
      std::copy(&codes_[v * q_], &codes_[v * q_] + q_, x.begin() + width());
      std::vector<double> r(x);
      if (f32_) for (auto& e : r) e = static_cast<double>(static_cast<float>(e));
      double s = init_;
      for (std::size_t t = 0; t < trees_.n_trees; ++t) s += lr_ * trees_.leaf(t, r.data())[0];
      if (v == 0 || s > best_score) { best = static_cast<int>(v); best_score = s; }
    }
    return best;
  }
 private:
  Trees trees_;
  double lr_, init_;
  Vec codes_;
  bool f32_;
  std::size_t k_ = 0, q_ = 0;
};

// Linear scores of the standardised (partly log1p) row: argmax or argmin.
class Linear final : public WithDevice {
 public:
  Linear(std::size_t n_in, const Mat& device, const std::vector<bool>& log_mask, const Mat& mean, const Mat& scale,
         const Mat& coef, const Mat& intercept, bool choose_max)
      : WithDevice(n_in, device), log_(log_mask), mean_(to_vec(mean)), scale_(to_vec(scale)), coef_(to_vec(coef)),
        b_(to_vec(intercept)), max_(choose_max) {
    const std::size_t d = width();
    if (log_.size() != d || mean_.size() != d || scale_.size() != d || b_.empty() || coef_.size() != d * b_.size())
      throw std::invalid_argument("Linear: inconsistent parameter shapes");
  }
  int predict_row(const double* in) const override {
    const std::size_t d = width(), k = b_.size();
    std::vector<double> x(d), score(b_);
    row(in, x.data());
    for (std::size_t j = 0; j < d; ++j) {
      const double v = log_[j] ? std::log1p(std::max(x[j], 0.0)) : x[j];
      const double z = (v - mean_[j]) / scale_[j];
      for (std::size_t c = 0; c < k; ++c) score[c] += z * coef_[j * k + c];
    }
    auto it = max_ ? std::max_element(score.begin(), score.end()) : std::min_element(score.begin(), score.end());
    return static_cast<int>(it - score.begin());
  }
 private:
  std::vector<bool> log_;
  Vec mean_, scale_, coef_, b_;
  bool max_;
};

// Futhark-style threshold rule: labels[number of thresholds <= x[feature]].
class Intervals final : public WithDevice {
 public:
  Intervals(std::size_t n_in, const Mat& device, std::size_t feature, const Mat& thresholds, std::vector<int> labels)
      : WithDevice(n_in, device), feature_(feature), thr_(to_vec(thresholds)), labels_(std::move(labels)) {
    if (feature_ >= width() || labels_.size() != thr_.size() + 1)
      throw std::invalid_argument("Intervals: inconsistent parameters");
  }
  int predict_row(const double* in) const override {
    const double v = feature_ < n_inputs ? in[feature_] : dev_[feature_ - n_inputs];
    return labels_[std::upper_bound(thr_.begin(), thr_.end(), v) - thr_.begin()];
  }
 private:
  std::size_t feature_;
  Vec thr_;
  std::vector<int> labels_;
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
  py::class_<Svc, Model>(m, "Svc")
      .def(py::init<std::size_t, const Mat&, const std::vector<bool>&, const Mat&, const Mat&, double, const Mat&,
                    const Mat&, const Mat&, std::vector<std::pair<int, int>>, int>(),
           py::arg("n_inputs"), py::arg("device"), py::arg("log_mask"), py::arg("mean"), py::arg("scale"),
           py::arg("gamma"), py::arg("support_vectors"), py::arg("pair_weights"), py::arg("intercept"),
           py::arg("pairs"), py::arg("n_classes"));
  py::class_<Kernel, Model>(m, "Kernel")
      .def(py::init<const Mat&, const Mat&, double, const Mat&, const Mat&, const Mat&>(), py::arg("mean"),
           py::arg("scale"), py::arg("gamma"), py::arg("centers"), py::arg("weights"), py::arg("offset"));
  py::class_<Tree, Model>(m, "Tree").def(
      py::init<std::size_t, const Mat&, const IMat&, const IMat&, const IMat&, const Mat&, const Mat&, bool>(),
      py::arg("n_inputs"), py::arg("device"), py::arg("children_left"), py::arg("children_right"), py::arg("feature"),
      py::arg("threshold"), py::arg("value"), py::arg("float32"));
  py::class_<Gbt, Model>(m, "Gbt").def(
      py::init<std::size_t, const Mat&, const IMat&, const IMat&, const IMat&, const Mat&, const Mat&, double, double,
               const Mat&, bool>(),
      py::arg("n_inputs"), py::arg("device"), py::arg("children_left"), py::arg("children_right"), py::arg("feature"),
      py::arg("threshold"), py::arg("value"), py::arg("learning_rate"), py::arg("init"), py::arg("codes"),
      py::arg("float32"));
  py::class_<Linear, Model>(m, "Linear").def(
      py::init<std::size_t, const Mat&, const std::vector<bool>&, const Mat&, const Mat&, const Mat&, const Mat&, bool>(),
      py::arg("n_inputs"), py::arg("device"), py::arg("log_mask"), py::arg("mean"), py::arg("scale"), py::arg("coef"),
      py::arg("intercept"), py::arg("choose_max"));
  py::class_<Intervals, Model>(m, "Intervals").def(
      py::init<std::size_t, const Mat&, std::size_t, const Mat&, std::vector<int>>(), py::arg("n_inputs"),
      py::arg("device"), py::arg("feature"), py::arg("thresholds"), py::arg("labels"));
}
