// privrace._core: the Python face of the engine. Every computation is the library's own
// (the release API of sketch/release.hpp: build_exact, release, ReleaseMerge; save_sketch /
// load_sketch, RaceSketch::query_*); this file only converts arguments, releases the GIL and
// maps errors.
//
// Data: the engine stores records as float32 rows (core/types.hpp). A float32 array whose
// rows are contiguous (C order, or a row slice of one) is read in place, without a copy; any
// other layout or float64 is converted to float32 a block of rows at a time (bounded memory,
// the same double -> float rounding as the CLI's parser).
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/eigen.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "privrace/core/error.hpp"
#include "privrace/core/types.hpp"
#include "privrace/core/version.hpp"
#include "privrace/lsh/family.hpp"
#include "privrace/privacy/budget.hpp"
#include "privrace/sketch/feature_sketch.hpp"
#include "privrace/sketch/race_sketch.hpp"
#include "privrace/sketch/release.hpp"
#include "privrace/sketch/sketch_io.hpp"
#include "privrace/tasks/m2m.hpp"

namespace py = pybind11;
using namespace privrace;

namespace {

// Rows converted per block when the array cannot be read in place (the CLI's chunk size).
constexpr std::size_t kBlockRows = 65536;

// Python's json module turns the engine's JSON (headers, privacy records) into dicts.
py::object to_python(const nlohmann::json& j) { return py::module_::import("json").attr("loads")(j.dump()); }

std::string shape_text(const py::array& a) {
  std::string s = "(";
  for (py::ssize_t i = 0; i < a.ndim(); ++i) s += (i ? ", " : "") + std::to_string(a.shape(i));
  return s + (a.ndim() == 1 ? ",)" : ")");
}

// A 2-D numeric array as the engine reads it. `name` ("X", "Q") starts every message.
class DenseInput {
 public:
  DenseInput(const py::handle& obj, const std::string& name) : name_(name) {
    if (!py::isinstance<py::array>(obj)) {
      // Lists and other sequences: numpy decides the dtype; no copy can be avoided anyway.
      array_ = py::module_::import("numpy").attr("asarray")(obj);
    } else {
      array_ = py::reinterpret_borrow<py::array>(obj);
    }
    const char kind = array_.dtype().kind();
    if (kind == 'O') throw UsageError(name + " has dtype object; expected a numeric array (float32 or float64)");
    if (kind != 'f' && kind != 'i' && kind != 'u' && kind != 'b')
      throw UsageError(name + " has dtype " + std::string(py::str(array_.dtype())) +
                       "; expected a numeric array (float32 or float64)");
    if (array_.ndim() != 2)
      throw UsageError(name + " must be a 2-D array (records x attributes), got shape " + shape_text(array_));
    if (kind != 'f' || (array_.itemsize() != 4 && array_.itemsize() != 8))
      array_ = py::array_t<double, py::array::forcecast>(array_);  // integers, bools, float16/128: one copy
    rows_ = static_cast<std::size_t>(array_.shape(0));
    cols_ = static_cast<std::size_t>(array_.shape(1));
    if (cols_ == 0) throw UsageError(name + " has no columns (shape " + shape_text(array_) + ")");
    is_float32_ = array_.itemsize() == 4;
    row_stride_ = array_.strides(0);
    col_stride_ = array_.strides(1);
    data_ = static_cast<const char*>(array_.data());
    in_place_ = is_float32_ && col_stride_ == 4 && row_stride_ >= 0 && row_stride_ % 4 == 0 &&
                (rows_ <= 1 || static_cast<std::size_t>(row_stride_) >= 4 * cols_);
  }
  std::size_t rows() const { return rows_; }
  std::size_t cols() const { return cols_; }
  bool in_place() const { return in_place_; }
  std::uintptr_t address() const { return reinterpret_cast<std::uintptr_t>(data_); }

  // The array itself, for in-place reads (in_place() only).
  Eigen::Map<const DenseMatrix, 0, Eigen::OuterStride<>> view() const {
    const Eigen::Index stride = rows_ <= 1 ? static_cast<Eigen::Index>(cols_) : row_stride_ / 4;
    return {reinterpret_cast<const Real*>(data_), static_cast<Eigen::Index>(rows_), static_cast<Eigen::Index>(cols_),
            Eigen::OuterStride<>(stride)};
  }

  // Rows [begin, begin + n) as float32 into `out` (resized), checked like the CLI's parser:
  // every value finite and within single precision. Runs without the GIL.
  void convert(std::size_t begin, std::size_t n, DenseMatrix& out) const {
    out.resize(static_cast<Eigen::Index>(n), static_cast<Eigen::Index>(cols_));
    for (std::size_t i = 0; i < n; ++i) {
      const char* row = data_ + static_cast<std::ptrdiff_t>(begin + i) * row_stride_;
      for (std::size_t j = 0; j < cols_; ++j) {
        const char* p = row + static_cast<std::ptrdiff_t>(j) * col_stride_;
        if (is_float32_) {
          float v;
          std::memcpy(&v, p, 4);
          out(static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(j)) = v;
        } else {
          double v;
          std::memcpy(&v, p, 8);
          const Real r = static_cast<Real>(v);
          if (std::isfinite(v) && std::isinf(r))
            throw InputError(where(begin + i, j) + "value " + number(v) +
                             " does not fit in single precision (|x| <= 3.4e38)");
          out(static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(j)) = r;
        }
      }
    }
    check_finite(out, begin);
  }

  // InputError naming the first non-finite value (1-based row and column, as the CLI does).
  void check_finite(const DenseRef& block, std::size_t first_row) const {
    if (block.allFinite()) [[likely]]
      return;
    for (Eigen::Index i = 0; i < block.rows(); ++i)
      for (Eigen::Index j = 0; j < block.cols(); ++j)
        if (!std::isfinite(block(i, j)))
          throw InputError(where(first_row + static_cast<std::size_t>(i), static_cast<std::size_t>(j)) + "value " +
                           number(block(i, j)) + " is not finite");
  }

 private:
  std::string where(std::size_t row, std::size_t col) const {
    return name_ + ": row " + std::to_string(row + 1) + ": column " + std::to_string(col + 1) + ": ";
  }
  static std::string number(double v) {
    std::ostringstream s;
    s << v;
    return s.str();
  }

  std::string name_;
  py::array array_;
  std::size_t rows_ = 0, cols_ = 0;
  bool is_float32_ = false, in_place_ = false;
  py::ssize_t row_stride_ = 0, col_stride_ = 0;
  const char* data_ = nullptr;
};

// A list of integer arrays (or sequences) as the engine's sorted, duplicate-free sets.
SetCollection to_sets(const py::handle& obj, const std::string& name) {
  if (py::isinstance<py::array>(obj) || !py::isinstance<py::sequence>(obj) || py::isinstance<py::str>(obj))
    throw UsageError(name + " must be a list of integer arrays (one set of element ids each)");
  const auto seq = py::reinterpret_borrow<py::sequence>(obj);
  SetCollection sets;
  std::vector<std::uint32_t> cur;
  py::module_ np = py::module_::import("numpy");
  for (std::size_t i = 0; i < seq.size(); ++i) {
    py::array a = np.attr("asarray")(seq[i]);
    const char kind = a.dtype().kind();
    const std::string at = name + "[" + std::to_string(i) + "]: ";
    if (a.ndim() != 1) throw UsageError(at + "a set must be a 1-D array of element ids, got shape " + shape_text(a));
    if (a.size() > 0 && kind != 'i' && kind != 'u')
      throw UsageError(at + "element ids must be integers 0..4294967295, got dtype " + std::string(py::str(a.dtype())));
    const auto ids = py::array_t<std::int64_t, py::array::forcecast>(a);
    cur.clear();
    for (py::ssize_t k = 0; k < ids.size(); ++k) {
      const std::int64_t v = ids.at(k);
      if (v < 0 || v > 4294967295LL)
        throw UsageError(at + "element id " + std::to_string(v) + " is outside 0..4294967295");
      cur.push_back(static_cast<std::uint32_t>(v));
    }
    std::sort(cur.begin(), cur.end());
    cur.erase(std::unique(cur.begin(), cur.end()), cur.end());
    sets.push_back(cur);
  }
  if (sets.size() == 0) throw UsageError(name + ": no sets");
  return sets;
}

struct FitArgs {
  std::optional<double> epsilon;
  std::string mechanism = "discrete_laplace";
  double delta = 0.0;
  std::string neighbors = "add-remove";
  int threads = 0;
  bool allow_non_private = false;
  std::string strategy = "auto";
};

// The RACE kernels a RaceSketch builds (the feature maps rff and hist are the CLI's).
Kernel race_kernel(const std::string& name) {
  for (const Kernel k : {Kernel::L2, Kernel::Angular, Kernel::AngularPair, Kernel::Jaccard, Kernel::JaccardClassic})
    if (name == to_string(k)) return k;
  throw UsageError("kernel must be l2, angular, angular_pair, jaccard or jaccard_classic, got '" + name +
                   "' (the rff and hist feature maps are built with the privrace command)");
}

class PyRaceSketch {
 public:
  PyRaceSketch(const std::string& kernel, std::size_t rows, std::size_t width, double bandwidth, std::size_t power,
               std::optional<std::uint64_t> seed, std::string pair_mode) {
    params_.family.kernel = race_kernel(kernel);
    params_.family.rows = rows;
    params_.family.bandwidth = bandwidth;
    params_.family.power = power;
    params_.family.pair_mode = std::move(pair_mode);
    params_.width = width;
    params_.seed = seed;
    params_.validate("");  // "rows must be at least 1", ..., the memory bound
  }
  explicit PyRaceSketch(RaceSketch loaded, nlohmann::json header) : sketch_(std::move(loaded)), header_(std::move(header)) {
    params_.width = sketch_->width();
    params_.family.kernel = parse_kernel(sketch_->family().kernel_name());
    params_.family.rows = sketch_->rows();
  }

  bool set_kernel() const { return is_set_kernel(params_.family.kernel); }

  // X: records x attributes. Builds a new sketch (any previous one is replaced).
  PyRaceSketch& fit(const py::handle& x, const FitArgs& args) {
    if (set_kernel())
      throw UsageError("the " + to_string(params_.family.kernel) + " kernel sketches sets: use fit_sets(list_of_arrays)");
    const ReleaseParams params = fit_params(args);
    DenseInput input(x, "X");
    if (input.rows() == 0) throw UsageError("X has no rows (shape (0, " + std::to_string(input.cols()) + "))");
    // The CLI's seeds: a seeded sketch equals `privrace sketch --seed`.
    const MasterSeed seed = MasterSeed::resolve(params.seed);
    std::optional<Release> release;
    {
      py::gil_scoped_release unlocked;
      if (input.in_place()) {
        const auto view = input.view();
        input.check_finite(view, 0);
        release.emplace(build_exact(params, seed, view).release());
      } else {
        std::size_t next = 0;
        release.emplace(build_exact(params, seed, input.cols(), [&](DenseMatrix& chunk) {
                          const std::size_t n = std::min(kBlockRows, input.rows() - next);
                          if (n > 0) input.convert(next, n, chunk);
                          next += n;
                          return n;
                        }).release());
      }
    }
    install(std::move(*release), input.in_place() ? "in place" : "converted to float32 in blocks", input.address());
    return *this;
  }

  PyRaceSketch& fit_sets(const py::handle& sets_obj, const FitArgs& args) {
    if (!set_kernel())
      throw UsageError("fit_sets needs kernel='jaccard' (this sketch's kernel is " + to_string(params_.family.kernel) + ")");
    const ReleaseParams params = fit_params(args);
    const SetCollection sets = to_sets(sets_obj, "sets");
    const MasterSeed seed = MasterSeed::resolve(params.seed);
    std::optional<Release> release;
    {
      py::gil_scoped_release unlocked;
      release.emplace(build_exact(params, seed, sets).release());
    }
    install(std::move(*release), "sets", 0);
    return *this;
  }

  std::vector<double> kernel_sums(const py::handle& q, const QueryOptions& opts) const {
    const RaceSketch& s = fitted();
    if (s.family().input_kind() == InputKind::Sets) {
      const SetCollection sets = to_sets(q, "Q");
      py::gil_scoped_release unlocked;
      return s.query_sets(SetBatch{&sets, 0, sets.size()}, opts);
    }
    DenseInput input(q, "Q");
    if (input.cols() != s.family().dim())
      throw UsageError("Q: queries have " + std::to_string(input.cols()) + " columns, the sketch was built on " +
                       std::to_string(s.family().dim()) + "-dimensional data");
    py::gil_scoped_release unlocked;
    if (input.in_place()) {
      const auto view = input.view();
      input.check_finite(view, 0);
      return s.query_dense(view, opts);
    }
    std::vector<double> sums;
    sums.reserve(input.rows());
    DenseMatrix chunk;
    for (std::size_t begin = 0; begin < input.rows(); begin += kBlockRows) {
      const std::size_t n = std::min(kBlockRows, input.rows() - begin);
      input.convert(begin, n, chunk);
      const auto part = s.query_dense(chunk, opts);
      sums.insert(sums.end(), part.begin(), part.end());
    }
    return sums;
  }

  // Densities: kernel sums / N-hat, what `privrace query` prints.
  std::vector<double> query(const py::handle& q, const QueryOptions& opts) const {
    std::vector<double> sums = kernel_sums(q, opts);
    const double n_hat = fitted().n_hat();
    if (!(n_hat > 0.0))
      if (PyErr_WarnEx(PyExc_RuntimeWarning,
                       ("N-hat = " + std::to_string(n_hat) + " is not positive (noise dominates); densities are meaningless").c_str(),
                       1) < 0)
        throw py::error_already_set();
    for (double& v : sums) v /= n_hat;
    return sums;
  }

  void save(const std::string& path, bool allow_non_private) const {
    const RaceSketch& s = fitted();
    nlohmann::json extra = nlohmann::json::object();
    for (const char* key : {"build", "merged_inputs"})
      if (header_.contains(key)) extra[key] = header_.at(key);
    py::gil_scoped_release unlocked;
    save_sketch(path, s, allow_non_private, extra);
  }

  static PyRaceSketch load(const std::string& path) {
    nlohmann::json header;
    std::optional<RaceSketch> s;
    {
      py::gil_scoped_release unlocked;
      s.emplace(load_sketch(path, &header));
    }
    if (s->family().accumulates_values() || sketch_kind(s->family()) != "race")
      throw UsageError(path + ": a " + sketch_kind(s->family()) +
                       " feature sketch (M2M); RaceSketch reads RACE sketches (query it with `privrace m2m`)");
    return PyRaceSketch(std::move(*s), std::move(header));
  }

  PyRaceSketch& merge(const PyRaceSketch& other) {
    RaceSketch& s = fitted_mutable();
    ReleaseMerge merge(s);
    merge.add(other.fitted());  // refuses different parameters and private + exact; s unchanged then
    merge.finish();
    header_.erase("build");
    return *this;
  }

  py::dict header() const {
    const RaceSketch& s = fitted();
    nlohmann::json h = sketch_header(s);
    for (const char* key : {"build", "merged_inputs"})
      if (header_.contains(key)) h[key] = header_.at(key);
    return to_python(h);
  }

  py::array_t<std::int64_t> counts() const {
    const RaceSketch& s = fitted();
    py::array_t<std::int64_t> out({s.rows(), s.width()});
    std::memcpy(out.mutable_data(), s.counts().data(), s.counts().size_bytes());
    return out;
  }

  py::dict fit_report() const { return to_python(fit_report_); }
  bool fitted_flag() const { return sketch_.has_value(); }
  const RaceSketch& fitted() const {
    if (!sketch_) throw UsageError("the sketch is not fitted yet: call fit(X, epsilon=...) or RaceSketch.load(path)");
    return *sketch_;
  }
  std::string repr() const {
    std::ostringstream s;
    s << "RaceSketch(kernel='" << to_string(params_.family.kernel) << "', rows=" << params_.family.rows
      << ", width=" << params_.width;
    if (sketch_) s << ", fitted, " << (sketch_->is_private() ? "private" : "NOT private");
    s << ")";
    return s.str();
  }

 private:
  RaceSketch& fitted_mutable() {
    fitted();
    return *sketch_;
  }

  // The sketch's parameters with this fit's privacy, threads and strategy, validated.
  ReleaseParams fit_params(const FitArgs& args) const {
    ReleaseParams params = params_;
    params.privacy = privacy_spec(args);
    params.threads = args.threads;
    params.strategy = args.strategy;
    params.validate("");
    return params;
  }

  std::optional<PrivacySpec> privacy_spec(const FitArgs& args) const {
    PrivacySpec spec;
    if (!args.epsilon) {
      if (!args.allow_non_private)
        throw UsageError("epsilon is required (or epsilon=None, allow_non_private=True for an exact, non-releasable sketch)");
      return std::nullopt;
    }
    if (args.allow_non_private) throw UsageError("epsilon and allow_non_private=True exclude each other");
    spec.epsilon = *args.epsilon;
    if (!(spec.epsilon > 0.0) || !std::isfinite(spec.epsilon)) {
      std::ostringstream s;
      s << "epsilon must be a positive number, got " << spec.epsilon;
      throw UsageError(s.str());
    }
    spec.delta = args.delta;
    spec.mechanism = parse_mechanism(args.mechanism);
    spec.neighbors = parse_neighbors(args.neighbors);
    spec.validate();
    return spec;
  }

  void install(Release release, const std::string& input, std::uintptr_t address) {
    const BuildReport report = release.build();
    fit_report_ = {{"points", report.points}, {"threads", report.threads}, {"strategy", report.strategy},
                   {"seconds", report.seconds}, {"input", input}, {"data_address", address}};
    header_ = nlohmann::json::object();
    header_["build"] = {{"points", report.points}, {"threads", report.threads}, {"strategy", report.strategy},
                        {"input", "numpy"}};
    sketch_.emplace(std::move(release).take_sketch());
  }

  ReleaseParams params_;  // kernel, R, W, bandwidth, p, pair mode, master seed
  std::optional<RaceSketch> sketch_;
  nlohmann::json header_ = nlohmann::json::object();
  nlohmann::json fit_report_;
};

// M2M over a released feature sketch (rff, hist, or a RACE sketch): the library's M2mModel and
// the section-4 task functions on its weighted synthetic points. Post-processing only.
class PyM2M {
 public:
  PyM2M(const std::string& path, const py::object& domain, std::size_t samples, std::uint64_t seed, int threads,
        bool intercept, const std::string& lambda_rule) {
    if (samples == 0) throw UsageError("samples must be positive");
    {
      py::gil_scoped_release unlocked;
      release_ = load_feature_release(path);
    }
    const std::size_t dim = release_.map->input_dim();
    options_.domain = to_domain(domain, dim);
    options_.domain.check();
    options_.samples = samples;
    options_.seed = seed;
    options_.threads = threads;
    options_.intercept = intercept;
    options_.lambda_rule = parse_m2m_lambda_rule(lambda_rule);
    py::gil_scoped_release unlocked;
    model_.emplace(release_, options_);
    synthetic_ = model_->synthetic().cast<double>();
    omega_ = model_->average_weights();
  }

  Eigen::VectorXd mean() const { return weighted_means(synthetic_, omega_); }
  Eigen::VectorXd moment2() const { return weighted_second_moments(synthetic_, omega_); }
  DoubleMatrix cdf(std::size_t points) const {
    if (points == 0) throw UsageError("points must be positive");
    return weighted_cdfs(synthetic_, omega_, cdf_points(options_.domain, points));
  }
  Eigen::MatrixXd cov() const {
    if (synthetic_.cols() < 2) throw UsageError("cov needs at least 2 attributes, the sketch has 1");
    return weighted_covariance(synthetic_, omega_, mean());
  }
  // Each query: a list of (attribute, "<=" or ">=", value); returns the estimated fraction of
  // records satisfying it (multiply by `count` for a count, as `privrace m2m --task count`).
  Eigen::VectorXd count(const std::vector<std::vector<std::tuple<std::size_t, std::string, double>>>& queries) const {
    std::vector<CountingQuery> qs;
    for (std::size_t i = 0; i < queries.size(); ++i) {
      CountingQuery q;
      for (const auto& [attribute, op, value] : queries[i]) {
        if (op != "<=" && op != ">=") throw UsageError("query " + std::to_string(i) + ": op must be '<=' or '>=', got '" + op + "'");
        q.predicates.push_back({attribute, op == "<=", value});
      }
      check_counting_query(q, static_cast<std::size_t>(synthetic_.cols()), "query " + std::to_string(i));
      qs.push_back(std::move(q));
    }
    return weighted_counts(synthetic_, omega_, qs);
  }
  double released_count() const { return model_->count_used(); }
  double lambda() const { return model_->lambda(); }
  const Eigen::VectorXd& weights() const { return model_->weights(); }
  const DoubleMatrix& synthetic() const { return synthetic_; }
  py::dict header() const { return to_python(release_.header); }
  py::dict describe() const { return to_python(model_->describe()); }

 private:
  static BoxDomain to_domain(const py::object& domain, std::size_t dim) {
    const auto pair = domain.cast<std::pair<py::object, py::object>>();
    BoxDomain d;
    if (py::isinstance<py::float_>(pair.first) || py::isinstance<py::int_>(pair.first)) {
      d = BoxDomain::uniform(dim, pair.first.cast<double>(), pair.second.cast<double>());
    } else {
      d.lo = pair.first.cast<std::vector<double>>();
      d.hi = pair.second.cast<std::vector<double>>();
      if (d.lo.size() != dim || d.hi.size() != dim)
        throw UsageError("domain: " + std::to_string(d.lo.size()) + " lower and " + std::to_string(d.hi.size()) +
                         " upper bounds for a sketch of " + std::to_string(dim) + "-dimensional data");
    }
    return d;
  }

  FeatureSketchRelease release_;
  M2mOptions options_;
  std::optional<M2mModel> model_;
  DoubleMatrix synthetic_;
  Eigen::VectorXd omega_;
};

QueryOptions query_options(const std::string& estimator, std::size_t mom_groups, bool debias) {
  QueryOptions o;
  o.estimator = parse_estimator(estimator);
  if (mom_groups == 0) throw UsageError("mom_groups must be at least 1");
  o.mom_groups = mom_groups;
  o.debias = debias;
  return o;
}

py::array_t<double> to_numpy(std::vector<double> v) {
  auto* heap = new std::vector<double>(std::move(v));
  py::capsule owner(heap, [](void* p) { delete static_cast<std::vector<double>*>(p); });
  return py::array_t<double>(static_cast<py::ssize_t>(heap->size()), heap->data(), owner);
}

// File errors (the library's "cannot open/read/write/create ..." messages) are OSError;
// other bad input or arguments ValueError; memory refusals MemoryError.
bool is_file_error(const std::string& what) {
  for (const char* prefix : {"cannot open", "cannot read", "cannot write", "cannot create", "cannot rename",
                             "cannot sync", "cannot remove"})
    if (what.rfind(prefix, 0) == 0) return true;
  return false;
}

}  // namespace

PYBIND11_MODULE(_core, m) {
  m.doc() = "privrace engine: differentially private RACE sketches";
  m.attr("__version__") = version();
  m.attr("git_commit") = git_commit();

  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const ResourceError& e) {
      PyErr_SetString(PyExc_MemoryError, e.what());
    } catch (const Error& e) {
      PyErr_SetString(is_file_error(e.what()) ? PyExc_OSError : PyExc_ValueError, e.what());
    }
  });

  py::class_<PyRaceSketch>(m, "RaceSketch", R"doc(
A RACE sketch (R rows x W counters) of a data set, released with differential privacy.

RaceSketch(kernel="l2", rows, width, bandwidth=1.0, power=1, seed=None, pair_mode="query")
  kernel: l2 (p-stable), angular (SRP), angular_pair, jaccard or jaccard_classic (sets).
  seed: fixes the LSH functions and the noise, exactly as `privrace sketch --seed`; a seeded
        sketch is recorded as NOT fit for release. None draws both from the OS.)doc")
      .def(py::init<std::string, std::size_t, std::size_t, double, std::size_t, std::optional<std::uint64_t>,
                    std::string>(),
           py::arg("kernel") = "l2", py::kw_only(), py::arg("rows"), py::arg("width"), py::arg("bandwidth") = 1.0,
           py::arg("power") = 1, py::arg("seed") = py::none(), py::arg("pair_mode") = "query")
      .def(
          "fit",
          [](PyRaceSketch& self, const py::handle& x, std::optional<double> epsilon, const std::string& mechanism,
             double delta, const std::string& neighbors, int threads, bool allow_non_private,
             const std::string& strategy) -> PyRaceSketch& {
            return self.fit(x, FitArgs{epsilon, mechanism, delta, neighbors, threads, allow_non_private, strategy});
          },
          py::arg("X"), py::kw_only(), py::arg("epsilon"), py::arg("mechanism") = "discrete_laplace",
          py::arg("delta") = 0.0, py::arg("neighbors") = "add-remove", py::arg("threads") = 0,
          py::arg("allow_non_private") = false, py::arg("strategy") = "auto", py::return_value_policy::reference_internal,
          R"doc(Sketch the rows of X (2-D, float32 or float64) and add the release noise.
epsilon > 0 is required; epsilon=None with allow_non_private=True keeps exact counts (never for release).
mechanism: discrete_laplace | floored_laplace | gaussian (with delta); neighbors: add-remove | replace.
threads=0 uses every core; the counts do not depend on it. The GIL is released while building.)doc")
      .def(
          "fit_sets",
          [](PyRaceSketch& self, const py::handle& sets, std::optional<double> epsilon, const std::string& mechanism,
             double delta, const std::string& neighbors, int threads, bool allow_non_private,
             const std::string& strategy) -> PyRaceSketch& {
            return self.fit_sets(sets, FitArgs{epsilon, mechanism, delta, neighbors, threads, allow_non_private, strategy});
          },
          py::arg("sets"), py::kw_only(), py::arg("epsilon"), py::arg("mechanism") = "discrete_laplace",
          py::arg("delta") = 0.0, py::arg("neighbors") = "add-remove", py::arg("threads") = 0,
          py::arg("allow_non_private") = false, py::arg("strategy") = "auto", py::return_value_policy::reference_internal,
          "Sketch a list of integer arrays (sets of element ids, e.g. graph neighbourhoods) with kernel='jaccard'.")
      .def(
          "kernel_sums",
          [](const PyRaceSketch& self, const py::handle& q, const std::string& estimator, std::size_t mom_groups,
             bool debias) { return to_numpy(self.kernel_sums(q, query_options(estimator, mom_groups, debias))); },
          py::arg("Q"), py::kw_only(), py::arg("estimator") = "mean", py::arg("mom_groups") = 5, py::arg("debias") = false,
          "Estimates of sum_x k(x, q) for each query row (`privrace query --kernel-sum`).")
      .def(
          "query",
          [](const PyRaceSketch& self, const py::handle& q, const std::string& estimator, std::size_t mom_groups,
             bool debias) { return to_numpy(self.query(q, query_options(estimator, mom_groups, debias))); },
          py::arg("Q"), py::kw_only(), py::arg("estimator") = "mean", py::arg("mom_groups") = 5, py::arg("debias") = false,
          "Density estimates: kernel sums / N-hat (`privrace query`).")
      .def("save", &PyRaceSketch::save, py::arg("path"), py::kw_only(), py::arg("allow_non_private") = false,
           "Write the sketch file (the CLI's format). A sketch without noise needs allow_non_private=True.")
      .def_static("load", &PyRaceSketch::load, py::arg("path"), "Read a RACE sketch file written by save or `privrace sketch`.")
      .def("merge", &PyRaceSketch::merge, py::arg("other"), py::return_value_policy::reference_internal,
           "Add another sketch of disjoint data built with the same parameters and seed (`privrace merge`).")
      .def_property_readonly("header", &PyRaceSketch::header, "The file header (family, privacy record, n_hat, ...) as a dict.")
      .def_property_readonly("counts", &PyRaceSketch::counts, "The R x W counters (int64, a copy).")
      .def_property_readonly("n_hat", [](const PyRaceSketch& self) { return self.fitted().n_hat(); })
      .def_property_readonly("rows", [](const PyRaceSketch& self) { return self.fitted().rows(); })
      .def_property_readonly("width", [](const PyRaceSketch& self) { return self.fitted().width(); })
      .def_property_readonly("is_private", [](const PyRaceSketch& self) { return self.fitted().is_private(); })
      .def_property_readonly("fitted", &PyRaceSketch::fitted_flag)
      .def_property_readonly("fit_report", &PyRaceSketch::fit_report,
                             "The last fit: points, threads, strategy, seconds, how X was read ('in place' or converted).")
      .def("__repr__", &PyRaceSketch::repr);

  py::class_<PyM2M>(m, "M2M", R"doc(
M2M (Houssiau et al.): moments, CDFs, covariance and counting queries from a released feature
sketch (`privrace sketch --kernel rff|hist`, or a RACE sketch), as `privrace m2m` computes them.
Post-processing of the release: no data is read and no budget spent.

M2M(path, domain=(lo, hi), samples=100000, seed=0x4d324d, threads=0, intercept=False, lambda_rule="eq5")
  domain: the box every record lies in, (lo, hi) for all attributes or (los, his) per attribute.
  intercept: fit an unpenalised constant feature whose sketch value is 1 (`privrace m2m --intercept`).
  lambda_rule: "eq5" (the paper's sigma_xi^2 / (n + zeta)) or "auto-noise" (`--lambda auto-noise`).)doc")
      .def(py::init<const std::string&, const py::object&, std::size_t, std::uint64_t, int, bool, const std::string&>(),
           py::arg("path"), py::kw_only(), py::arg("domain"), py::arg("samples") = 100000, py::arg("seed") = 0x4d324d,
           py::arg("threads") = 0, py::arg("intercept") = false, py::arg("lambda_rule") = "eq5")
      .def("mean", &PyM2M::mean, "Per-attribute means.")
      .def("moment2", &PyM2M::moment2, "Per-attribute second moments.")
      .def("cdf", &PyM2M::cdf, py::arg("points") = 10,
           "attributes x points: F_j at lo_j + t (hi_j - lo_j) / points, t = 1..points.")
      .def("cov", &PyM2M::cov, "Covariance matrix (about the M2M means).")
      .def("count", &PyM2M::count, py::arg("queries"),
           "Fractions of records matching each query [(attribute, '<=' or '>=', value), ...]; times .released_count for counts.")
      .def_property_readonly("released_count", &PyM2M::released_count, "n + zeta as used by the model.")
      .def_property_readonly("weights", &PyM2M::weights, "w_i of the implicit M2M, one per synthetic point.")
      .def_property_readonly("lambda_", &PyM2M::lambda, "The ridge term used.")
      .def_property_readonly("synthetic", &PyM2M::synthetic, "The n_s synthetic points (public, seeded).")
      .def_property_readonly("header", &PyM2M::header)
      .def_property_readonly("fit_info", &PyM2M::describe);
}
