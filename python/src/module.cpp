// privrace._core: the Python face of the engine. Every computation is the library's own
// (the release API of sketch/release.hpp: build_exact, release, ReleaseMerge; save_sketch /
// load_sketch, RaceSketch::query_*); this file only converts arguments, releases the GIL and
// maps errors. privrace.dask (python/privrace/dask.py) uses the same calls per partition:
// RaceSketch._exact_partial builds a share's exact counts, _combine sums them (ExactSketch::merge),
// _release adds the noise once (ExactSketch::release).
//
// Data: the engine stores records as float32 rows (core/types.hpp). A float32 array whose
// rows are contiguous (C order, or a row slice of one) is read in place, without a copy; any
// other layout or float64 is converted to float32 a block of rows at a time (bounded memory,
// the same double -> float rounding as the CLI's parser). Arrays of non-native byte order are
// converted to native order first (numpy's astype).
//
// Threads: a RaceSketch has a reader/writer lock. fit, fit_sets and merge (the target) hold it
// exclusively; query, kernel_sums, save, header, counts, like and merge (the part) share it. It is
// always taken with the GIL released (never waited for while the GIL is held); the GIL may be
// taken again while the lock is held.
//
// Signals: a fit runs Python's signal handlers (PyErr_CheckSignals, with the GIL) between blocks
// of rows, so Ctrl-C raises KeyboardInterrupt within a block's time.
//
// Sketches that are not fit for release (seeded noise, exact counts) warn on load, merge and
// query: privrace.NotFitForReleaseWarning (a UserWarning), with the library's release_warning.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/eigen.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <condition_variable>
#include <sstream>
#include <string>
#include <vector>

#include <stdlib.h>

#include "privrace/core/error.hpp"
#include "privrace/core/types.hpp"
#include "privrace/core/version.hpp"
#include "privrace/lsh/family.hpp"
#include "privrace/lsh/kernel_registry.hpp"
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
// Rows built per step of an in-place fit (signals are checked between steps): a multiple of
// the builder's 4096-row batch, so the batches are those of one build.
constexpr std::size_t kInPlaceStepRows = 4 * kBlockRows;

// A reader/writer lock that prefers writers: once a fit or merge waits, new queries wait behind
// it (glibc's std::shared_mutex prefers readers, so a stream of queries could starve a fit).
// Meets SharedMutex for std::shared_lock and std::unique_lock.
class WriterFirstMutex {
 public:
  void lock() {
    std::unique_lock l(m_);
    ++writers_waiting_;
    cv_.wait(l, [&] { return !writer_ && readers_ == 0; });
    --writers_waiting_;
    writer_ = true;
  }
  void unlock() {
    {
      const std::lock_guard l(m_);
      writer_ = false;
    }
    cv_.notify_all();
  }
  void lock_shared() {
    std::unique_lock l(m_);
    cv_.wait(l, [&] { return !writer_ && writers_waiting_ == 0; });
    ++readers_;
  }
  void unlock_shared() {
    bool last = false;
    {
      const std::lock_guard l(m_);
      last = --readers_ == 0;
    }
    if (last) cv_.notify_all();
  }

 private:
  std::mutex m_;
  std::condition_variable cv_;
  std::size_t readers_ = 0, writers_waiting_ = 0;
  bool writer_ = false;
};

// privrace.NotFitForReleaseWarning (a UserWarning subclass), created with the module.
PyObject* g_not_fit_warning = nullptr;

// warnings.warn(NotFitForReleaseWarning) when `privacy` (a sketch's privacy record) is not fit
// for release; needs the GIL. `what` names the operation ("query", "merge", "load").
void warn_if_not_fit(const PrivacyRecord& privacy, const std::string& what) {
  const std::optional<std::string> text = release_warning(privacy);
  if (!text) return;
  if (PyErr_WarnEx(g_not_fit_warning, (what + ": " + *text).c_str(), 1) < 0) throw py::error_already_set();
}

// A Python exception raised where the GIL was taken inside C++ code that runs without it (a
// signal handler between blocks of a fit): fetched there, thrown as PendingPythonError through
// the engine, and restored by rethrow() once the GIL is held again.
struct PendingPythonError {};
class PythonErrorSlot {
 public:
  // With the GIL held and a Python error set: keeps it and throws PendingPythonError.
  [[noreturn]] void fetch_and_throw() {
    PyErr_Fetch(&type_, &value_, &traceback_);
    throw PendingPythonError{};
  }
  // With the GIL held: the kept error, as pybind11's error_already_set.
  [[noreturn]] void rethrow() {
    PyErr_Restore(type_, value_, traceback_);
    type_ = value_ = traceback_ = nullptr;
    throw py::error_already_set();
  }
  // Without the GIL: runs Python's signal handlers (Ctrl-C: KeyboardInterrupt) with it.
  void check_signals() {
    py::gil_scoped_acquire gil;
    if (PyErr_CheckSignals() != 0) fetch_and_throw();
  }

 private:
  PyObject *type_ = nullptr, *value_ = nullptr, *traceback_ = nullptr;
};

// The Python module's wording of library messages written for the command line (the library
// names its options in a few messages; the Python arguments are named here instead).
std::string python_wording(std::string what) {
  static const std::pair<const char*, const char*> kOptions[] = {
      {"--no-privacy", "allow_non_private=True"},  // sketch_io.cpp save_sketch: "pass --no-privacy to do so deliberately"
      {"--hash-seed S", "hash_seed=S"},            // merge refusals of parts that share their noise
      {"--hash-seed", "hash_seed="},
      {"one --seed", "one seed=S"},                 // "two sketches of one --seed"
      {"--seed", "seed="},
  };
  for (const auto& [cli, python] : kOptions)
    for (std::size_t at = what.find(cli); at != std::string::npos; at = what.find(cli, at + std::strlen(python)))
      what.replace(at, std::strlen(cli), python);
  return what;
}

// Python's json module turns the engine's JSON (headers, privacy records) into dicts.
py::object to_python(const nlohmann::json& j) { return py::module_::import("json").attr("loads")(j.dump()); }

// fit(X, columns=...): the columns of X to sketch, by name (a pandas DataFrame's columns) or by
// 0-based position, in the order given; the others are never converted, so a text or date
// column that is not selected is ignored. ValueError naming a column that X does not have.
py::object select_columns(const py::handle& x, const py::handle& columns) {
  if (columns.is_none()) return py::reinterpret_borrow<py::object>(x);
  // Messages through Python's str.format (GCC 12 warns falsely on chains of std::string +).
  auto fail = [](const char* format, const py::handle& a, const py::handle& b) {
    throw py::value_error(py::str(format).format(a, b).cast<std::string>());
  };
  if (py::isinstance<py::str>(columns)) throw py::value_error("columns= takes a list of column names or positions, not one string");
  const py::list wanted = py::list(py::reinterpret_borrow<py::object>(columns));
  if (wanted.empty()) throw py::value_error("columns= selects no column");
  bool names = false, positions = false;
  for (const auto& c : wanted) (py::isinstance<py::int_>(c) ? positions : names) = true;
  if (names && positions) throw py::value_error("columns= mixes names and positions: give one kind");
  const bool frame = py::hasattr(x, "columns") && py::hasattr(x, "iloc");
  if (names && !frame) throw py::value_error("columns= by name needs a pandas DataFrame; give positions for an array");
  const py::slice all{py::none(), py::none(), py::none()};
  if (frame) {
    const py::list have(x.attr("columns"));
    const py::int_ n(have.size());
    for (const auto& c : wanted) {
      if (names && !have.contains(c)) fail("columns=: X has no column {!r} (its columns: {!r})", c, have);
      if (positions && (c.cast<long long>() < 0 || c.cast<long long>() >= static_cast<long long>(have.size())))
        fail("columns=: position {} is outside X's {} columns", c, n);
    }
    return names ? x.attr("loc")[py::make_tuple(all, wanted)] : x.attr("iloc")[py::make_tuple(all, wanted)];
  }
  const py::object arr = py::module_::import("numpy").attr("asarray")(x);
  const long long ncols = arr.attr("ndim").cast<int>() == 2 ? arr.attr("shape")[py::int_(1)].cast<long long>() : 0;
  for (const auto& c : wanted)
    if (c.cast<long long>() < 0 || c.cast<long long>() >= ncols) fail("columns=: position {} is outside X's {} columns", c, py::int_(ncols));
  return arr[py::make_tuple(all, wanted)];
}

std::string shape_text(const py::array& a) {
  std::string s = "(";
  for (py::ssize_t i = 0; i < a.ndim(); ++i) s += (i ? ", " : "") + std::to_string(a.shape(i));
  return s + (a.ndim() == 1 ? ",)" : ")");
}

// A 2-D numeric array as the engine reads it. `name` ("X", "Q") starts every message. A part of
// a larger collection (privrace.dask) passes where its first row lies in the collection and
// where the collection's partitions that it overlaps start (the first of them numbered
// `first_partition`): messages then name the partition, the row within it and the row of the
// collection.
class DenseInput {
 public:
  DenseInput(const py::handle& obj, const std::string& name, std::uint64_t first_row = 0,
             std::vector<std::uint64_t> partition_starts = {}, std::size_t first_partition = 0)
      : name_(name), first_row_(first_row), partition_starts_(std::move(partition_starts)), first_partition_(first_partition) {
    if (!py::isinstance<py::array>(obj)) {
      // Lists and other sequences: numpy decides the dtype; no copy can be avoided anyway.
      array_ = py::module_::import("numpy").attr("asarray")(obj);
    } else {
      array_ = py::reinterpret_borrow<py::array>(obj);
    }
    if (!array_.dtype().attr("isnative").cast<bool>())  // big-endian on this machine, or the reverse
      array_ = array_.attr("astype")(array_.dtype().attr("newbyteorder")("="));
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
    return name_ + ": " + row_text(row) + ": column " + std::to_string(col + 1) + ": ";
  }

 public:
  // "row 5" (1-based), or in a collection "partition 2: row 5 (row 8197 of the collection)".
  std::string row_text(std::size_t row) const {
    if (partition_starts_.empty()) return "row " + std::to_string(row + 1);
    const std::uint64_t g = first_row_ + row;
    const auto it = std::upper_bound(partition_starts_.begin(), partition_starts_.end(), g);
    const std::size_t k = it == partition_starts_.begin() ? 0 : static_cast<std::size_t>(it - partition_starts_.begin()) - 1;
    return "partition " + std::to_string(first_partition_ + k) + ": row " + std::to_string(g - partition_starts_[k] + 1) + " (row " +
           std::to_string(g + 1) + " of the collection)";
  }

 private:
  static std::string number(double v) {
    std::ostringstream s;
    s << v;
    return s.str();
  }

  std::string name_;
  std::uint64_t first_row_ = 0;
  std::vector<std::uint64_t> partition_starts_;
  std::size_t first_partition_ = 0;
  py::array array_;
  std::size_t rows_ = 0, cols_ = 0;
  bool is_float32_ = false, in_place_ = false;
  py::ssize_t row_stride_ = 0, col_stride_ = 0;
  const char* data_ = nullptr;
};

// The exact sketch of a dense input: read in place when its layout allows, else converted a
// block of kBlockRows rows at a time (a multiple of the builder's 4096-row batch, so the batches
// are the same either way). Runs without the GIL. With `signals`, Python's signal handlers run
// between blocks (in place: steps of kInPlaceStepRows rows, built separately and summed
// exactly), and a handler's exception stops the build.
ExactSketch build_exact_dense(const ReleaseParams& params, const MasterSeed& seed, const DenseInput& input,
                              PythonErrorSlot* signals = nullptr) {
  if (input.in_place()) {
    const auto view = input.view();
    if (!signals) {
      input.check_finite(view, 0);
      return build_exact(params, seed, view);
    }
    std::optional<ExactSketch> sum;
    std::size_t begin = 0;
    do {
      const std::size_t n = std::min(kInPlaceStepRows, input.rows() - begin);
      const auto step = view.middleRows(static_cast<Eigen::Index>(begin), static_cast<Eigen::Index>(n));
      input.check_finite(step, begin);
      ExactSketch part = build_exact(params, seed, step);
      if (sum)
        sum->merge(part);
      else
        sum.emplace(std::move(part));
      begin += n;
      if (begin < input.rows()) signals->check_signals();
    } while (begin < input.rows());
    return std::move(*sum);
  }
  std::size_t next = 0;
  return build_exact(params, seed, input.cols(), [&](DenseMatrix& chunk) {
    if (signals && next > 0 && next < input.rows()) signals->check_signals();
    const std::size_t n = std::min(kBlockRows, input.rows() - next);
    if (n > 0) input.convert(next, n, chunk);
    next += n;
    return n;
  });
}

// A list of integer arrays (or sequences) as the engine's sorted, duplicate-free sets.
// `label`, when given, names set i in messages instead of name[i] (privrace.dask: the partition).
SetCollection to_sets(const py::handle& obj, const std::string& name, bool allow_empty = false,
                      const std::function<std::string(std::size_t)>& label = {}) {
  if (py::isinstance<py::array>(obj) || !py::isinstance<py::sequence>(obj) || py::isinstance<py::str>(obj))
    throw UsageError(name + " must be a list of integer arrays (one set of element ids each)");
  const auto seq = py::reinterpret_borrow<py::sequence>(obj);
  SetCollection sets;
  std::vector<std::uint32_t> cur;
  py::module_ np = py::module_::import("numpy");
  for (std::size_t i = 0; i < seq.size(); ++i) {
    py::array a = np.attr("asarray")(seq[i]);
    const char kind = a.dtype().kind();
    const std::string at = (label ? label(i) : name + "[" + std::to_string(i) + "]") + ": ";
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
  if (sets.size() == 0 && !allow_empty) throw UsageError(name + ": no sets");
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

// The kernels of the registry (lsh/kernel_registry.hpp): its RACE kernels (RaceSketch) or its
// feature maps (FeatureSketch), by name in registration order.
std::vector<std::string> registered_names(bool feature_map) {
  std::vector<std::string> out;
  for (const Kernel k : registered_kernels())
    if (kernel_info(k).feature_map == feature_map) out.push_back(to_string(k));
  return out;
}

// The RACE kernels a RaceSketch builds (the feature maps rff and hist are FeatureSketch's).
Kernel race_kernel(const std::string& name) {
  if (const auto k = find_kernel(name); k && !is_feature_kernel(*k)) return *k;
  throw UsageError("kernel must be " + join_names(registered_names(false)) + ", got '" + name + "' (" +
                   join_names(registered_names(true), " and ") + " feature sketches: privrace.FeatureSketch)");
}

// The feature maps a FeatureSketch builds.
Kernel feature_kernel(const std::string& name) {
  if (const auto k = find_kernel(name); k && is_feature_kernel(*k)) return *k;
  throw UsageError("kernel must be " + join_names(registered_names(true)) + ", got '" + name +
                   "' (RACE kernels: privrace.RaceSketch)");
}

// ---------------------------------------------------------------------------------------------
// Constructor arguments. A sketch keeps the Python objects it was constructed with (get_params
// returns them as they were given, as scikit-learn's clone expects) and the library's
// ReleaseParams made from them (validated, messages naming the Python arguments).

// The constructor arguments of RaceSketch and of FeatureSketch, in order.
const std::vector<std::string>& race_arg_names() {
  static const std::vector<std::string> names{"kernel", "rows", "width", "bandwidth", "power", "seed", "pair_mode", "hash_seed"};
  return names;
}
const std::vector<std::string>& feature_arg_names() {
  static const std::vector<std::string> names{"kernel", "features", "sigma", "bins", "domain", "seed", "hash_seed", "num_share"};
  return names;
}

// `value` as T, or TypeError naming the argument.
template <class T>
T arg_as(const py::handle& value, const std::string& name, const char* expected) {
  try {
    return value.cast<T>();
  } catch (const py::cast_error&) {
    throw py::type_error(name + " must be " + expected + ", got " + std::string(py::str(py::repr(value))));
  }
}

std::optional<std::uint64_t> optional_seed(const py::handle& value, const std::string& name) {
  if (value.is_none()) return std::nullopt;
  return arg_as<std::uint64_t>(value, name, "None or an integer 0..2**64-1");
}

// FeatureSketch's domain=: (lo, hi) for every attribute, a list of (lo, hi) per attribute, or the
// CLI's text "LO:HI" / "LO1:HI1,LO2:HI2,...".
std::pair<std::vector<double>, std::vector<double>> feature_domain(const py::handle& domain) {
  if (py::isinstance<py::str>(domain)) return parse_box_domain(domain.cast<std::string>(), "domain");
  const char* expected = "(lo, hi), a list of (lo, hi) per attribute, or 'LO:HI'";
  const auto items = arg_as<std::vector<py::object>>(domain, "domain", expected);
  std::vector<double> lo, hi;
  auto interval = [&](double l, double h, const std::string& at) {
    if (!std::isfinite(l) || !std::isfinite(h) || !(l < h)) {
      std::ostringstream s;
      s << "domain" << at << ": (" << l << ", " << h << ") is not an interval lo < hi of finite numbers";
      throw UsageError(s.str());
    }
    lo.push_back(l);
    hi.push_back(h);
  };
  if (items.size() == 2 && (py::isinstance<py::float_>(items[0]) || py::isinstance<py::int_>(items[0]))) {
    interval(arg_as<double>(items[0], "domain", expected), arg_as<double>(items[1], "domain", expected), "");
    return {lo, hi};
  }
  if (items.empty()) throw UsageError(std::string("domain must be ") + expected + ", got an empty sequence");
  for (std::size_t i = 0; i < items.size(); ++i) {
    const auto pair = arg_as<std::pair<double, double>>(items[i], "domain[" + std::to_string(i) + "]", "a pair (lo, hi)");
    interval(pair.first, pair.second, "[" + std::to_string(i) + "]");
  }
  return {lo, hi};
}

// The parameters that constructor arguments describe (`feature`: FeatureSketch's), validated.
ReleaseParams params_from_args(bool feature, const py::dict& a) {
  ReleaseParams p;
  const std::string kernel = arg_as<std::string>(a["kernel"], "kernel", "a string");
  if (!feature) {
    p.family.kernel = race_kernel(kernel);
    p.family.rows = arg_as<std::size_t>(a["rows"], "rows", "a positive integer");
    p.width = arg_as<std::size_t>(a["width"], "width", "a positive integer");
    p.family.bandwidth = arg_as<double>(a["bandwidth"], "bandwidth", "a positive number");
    p.family.power = arg_as<std::size_t>(a["power"], "power", "a positive integer");
    p.family.pair_mode = parse_pair_mode(arg_as<std::string>(a["pair_mode"], "pair_mode", "'query' or 'insert'"));
  } else {
    p.family.kernel = feature_kernel(kernel);
    p.num_share = arg_as<double>(a["num_share"], "num_share", "a number in (0, 1)");
    if (!(p.num_share > 0.0 && p.num_share < 1.0)) {  // the library names its option --num-share
      std::ostringstream s;
      s << "num_share must be in (0, 1) (the record count needs a share of epsilon), got " << p.num_share;
      throw UsageError(s.str());
    }
    if (kernel_info(p.family.kernel).fields.features_sigma) {  // rff
      if (a["features"].is_none()) throw UsageError("kernel rff needs features= (m = 2 m' random Fourier features, even)");
      if (!a["bins"].is_none() || !a["domain"].is_none())
        throw UsageError("bins= and domain= do not apply to kernel rff (its features are bounded for every record); "
                         "declare M2M's domain with privrace.M2M(..., domain=...)");
      p.family.features = arg_as<std::size_t>(a["features"], "features", "a positive even integer");
      p.family.sigma = a["sigma"].is_none() ? 1.0 : arg_as<double>(a["sigma"], "sigma", "a positive number");
    } else {
      if (!a["features"].is_none() || !a["sigma"].is_none())
        throw UsageError("features= and sigma= do not apply to kernel hist (it has bins= and domain=)");
      if (a["bins"].is_none()) throw UsageError("kernel hist needs bins= (equal bins per attribute)");
      if (a["domain"].is_none())
        throw UsageError("kernel hist needs domain=(lo, hi) (or a list of (lo, hi), one per attribute); records outside are refused");
      p.family.bins = arg_as<std::size_t>(a["bins"], "bins", "a positive integer");
      std::tie(p.family.lo, p.family.hi) = feature_domain(a["domain"]);
    }
  }
  p.seed = optional_seed(a["seed"], "seed");
  p.hash_seed = optional_seed(a["hash_seed"], "hash_seed");
  p.validate("");
  return p;
}

// The constructor arguments that describe `p` (a sketch loaded or made by like(): no seed).
py::dict args_from_params(const ReleaseParams& p) {
  py::dict a;
  const Kernel k = p.family.kernel;
  a["kernel"] = to_string(k);
  if (!is_feature_kernel(k)) {
    a["rows"] = p.family.rows;
    a["width"] = p.width;
    a["bandwidth"] = p.family.bandwidth;
    a["power"] = p.family.power;
    a["seed"] = p.seed ? py::object(py::int_(*p.seed)) : py::object(py::none());
    a["pair_mode"] = to_string(p.family.pair_mode);
    a["hash_seed"] = p.hash_seed ? py::object(py::int_(*p.hash_seed)) : py::object(py::none());
    return a;
  }
  const bool rff = k == Kernel::Rff;
  a["features"] = rff ? py::object(py::int_(p.family.features)) : py::object(py::none());
  a["sigma"] = rff ? py::object(py::float_(p.family.sigma)) : py::object(py::none());
  a["bins"] = rff ? py::object(py::none()) : py::object(py::int_(p.family.bins));
  if (rff) {
    a["domain"] = py::none();
  } else if (p.family.lo.size() == 1 && p.family.hi.size() == 1) {
    a["domain"] = py::make_tuple(p.family.lo[0], p.family.hi[0]);
  } else {
    py::list d;
    for (std::size_t i = 0; i < p.family.lo.size() && i < p.family.hi.size(); ++i) d.append(py::make_tuple(p.family.lo[i], p.family.hi[i]));
    a["domain"] = d;
  }
  a["seed"] = p.seed ? py::object(py::int_(*p.seed)) : py::object(py::none());
  a["hash_seed"] = p.hash_seed ? py::object(py::int_(*p.hash_seed)) : py::object(py::none());
  a["num_share"] = p.num_share;
  return a;
}

// A folder of our own (mode 0700) for the bytes of one sketch file, removed with the object:
// to_bytes and from_bytes go through the library's writer and reader.
class ScratchDir {
 public:
  ScratchDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "privrace-bytes-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) throw Error("cannot create a temporary folder for the sketch's bytes");
    dir_ = pattern;
  }
  ~ScratchDir() {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  std::string file() const { return (dir_ / "sketch.rsk").string(); }

 private:
  std::filesystem::path dir_;
};

std::string read_whole_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("cannot read '" + path + "'");
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// ---------------------------------------------------------------------------------------------
// privrace.dask: the exact counts of one partition of a collection, summed across workers and
// released once. An ExactPartial holds exact (non-private) counts in memory only: it has no save
// or write method and no counts accessor, its repr shows no count, and it pickles (to bytes in
// memory) only so that a Dask worker can hand it to another.

// What a partial's parameters are made from: the RaceSketch arguments (kernel, R, W, bandwidth,
// p, pair mode, seed), the fit's arguments, the master seed drawn once for the whole collection,
// and the records' dimension (0 for sets).
struct PartialSpec {
  ReleaseParams sketch;  // as the RaceSketch constructor set it: no privacy yet
  FitArgs fit;
  std::uint64_t master = 0;
  bool fixed = false;
  std::size_t dim = 0;
};

// The first field in which two partials' parameters differ, or "" (threads and strategy may differ).
std::string spec_difference(const PartialSpec& a, const PartialSpec& b) {
  const ReleaseParams &x = a.sketch, &y = b.sketch;
  if (x.family.kernel != y.family.kernel) return "kernel";
  if (x.family.rows != y.family.rows) return "rows";
  if (x.width != y.width) return "width";
  if (x.family.bandwidth != y.family.bandwidth) return "bandwidth";
  if (x.family.power != y.family.power) return "power";
  if (x.family.pair_mode != y.family.pair_mode) return "pair_mode";
  if (x.seed != y.seed) return "seed";
  if (x.hash_seed != y.hash_seed) return "hash_seed";
  if (a.master != b.master || a.fixed != b.fixed) return "master seed";
  if (a.dim != b.dim) return "dimension";
  if (a.fit.epsilon != b.fit.epsilon) return "epsilon";
  if (a.fit.mechanism != b.fit.mechanism) return "mechanism";
  if (a.fit.delta != b.fit.delta) return "delta";
  if (a.fit.neighbors != b.fit.neighbors) return "neighbors";
  if (a.fit.allow_non_private != b.fit.allow_non_private) return "allow_non_private";
  return "";
}

class PyExactPartial {
 public:
  PyExactPartial(PartialSpec spec, ExactSketch exact) : spec_(std::move(spec)), exact_(std::move(exact)) {
    threads_ = exact_->report().threads;
    strategy_ = to_string(exact_->report().strategy);
  }

  const PartialSpec& spec() const { return spec_; }
  int build_threads() const { return threads_; }
  const std::string& build_strategy() const { return strategy_; }
  const ExactSketch& exact() const {
    if (!exact_) throw UsageError("this exact partial was released already (noise is added once)");
    return *exact_;
  }
  // Hands the exact counts over to a release; the object is spent afterwards.
  ExactSketch take() {
    exact();
    ExactSketch e = std::move(*exact_);
    exact_.reset();
    return e;
  }

  // The exact sum of partials of disjoint records (same parameters and master seed): a new
  // object; the parts are unchanged.
  static PyExactPartial sum(const std::vector<const PyExactPartial*>& parts);

  // Pickle state: the parameters, the build record and the counts as bytes (in memory only);
  // version 2 adds the hash seed.
  py::tuple state() const;
  static PyExactPartial from_state(const py::tuple& t);

  std::string repr() const {
    const ReleaseParams& p = spec_.sketch;
    return "ExactPartial(kernel='" + to_string(p.family.kernel) + "', rows=" + std::to_string(p.family.rows) +
           ", width=" + std::to_string(p.width) + (exact_ ? ", exact counts in memory, not private" : ", released") + ")";
  }

 private:
  PartialSpec spec_;
  std::optional<ExactSketch> exact_;
  int threads_ = 1;        // the build record of the release: the partitions' thread count
  std::string strategy_;   // and the strategy of the first partition with records
};

class PyRaceSketch {
 public:
  // Polymorphic, so that a method returning the sketch itself (fit, merge) returns the Python
  // object it was called on, FeatureSketch included.
  virtual ~PyRaceSketch() = default;
  PyRaceSketch(PyRaceSketch&&) = default;
  PyRaceSketch& operator=(PyRaceSketch&&) = default;

  // From constructor arguments (RaceSketch's, or with `feature` FeatureSketch's), kept as given.
  PyRaceSketch(bool feature, py::dict args) : params_(params_from_args(feature, args)), args_(std::move(args)) {}
  explicit PyRaceSketch(RaceSketch loaded, nlohmann::json header) : sketch_(std::move(loaded)), header_(std::move(header)) {
    params_.width = sketch_->width();
    params_.family.kernel = parse_kernel(sketch_->family().kernel_name());
    params_.family.rows = sketch_->rows();
    try {  // every public parameter the header records (no seed: refitting draws new noise)
      params_ = like_params(header_, params_);
    } catch (const Error&) {
    }
    params_.seed.reset();
    params_.hash_seed.reset();
  }

  // From the parameters of a RaceSketch (privrace.dask rebuilds one where the partials meet).
  explicit PyRaceSketch(const ReleaseParams& base) : params_(base) {
    params_.privacy.reset();
    params_.validate("");
  }

  bool feature_kernel() const { return is_feature_kernel(params_.family.kernel); }

  // scikit-learn's conventions: the constructor arguments by name, as they were given.
  py::dict get_params() const {
    if (args_.empty()) args_ = args_from_params(params_);
    return args_.attr("copy")().cast<py::dict>();  // a new dict holding the same objects
  }
  void set_params(const py::kwargs& changes) {
    const std::vector<std::string>& names = feature_kernel() ? feature_arg_names() : race_arg_names();
    std::string unknown, valid;
    for (const auto& name : names) valid += (valid.empty() ? "" : ", ") + name;
    for (const auto& item : changes) {
      const std::string name = py::str(item.first);
      if (std::find(names.begin(), names.end(), name) == names.end()) unknown += (unknown.empty() ? "'" : ", '") + name + "'";
    }
    if (!unknown.empty())
      throw UsageError("invalid parameter(s) " + unknown + " for " + class_name() + "; valid parameters: " + valid);
    py::dict merged = get_params();
    for (const auto& item : changes) merged[item.first] = item.second;
    ReleaseParams p = params_from_args(feature_kernel(), merged);  // the sketch is unchanged when refused
    params_ = std::move(p);
    args_ = std::move(merged);
  }
  std::string class_name() const { return feature_kernel() ? "FeatureSketch" : "RaceSketch"; }

  bool set_kernel() const { return is_set_kernel(params_.family.kernel); }

  // RaceSketch.like(other): a new, unfitted sketch with every public parameter of `other` (a
  // RaceSketch, fitted or loaded, or the path of a sketch file, rff and hist included): kernel,
  // R, W, bandwidth, power, pair mode, features, sigma, bins, domain and the hash seed. No master
  // seed: its noise comes from the OS.
  static PyRaceSketch like(const py::object& other) {
    nlohmann::json header;
    if (py::isinstance<PyRaceSketch>(other)) {
      const PyRaceSketch& o = other.cast<const PyRaceSketch&>();
      const auto lock = o.read_lock();
      if (!o.sketch_) {
        // Not fitted: its parameters, with the hash seed it will use.
        ReleaseParams p = o.params_;
        if (!p.hash_seed) {
          if (!p.seed)
            throw UsageError("like(other): other is not fitted and has no hash_seed, so its hash functions are drawn when "
                             "it is fitted; fit it first, or give both sketches hash_seed=");
          p.hash_seed = MasterSeed::resolve(p.seed).hash_seed();
        }
        p.seed.reset();
        return PyRaceSketch(p);
      }
      header = sketch_header(*o.sketch_);
    } else {
      const std::string path = py::str(py::module_::import("os").attr("fspath")(other));
      py::gil_scoped_release unlocked;
      load_sketch(path, &header);
    }
    ReleaseParams p = like_params(header);
    p.seed.reset();
    return PyRaceSketch(p);
  }

  // privrace.dask: the exact counts of one block of rows, hashed with the collection's master
  // seed. `first_row` is the block's first row in the collection (a multiple of the builder's
  // 4096-row batch, so its batches are those of one process); `partition_starts` the first rows
  // of the user's partitions that the block overlaps, the first numbered `first_partition` (for
  // messages).
  PyExactPartial exact_partial(const py::handle& x, const FitArgs& args, std::uint64_t master, bool fixed,
                               std::size_t dim, std::uint64_t first_row, std::vector<std::uint64_t> partition_starts,
                               std::size_t first_partition) const {
    if (set_kernel())
      throw UsageError("the " + to_string(params_.family.kernel) + " kernel sketches sets: pass a dask bag of sets");
    const ReleaseParams params = fit_params(args);
    DenseInput input(x, "data", first_row, std::move(partition_starts), first_partition);
    if (input.cols() != dim)
      throw UsageError("data: " + input.row_text(0) + ": " + std::to_string(input.cols()) + " columns, expected " +
                       std::to_string(dim));
    const MasterSeed seed = MasterSeed::of(master, fixed);
    std::optional<ExactSketch> exact;
    {
      py::gil_scoped_release unlocked;
      exact.emplace(build_exact_dense(params, seed, input));
    }
    return PyExactPartial(PartialSpec{params_, args, master, fixed, dim}, std::move(*exact));
  }

  PyExactPartial exact_partial_sets(const py::handle& sets_obj, const FitArgs& args, std::uint64_t master, bool fixed,
                                    std::size_t partition) const {
    if (!set_kernel())
      throw UsageError("the " + to_string(params_.family.kernel) + " kernel sketches dense records: pass a dask array or dataframe");
    const ReleaseParams params = fit_params(args);
    const SetCollection sets = to_sets(sets_obj, "sets", true, [partition](std::size_t i) {
      return "sets: partition " + std::to_string(partition) + ": sets[" + std::to_string(i) + "]";
    });
    const MasterSeed seed = MasterSeed::of(master, fixed);
    std::optional<ExactSketch> exact;
    {
      py::gil_scoped_release unlocked;
      exact.emplace(build_exact(params, seed, sets));
    }
    return PyExactPartial(PartialSpec{params_, args, master, fixed, 0}, std::move(*exact));
  }

  // The exact counts of no records with a partial's parameters (what a pickled partial's counts
  // are copied into).
  static ExactSketch empty_exact(const PartialSpec& spec) {
    ReleaseParams params = PyRaceSketch(spec.sketch).fit_params(spec.fit);
    params.threads = 1;
    const MasterSeed seed = MasterSeed::of(spec.master, spec.fixed);
    if (is_set_kernel(params.family.kernel)) return build_exact(params, seed, SetCollection{});
    const DenseMatrix none(0, static_cast<Eigen::Index>(spec.dim));
    return build_exact(params, seed, DenseRef(none));
  }

  // privrace.dask: noise ONCE on the summed exact counts, as fit() adds it (the master seed's
  // noise: the seeded stream, or the OS CSPRNG); the partial is spent.
  static PyRaceSketch release_partial(PyExactPartial& partial) {
    PyRaceSketch out(partial.spec().sketch);
    const int threads = partial.build_threads();
    const std::string strategy = partial.build_strategy();
    if (partial.exact().report().points == 0) throw UsageError("the collection has no records (every partition is empty)");
    ExactSketch exact = partial.take();
    std::optional<Release> release;
    double seconds = 0.0;
    {
      py::gil_scoped_release unlocked;
      const double t0 = now();
      release.emplace(std::move(exact).release());
      seconds = now() - t0;
    }
    out.install(std::move(*release), "dask partitions", 0, seconds);
    // The build record of one process: the per-build thread count and strategy.
    out.header_["build"]["threads"] = threads;
    out.header_["build"]["strategy"] = strategy;
    out.fit_report_["threads"] = threads;
    out.fit_report_["strategy"] = strategy;
    out.allow_non_private_ = partial.spec().fit.allow_non_private;
    return out;
  }

  // X: records x attributes. Builds a new sketch (any previous one is replaced).
  PyRaceSketch& fit(const py::handle& x, const FitArgs& args) {
    if (set_kernel())
      throw UsageError("the " + to_string(params_.family.kernel) + " kernel sketches sets: use fit_sets(list_of_arrays)");
    const ReleaseParams params = fit_params(args);
    DenseInput input(x, "X");
    if (input.rows() == 0) throw UsageError("X has no rows (shape (0, " + std::to_string(input.cols()) + "))");
    // The CLI's seeds: a seeded sketch equals `privrace sketch --seed`.
    const MasterSeed seed = MasterSeed::resolve(params.seed);
    PythonErrorSlot signals;
    try {
      py::gil_scoped_release unlocked;
      const std::unique_lock lock(*mutex_);
      const double t0 = now();
      Release release = build_exact_dense(params, seed, input, &signals).release();
      install(std::move(release), input.in_place() ? "in place" : "converted to float32 in blocks", input.address(),
              now() - t0);
      allow_non_private_ = args.allow_non_private;
    } catch (const PendingPythonError&) {
      signals.rethrow();  // KeyboardInterrupt (or what a signal handler raised); the sketch is unchanged
    }
    return *this;
  }

  PyRaceSketch& fit_sets(const py::handle& sets_obj, const FitArgs& args) {
    if (!set_kernel())
      throw UsageError("fit_sets needs kernel='jaccard' (this sketch's kernel is " + to_string(params_.family.kernel) + ")");
    const ReleaseParams params = fit_params(args);
    const SetCollection sets = to_sets(sets_obj, "sets");
    const MasterSeed seed = MasterSeed::resolve(params.seed);
    py::gil_scoped_release unlocked;
    const std::unique_lock lock(*mutex_);
    const double t0 = now();
    Release release = build_exact(params, seed, sets).release();
    install(std::move(release), "sets", 0, now() - t0);
    allow_non_private_ = args.allow_non_private;
    return *this;
  }

  std::vector<double> kernel_sums(const py::handle& q, const QueryOptions& opts) const {
    const auto lock = read_lock();
    return kernel_sums_locked(q, opts);
  }

  // Densities: kernel sums / N-hat, what `privrace query` prints.
  std::vector<double> query(const py::handle& q, const QueryOptions& opts) const {
    const auto lock = read_lock();
    std::vector<double> sums = kernel_sums_locked(q, opts);
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
    const auto lock = read_lock();
    save_locked(path, allow_non_private);
  }

  // The sketch file's bytes (the library's writer, through a private temporary file). Exact
  // counts only with allow_non_private=True, or when the sketch was fitted with it.
  py::bytes to_bytes(bool allow_non_private) const {
    const auto lock = read_lock();
    const ScratchDir dir;
    save_locked(dir.file(), allow_non_private || allow_non_private_);
    std::string bytes;
    {
      py::gil_scoped_release unlocked;
      bytes = read_whole_file(dir.file());
    }
    return py::bytes(bytes);
  }

  // A sketch from a sketch file's bytes (the library's reader); `feature`: FeatureSketch's kinds.
  static PyRaceSketch from_bytes(const py::bytes& b, bool feature) {
    const ScratchDir dir;
    {
      const std::string data = b;
      py::gil_scoped_release unlocked;
      write_file_atomically(dir.file(), data);
    }
    return load_as(dir.file(), feature, "bytes");
  }

  // Pickle state: (1, the constructor arguments, allow_non_private, the file's bytes or None).
  py::tuple state() const {
    py::object bytes = py::none();
    if (fitted_flag()) {
      bool exact = false;
      {
        const auto lock = read_lock();
        exact = !fitted().is_private();
      }
      if (exact && !allow_non_private_)
        throw UsageError("this " + class_name() +
                         " holds exact counts and was not fitted with allow_non_private=True: it is not pickled "
                         "(to_bytes(allow_non_private=True) writes its bytes deliberately)");
      bytes = to_bytes(false);
    }
    return py::make_tuple(1, get_params(), allow_non_private_, bytes);
  }
  static PyRaceSketch from_state(const py::tuple& t, bool feature) {
    if (t.size() != 4 || t[0].cast<int>() != 1) throw UsageError("not the state of a privrace sketch (version 1, 4 fields)");
    const py::dict args = t[1].cast<py::dict>();
    PyRaceSketch out = t[3].is_none() ? PyRaceSketch(feature, args) : from_bytes(t[3].cast<py::bytes>(), feature);
    out.params_ = params_from_args(feature, args);
    out.args_ = args;
    out.allow_non_private_ = t[2].cast<bool>();
    return out;
  }

  void save_locked(const std::string& path, bool allow_non_private) const {
    const RaceSketch& s = fitted();
    nlohmann::json extra = nlohmann::json::object();
    if (header_.contains("build")) extra["build"] = public_build(header_.at("build"), s.is_private());
    if (header_.contains("merged_inputs")) extra["merged_inputs"] = header_.at("merged_inputs");
    py::gil_scoped_release unlocked;
    save_sketch(path, s, allow_non_private, extra);
  }

  static PyRaceSketch load(const std::string& path) { return load_as(path, false, "'" + path + "'"); }

  // A sketch file as RaceSketch (RACE sketches) or, with `feature`, FeatureSketch (rff, hist).
  // `what` names the source in messages ("'path'", "bytes").
  static PyRaceSketch load_as(const std::string& path, bool feature, const std::string& what) {
    nlohmann::json header;
    std::optional<RaceSketch> s;
    {
      py::gil_scoped_release unlocked;
      s.emplace(load_sketch(path, &header));
    }
    const std::string kind = sketch_kind(s->family());
    const bool is_feature = s->family().accumulates_values() || kind != "race";
    if (is_feature && !feature)
      throw UsageError(what + ": a " + kind +
                       " feature sketch (M2M); RaceSketch reads RACE sketches (read it with privrace.FeatureSketch.load or "
                       "privrace.M2M(path, domain=...))");
    if (!is_feature && feature)
      throw UsageError(what + ": a RACE sketch; FeatureSketch reads rff and hist sketches (read it with privrace.RaceSketch.load)");
    warn_if_not_fit(s->privacy(), "load " + what);
    return PyRaceSketch(std::move(*s), std::move(header));
  }

  // The sketch as M2M reads it (privrace.M2M(sketch)): its counts and its header.
  FeatureSketchRelease feature_release() const {
    const auto lock = read_lock();
    const RaceSketch& s = fitted();
    nlohmann::json h = sketch_header(s);
    for (const char* key : {"build", "merged_inputs"})
      if (header_.contains(key)) h[key] = header_.at(key);
    py::gil_scoped_release unlocked;
    return feature_release_of(s, h);
  }

  PyRaceSketch& merge(const PyRaceSketch& other) {
    if (&other == this) throw UsageError("cannot merge a sketch with itself (merge sketches of disjoint records)");
    // Both locks, in address order (a.merge(b) and b.merge(a) at once cannot deadlock).
    std::unique_lock<WriterFirstMutex> mine(*mutex_, std::defer_lock);
    std::shared_lock<WriterFirstMutex> theirs(*other.mutex_, std::defer_lock);
    {
      py::gil_scoped_release unlocked;
      if (mutex_.get() < other.mutex_.get()) {
        mine.lock();
        theirs.lock();
      } else {
        theirs.lock();
        mine.lock();
      }
    }
    RaceSketch& s = fitted_mutable();
    const RaceSketch& part = other.fitted();
    // Before the merge: under warnings-as-errors the target stays unchanged.
    warn_if_not_fit(s.privacy(), "merge");
    if (release_warning(s.privacy()) == std::nullopt) warn_if_not_fit(part.privacy(), "merge");
    ReleaseMerge merge(s);
    merge.add(part);  // refuses different parameters and private + exact; s unchanged then
    merge.finish();
    header_.erase("build");
    return *this;
  }

  py::dict header() const {
    const auto lock = read_lock();
    const RaceSketch& s = fitted();
    nlohmann::json h = sketch_header(s);
    for (const char* key : {"build", "merged_inputs"})
      if (header_.contains(key)) h[key] = header_.at(key);
    return to_python(h);
  }

  py::array_t<std::int64_t> counts() const {
    const auto lock = read_lock();
    const RaceSketch& s = fitted();
    py::array_t<std::int64_t> out({s.rows(), s.width()});
    std::memcpy(out.mutable_data(), s.counts().data(), s.counts().size_bytes());
    return out;
  }

  // A property of the fitted sketch, read under the shared lock.
  template <class F>
  auto read(F&& f) const {
    const auto lock = read_lock();
    return f(fitted());
  }

  py::dict fit_report() const {
    const auto lock = read_lock();
    return to_python(fit_report_);
  }
  bool fitted_flag() const {
    const auto lock = read_lock();
    return sketch_.has_value();
  }
  const RaceSketch& fitted() const {
    if (!sketch_) throw UsageError("the sketch is not fitted yet: call fit(X, epsilon=...) or RaceSketch.load(path)");
    return *sketch_;
  }
  std::string repr() const {
    const auto lock = read_lock();
    std::ostringstream s;
    s << class_name() << "(kernel='" << to_string(params_.family.kernel) << "'";
    if (!is_feature_kernel(params_.family.kernel)) s << ", rows=" << params_.family.rows << ", width=" << params_.width;
    if (params_.family.kernel == Kernel::Rff) s << ", features=" << params_.family.features << ", sigma=" << params_.family.sigma;
    if (params_.family.kernel == Kernel::Hist) s << ", bins=" << params_.family.bins;
    if (params_.hash_seed) s << ", hash_seed=" << *params_.hash_seed;
    if (sketch_) s << ", fitted, " << (sketch_->is_private() ? "private" : "NOT private");
    s << ")";
    return s.str();
  }

 private:
  // The shared lock, waited for without the GIL; returns with the GIL held again.
  std::shared_lock<WriterFirstMutex> read_lock() const {
    py::gil_scoped_release unlocked;
    return std::shared_lock<WriterFirstMutex>(*mutex_);
  }

  static double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

  // kernel_sums under the caller's shared lock (the GIL held).
  std::vector<double> kernel_sums_locked(const py::handle& q, const QueryOptions& opts) const {
    const RaceSketch& s = fitted();
    if (s.family().accumulates_values() || sketch_kind(s.family()) != "race")
      throw UsageError("a " + sketch_kind(s.family()) +
                       " feature sketch answers no kernel queries: save it and read it with privrace.M2M(path, domain=...)");
    warn_if_not_fit(s.privacy(), "query");
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

  RaceSketch& fitted_mutable() {
    fitted();
    return *sketch_;
  }

  // The sketch's parameters with this fit's privacy, threads and strategy, validated.
  ReleaseParams fit_params(const FitArgs& args) const {
    ReleaseParams params = params_;
    params.privacy = privacy_spec(args);
    params.threads = args.threads;
    params.strategy = parse_build_strategy(args.strategy, params.kernel(), "");  // the Python argument's one parse
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

  // The header's build record as the file may hold it: a private sketch's has public fields
  // only (threads, strategy); the exact record count and the input stay in fit_report. An exact
  // sketch (written only with allow_non_private=True) keeps them.
  static nlohmann::json public_build(const nlohmann::json& build, bool is_private) {
    if (!is_private || !build.is_object()) return build;
    nlohmann::json out = nlohmann::json::object();
    for (const char* key : {"threads", "strategy"})
      if (build.contains(key)) out[key] = build.at(key);
    return out;
  }

  // Runs with or without the GIL (no Python object is touched), under the exclusive lock.
  void install(Release release, const std::string& input, std::uintptr_t address, double seconds) {
    const BuildReport report = release.build();
    fit_report_ = {{"points", report.points}, {"threads", report.threads}, {"strategy", report.strategy},
                   {"seconds", seconds},      {"input", input},            {"data_address", address}};
    header_ = nlohmann::json::object();
    header_["build"] = public_build(release.build_record("numpy"), release.is_private());
    sketch_.emplace(std::move(release).take_sketch());
  }

  ReleaseParams params_;  // kernel, R, W, bandwidth, p, pair mode, master seed, hash seed
  // The constructor arguments as given (empty: made from params_ when asked, for loaded sketches).
  mutable py::dict args_;
  bool allow_non_private_ = false;  // the last fit had allow_non_private=True (exact counts may pickle)
  std::optional<RaceSketch> sketch_;
  nlohmann::json header_ = nlohmann::json::object();
  nlohmann::json fit_report_;
  // fit, fit_sets, merge: exclusive; the rest: shared. A pointer, so that the object moves.
  std::unique_ptr<WriterFirstMutex> mutex_ = std::make_unique<WriterFirstMutex>();
};

// privrace.FeatureSketch: a RaceSketch of the feature kernels (rff, hist) for M2M, with their own
// constructor arguments; everything else is RaceSketch's (the release API handles the kernels).
class PyFeatureSketch : public PyRaceSketch {
 public:
  explicit PyFeatureSketch(PyRaceSketch&& base) : PyRaceSketch(std::move(base)) {}
};

// A sketch as the Python class its kernel calls for.
py::object as_python(PyRaceSketch&& sketch) {
  if (sketch.feature_kernel()) return py::cast(PyFeatureSketch(std::move(sketch)));
  return py::cast(std::move(sketch));
}

PyExactPartial PyExactPartial::sum(const std::vector<const PyExactPartial*>& parts) {
  if (parts.empty()) throw UsageError("no exact partials to combine");
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (parts[i] == nullptr) throw UsageError("exact partial " + std::to_string(i) + " is None");
    parts[i]->exact();  // refuses a spent one
    const std::string diff = spec_difference(parts[0]->spec_, parts[i]->spec_);
    if (!diff.empty())
      throw InputError("cannot combine exact partial counts: part " + std::to_string(i) + " has a different " + diff +
                       " than part 0");
  }
  PyExactPartial out = *parts[0];
  {
    py::gil_scoped_release unlocked;
    for (std::size_t i = 1; i < parts.size(); ++i) out.exact_->merge(*parts[i]->exact_);  // checks the family too
  }
  // The build record: the most threads any share used, the strategy of the first share with records.
  for (const PyExactPartial* p : parts) out.threads_ = std::max(out.threads_, p->threads_);
  for (const PyExactPartial* p : parts)
    if (p->exact_->report().points > 0) {
      out.strategy_ = p->strategy_;
      break;
    }
  return out;
}

py::tuple PyExactPartial::state() const {
  const ExactSketch& e = exact();
  const ReleaseParams& p = spec_.sketch;
  const FitArgs& f = spec_.fit;
  const auto counts = e.counts().counts();
  return py::make_tuple(2, to_string(p.family.kernel), p.family.rows, p.width, p.family.bandwidth, p.family.power,
                        p.seed ? py::object(py::int_(*p.seed)) : py::object(py::none()), to_string(p.family.pair_mode),
                        f.epsilon ? py::object(py::float_(*f.epsilon)) : py::object(py::none()), f.mechanism, f.delta,
                        f.neighbors, f.threads, f.allow_non_private, f.strategy, spec_.master, spec_.fixed, spec_.dim,
                        e.report().points, threads_, strategy_,
                        py::bytes(reinterpret_cast<const char*>(counts.data()), counts.size_bytes()),
                        p.hash_seed ? py::object(py::int_(*p.hash_seed)) : py::object(py::none()));
}

PyExactPartial PyExactPartial::from_state(const py::tuple& t) {
  if (t.size() != 23 || t[0].cast<int>() != 2) throw UsageError("not the state of an exact partial (version 2, 23 fields)");
  PartialSpec spec;
  ReleaseParams& p = spec.sketch;
  p.family.kernel = race_kernel(t[1].cast<std::string>());
  p.family.rows = t[2].cast<std::size_t>();
  p.width = t[3].cast<std::size_t>();
  p.family.bandwidth = t[4].cast<double>();
  p.family.power = t[5].cast<std::size_t>();
  p.seed = t[6].cast<std::optional<std::uint64_t>>();
  p.family.pair_mode = parse_pair_mode(t[7].cast<std::string>());
  p.hash_seed = t[22].cast<std::optional<std::uint64_t>>();
  FitArgs& f = spec.fit;
  f.epsilon = t[8].cast<std::optional<double>>();
  f.mechanism = t[9].cast<std::string>();
  f.delta = t[10].cast<double>();
  f.neighbors = t[11].cast<std::string>();
  f.threads = t[12].cast<int>();
  f.allow_non_private = t[13].cast<bool>();
  f.strategy = t[14].cast<std::string>();
  spec.master = t[15].cast<std::uint64_t>();
  spec.fixed = t[16].cast<bool>();
  spec.dim = t[17].cast<std::size_t>();
  const auto points = t[18].cast<std::size_t>();
  const int threads = t[19].cast<int>();
  const auto strategy = t[20].cast<std::string>();
  const auto bytes = t[21].cast<py::bytes>();
  char* data = nullptr;
  Py_ssize_t size = 0;
  if (PyBytes_AsStringAndSize(bytes.ptr(), &data, &size) != 0) throw py::error_already_set();
  ExactSketch exact = PyRaceSketch::empty_exact(spec);
  auto counts = exact.partial_counts();
  if (static_cast<std::size_t>(size) != counts.size_bytes())
    throw UsageError("an exact partial's state holds " + std::to_string(size) + " bytes of counts, its parameters need " +
                     std::to_string(counts.size_bytes()));
  std::memcpy(counts.data(), data, counts.size_bytes());
  exact.add_reduced_records(static_cast<std::int64_t>(points));
  PyExactPartial out(std::move(spec), std::move(exact));
  out.threads_ = threads;
  out.strategy_ = strategy;
  return out;
}

// privrace.UnsupportedTaskWarning (a UserWarning subclass), created with the module: M2M answered
// a task its sketch's features cannot identify (allow_unsupported=True).
PyObject* g_unsupported_task_warning = nullptr;

// M2M over a released feature sketch (rff, hist, or a RACE sketch): the library's M2mModel and
// the section-4 task functions on its weighted synthetic points. Post-processing only. The domain
// (None: the one a HIST sketch records), the refusals and their messages are the library's
// (m2m_domain, check_m2m_task), naming the Python arguments.
class PyM2M {
 public:
  PyM2M(const py::object& source, const py::object& domain, std::size_t samples, std::uint64_t seed, int threads,
        bool intercept, const std::string& lambda_rule, bool allow_unsupported) {
    if (samples == 0) throw UsageError("samples must be positive");
    if (py::isinstance<PyRaceSketch>(source)) {  // a fitted or loaded sketch in memory
      release_ = source.cast<const PyRaceSketch&>().feature_release();
    } else {
      const std::string path = py::str(py::module_::import("os").attr("fspath")(source));
      py::gil_scoped_release unlocked;
      release_ = load_feature_release(path);
    }
    const std::size_t dim = release_.map->input_dim();
    options_.domain_option = "domain=";
    options_.allow_option = "allow_unsupported=True";
    options_.allow_unsupported = allow_unsupported;
    if (!domain.is_none()) {  // else empty: the recorded domain, or the library's refusal naming domain=
      options_.domain = to_domain(domain, dim);
      options_.domain.check();
    }
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

  Eigen::VectorXd mean() const {
    check_task(M2mTask::Mean);
    return weighted_means(synthetic_, omega_);
  }
  Eigen::VectorXd moment2() const {
    check_task(M2mTask::Moment2);
    return weighted_second_moments(synthetic_, omega_);
  }
  DoubleMatrix cdf(std::size_t points) const {
    if (points == 0) throw UsageError("points must be positive");
    check_task(M2mTask::Cdf);
    return weighted_cdfs(synthetic_, omega_, cdf_points(model_->domain(), points));  // the domain fitted on
  }
  Eigen::MatrixXd cov() const {
    if (synthetic_.cols() < 2) throw UsageError("cov needs at least 2 attributes, the sketch has 1");
    check_task(M2mTask::Cov);
    return weighted_covariance(synthetic_, omega_, weighted_means(synthetic_, omega_));
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
    check_task(M2mTask::Count, qs);
    return weighted_counts(synthetic_, omega_, qs);
  }
  double released_count() const { return model_->count_used(); }
  double lambda() const { return model_->lambda(); }
  const Eigen::VectorXd& weights() const { return model_->weights(); }
  const DoubleMatrix& synthetic() const { return synthetic_; }
  py::dict header() const { return to_python(release_.header); }
  py::dict describe() const { return to_python(model_->describe()); }

 private:
  // The library's task check (as answer_m2m makes it): ValueError naming allow_unsupported=True
  // when the sketch's features cannot identify `task`; with allow_unsupported=True, the answer
  // comes with privrace.UnsupportedTaskWarning instead.
  void check_task(M2mTask task, const std::vector<CountingQuery>& queries = {}) const {
    const std::string warning = check_m2m_task(*release_.map, task, queries, options_);
    if (!warning.empty() && PyErr_WarnEx(g_unsupported_task_warning, warning.c_str(), 1) < 0)
      throw py::error_already_set();
  }

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

namespace {

// Python exceptions for the library's errors, and privrace.NotFitForReleaseWarning.
void bind_errors(py::module_& m) {
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const ResourceError& e) {
      PyErr_SetString(PyExc_MemoryError, python_wording(e.what()).c_str());
    } catch (const Error& e) {
      PyErr_SetString(is_file_error(e.what()) ? PyExc_OSError : PyExc_ValueError, python_wording(e.what()).c_str());
    }
  });

  g_not_fit_warning = PyErr_NewExceptionWithDoc(
      "privrace.NotFitForReleaseWarning",
      "A sketch that is not fit for release (seeded noise, or exact counts) was loaded, merged or queried.",
      PyExc_UserWarning, nullptr);
  if (!g_not_fit_warning) throw py::error_already_set();
  m.attr("NotFitForReleaseWarning") = py::reinterpret_borrow<py::object>(g_not_fit_warning);
}

// privrace.RaceSketch: the class, its constructors, and its fits and queries.
py::class_<PyRaceSketch> bind_race_sketch(py::module_& m) {
  py::class_<PyRaceSketch> cls(m, "RaceSketch", R"doc(
A RACE sketch (R rows x W counters) of a data set, released with differential privacy.

RaceSketch(kernel="l2", rows, width, bandwidth=1.0, power=1, seed=None, pair_mode="query", hash_seed=None)
  kernel: l2 (p-stable), angular (SRP), angular_pair, jaccard or jaccard_classic (sets).
  seed: fixes the LSH functions and the noise, exactly as `privrace sketch --seed`; a seeded
        sketch is recorded as NOT fit for release. None draws both from the OS.
  hash_seed: the LSH functions' seed itself (public, header["family"]["seed"]); the noise still
        comes from `seed` or the OS. Owners who share a hash_seed (and no seed) release sketches
        that merge and are each fit for release. RaceSketch.like(other) copies it.
A sketch that is not fit for release (seeded noise, exact counts) warns with
privrace.NotFitForReleaseWarning when it is loaded, merged or queried. A RaceSketch may be shared
by threads: fit and merge wait for queries and saves in progress, and the reverse.)doc");
  cls.def(py::init([](py::object kernel, py::object rows, py::object width, py::object bandwidth, py::object power,
                       py::object seed, py::object pair_mode, py::object hash_seed) {
             py::dict a;
             a["kernel"] = kernel, a["rows"] = rows, a["width"] = width, a["bandwidth"] = bandwidth, a["power"] = power;
             a["seed"] = seed, a["pair_mode"] = pair_mode, a["hash_seed"] = hash_seed;
             return PyRaceSketch(false, std::move(a));
           }),
           py::arg("kernel") = "l2", py::kw_only(), py::arg("rows"), py::arg("width"), py::arg("bandwidth") = 1.0,
           py::arg("power") = 1, py::arg("seed") = py::none(), py::arg("pair_mode") = "query",
           py::arg("hash_seed") = py::none())
      .def_static("like", [](const py::object& other) { return as_python(PyRaceSketch::like(other)); }, py::arg("other"),
                  R"doc(A new, unfitted sketch with every public parameter of `other` (a RaceSketch, fitted or loaded, or
the path of a sketch file, rff and hist feature sketches included): kernel, rows, width, bandwidth,
power, pair mode, features, sigma, bins, domain and the hash seed. It has no seed: its noise comes
from the OS, so it is fit for release, and it merges with `other`'s release. A FeatureSketch for
rff and hist parameters.)doc")
      .def(
          "fit",
          [](PyRaceSketch& self, const py::handle& x, std::optional<double> epsilon, const std::string& mechanism,
             double delta, const std::string& neighbors, int threads, bool allow_non_private,
             const std::string& strategy, const py::handle& columns) -> PyRaceSketch& {
            const py::object selected = select_columns(x, columns);
            return self.fit(selected, FitArgs{epsilon, mechanism, delta, neighbors, threads, allow_non_private, strategy});
          },
          py::arg("X"), py::kw_only(), py::arg("epsilon"), py::arg("mechanism") = "discrete_laplace",
          py::arg("delta") = 0.0, py::arg("neighbors") = "add-remove", py::arg("threads") = 0,
          py::arg("allow_non_private") = false, py::arg("strategy") = "auto", py::arg("columns") = py::none(),
          py::return_value_policy::reference_internal,
          R"doc(Sketch the rows of X (2-D, float32 or float64) and add the release noise.
epsilon > 0 is required; epsilon=None with allow_non_private=True keeps exact counts (never for release).
mechanism: discrete_laplace | floored_laplace | gaussian (with delta); neighbors: add-remove | replace.
threads=0 uses every core; the counts do not depend on it. The GIL is released while building;
Ctrl-C (KeyboardInterrupt) stops a fit between blocks of rows. Arrays of either byte order are read.
columns=[...] sketches only those columns of X, by name (a pandas DataFrame) or 0-based position, in the
order given; columns not selected are never converted (a text or date column is ignored).)doc")
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
          "Density estimates: kernel sums / N-hat (`privrace query`).");
  return cls;
}

// RaceSketch: files, bytes, pickling, scikit-learn parameters and merging.
void bind_race_sketch_storage(py::class_<PyRaceSketch>& cls) {
  cls.def("save", &PyRaceSketch::save, py::arg("path"), py::kw_only(), py::arg("allow_non_private") = false,
           "Write the sketch file (the CLI's format). A sketch without noise needs allow_non_private=True.")
      .def_static("load", &PyRaceSketch::load, py::arg("path"), "Read a RACE sketch file written by save or `privrace sketch`.")
      .def("to_bytes", &PyRaceSketch::to_bytes, py::kw_only(), py::arg("allow_non_private") = false,
           "The sketch file's bytes (the format save writes). Exact counts need allow_non_private=True, or a sketch "
           "fitted with it.")
      .def_static(
          "from_bytes", [](const py::bytes& b) { return PyRaceSketch::from_bytes(b, false); }, py::arg("data"),
          "A RaceSketch from a sketch file's bytes (to_bytes, or a file's contents).")
      .def(py::pickle([](const PyRaceSketch& self) { return self.state(); },
                      [](const py::tuple& t) { return PyRaceSketch::from_state(t, false); }))
      .def(
          "get_params", [](const PyRaceSketch& self, bool) { return self.get_params(); }, py::arg("deep") = true,
          "The constructor arguments by name (scikit-learn's convention; a loaded sketch's are read from its header).")
      .def(
          "set_params",
          [](py::object self, const py::kwargs& params) {
            self.cast<PyRaceSketch&>().set_params(params);
            return self;
          },
          "Sets constructor arguments by name (validated as the constructor does; ValueError naming unknown ones); "
          "returns self. A fitted sketch keeps its counts until the next fit.")
      .def("merge", &PyRaceSketch::merge, py::arg("other"), py::return_value_policy::reference_internal,
           "Add another sketch of disjoint data built with the same parameters and seed (`privrace merge`).");
}

// RaceSketch: its read-only properties, and the exact partials privrace.dask makes on workers.
void bind_race_sketch_state(py::class_<PyRaceSketch>& cls) {
  cls.def_property_readonly("header", &PyRaceSketch::header, "The file header (family, privacy record, n_hat, ...) as a dict.")
      .def_property_readonly("counts", &PyRaceSketch::counts, "The R x W counters (int64, a copy).")
      .def_property_readonly("n_hat", [](const PyRaceSketch& self) { return self.read([](const RaceSketch& s) { return s.n_hat(); }); })
      .def_property_readonly("rows", [](const PyRaceSketch& self) { return self.read([](const RaceSketch& s) { return s.rows(); }); })
      .def_property_readonly("width", [](const PyRaceSketch& self) { return self.read([](const RaceSketch& s) { return s.width(); }); })
      .def_property_readonly("is_private",
                             [](const PyRaceSketch& self) { return self.read([](const RaceSketch& s) { return s.is_private(); }); })
      .def_property_readonly("fitted", &PyRaceSketch::fitted_flag)
      .def_property_readonly("fit_report", &PyRaceSketch::fit_report,
                             "The last fit: points (the exact record count: in memory only, never in a private file's header), "
                             "threads, strategy, seconds, how X was read ('in place' or converted).")
      .def("__repr__", &PyRaceSketch::repr)
      // privrace.dask (python/privrace/dask.py): one partition's exact counts; not public API.
      .def(
          "_exact_partial",
          [](const PyRaceSketch& self, const py::handle& x, std::uint64_t master, bool fixed, std::size_t dim,
             std::uint64_t first_row, std::vector<std::uint64_t> partition_starts, std::size_t first_partition,
             std::optional<double> epsilon, const std::string& mechanism, double delta, const std::string& neighbors,
             int threads, bool allow_non_private, const std::string& strategy) {
            return self.exact_partial(x, FitArgs{epsilon, mechanism, delta, neighbors, threads, allow_non_private, strategy},
                                      master, fixed, dim, first_row, std::move(partition_starts), first_partition);
          },
          py::arg("X"), py::kw_only(), py::arg("master"), py::arg("fixed"), py::arg("dim"), py::arg("first_row"),
          py::arg("partition_starts"), py::arg("first_partition") = 0, py::arg("epsilon"), py::arg("mechanism") = "discrete_laplace",
          py::arg("delta") = 0.0, py::arg("neighbors") = "add-remove", py::arg("threads") = 0,
          py::arg("allow_non_private") = false, py::arg("strategy") = "auto")
      .def(
          "_exact_partial_sets",
          [](const PyRaceSketch& self, const py::handle& sets, std::uint64_t master, bool fixed, std::size_t partition,
             std::optional<double> epsilon, const std::string& mechanism, double delta, const std::string& neighbors,
             int threads, bool allow_non_private, const std::string& strategy) {
            return self.exact_partial_sets(sets, FitArgs{epsilon, mechanism, delta, neighbors, threads, allow_non_private, strategy},
                                           master, fixed, partition);
          },
          py::arg("sets"), py::kw_only(), py::arg("master"), py::arg("fixed"), py::arg("partition"), py::arg("epsilon"),
          py::arg("mechanism") = "discrete_laplace", py::arg("delta") = 0.0, py::arg("neighbors") = "add-remove",
          py::arg("threads") = 0, py::arg("allow_non_private") = false, py::arg("strategy") = "auto");
}

// privrace.FeatureSketch: the rff and hist feature-map sketches.
void bind_feature_sketch(py::module_& m) {
  py::class_<PyFeatureSketch, PyRaceSketch>(m, "FeatureSketch", R"doc(
A feature-map sketch for M2M (Houssiau et al.): random Fourier features or per-attribute
histograms, released with differential privacy (`privrace sketch --kernel rff|hist`).

FeatureSketch("rff", features=M, sigma=1.0, seed=None, hash_seed=None, num_share=0.98)
FeatureSketch("hist", bins=B, domain=(lo, hi), seed=None, hash_seed=None, num_share=0.98)
  features: m = 2 m' random Fourier features (even); sigma: the Gaussian kernel's bandwidth.
  bins: equal bins per attribute; domain: (lo, hi) for every attribute, a list of (lo, hi) per
        attribute, or 'LO:HI[,LO:HI...]'; records outside it are refused, never clipped.
  num_share: the share of epsilon for the feature sums; the released record count gets the rest.
  seed, hash_seed: as RaceSketch's (a seeded sketch equals `privrace sketch --seed`, NOT fit for release).
fit(X, epsilon=...), save, load, merge, to_bytes, header and counts are RaceSketch's; read the
release with privrace.M2M(sketch, domain=...).)doc")
      .def(py::init([](py::object kernel, py::object features, py::object sigma, py::object bins, py::object domain,
                       py::object seed, py::object hash_seed, py::object num_share) {
             py::dict a;
             a["kernel"] = kernel, a["features"] = features, a["sigma"] = sigma, a["bins"] = bins, a["domain"] = domain;
             a["seed"] = seed, a["hash_seed"] = hash_seed, a["num_share"] = num_share;
             return PyFeatureSketch(PyRaceSketch(true, std::move(a)));
           }),
           py::arg("kernel"), py::kw_only(), py::arg("features") = py::none(), py::arg("sigma") = py::none(),
           py::arg("bins") = py::none(), py::arg("domain") = py::none(), py::arg("seed") = py::none(),
           py::arg("hash_seed") = py::none(), py::arg("num_share") = 0.98)
      .def_static(
          "load", [](const std::string& path) { return PyFeatureSketch(PyRaceSketch::load_as(path, true, "'" + path + "'")); },
          py::arg("path"), "Read an rff or hist sketch file written by save or `privrace sketch`.")
      .def_static(
          "from_bytes", [](const py::bytes& b) { return PyFeatureSketch(PyRaceSketch::from_bytes(b, true)); }, py::arg("data"),
          "A FeatureSketch from a sketch file's bytes (to_bytes, or a file's contents).")
      .def(py::pickle([](const PyFeatureSketch& self) { return self.state(); },
                      [](const py::tuple& t) { return PyFeatureSketch(PyRaceSketch::from_state(t, true)); }));
}

// privrace.dask's parts: ExactPartial and the functions that seed, combine and release them.
void bind_dask(py::module_& m) {
  py::class_<PyExactPartial>(m, "ExactPartial", R"doc(
Exact (non-private) counts of part of a collection, made by privrace.dask on a worker. It lives in
memory only: there is no save, write or counts accessor, and its repr shows no count. It pickles
to bytes in memory so that a Dask worker can hand it to another; privrace.dask sums the parts and
releases the sum once (privrace._core._release).)doc")
      .def("__repr__", &PyExactPartial::repr)
      .def(py::pickle([](const PyExactPartial& self) { return self.state(); },
                      [](const py::tuple& t) { return PyExactPartial::from_state(t); }));

  m.def(
      "_resolve_master",
      [](std::optional<std::uint64_t> seed) {
        const MasterSeed s = MasterSeed::resolve(seed);
        return py::make_tuple(s.value(), s.fixed());
      },
      py::arg("seed"), "privrace.dask: the master seed of one release (the given seed, or one from the OS): (value, fixed).");
  m.def(
      "_combine",
      [](const std::vector<const PyExactPartial*>& parts) { return PyExactPartial::sum(parts); }, py::arg("parts"),
      "privrace.dask: the exact sum of exact partials of disjoint records (a new object).");
  m.def(
      "_release", [](PyExactPartial& exact) { return PyRaceSketch::release_partial(exact); }, py::arg("exact"),
      "privrace.dask: a RaceSketch released from summed exact counts: noise once, as fit() adds it. The partial is spent.");
}

// privrace.M2M and privrace.UnsupportedTaskWarning.
void bind_m2m(py::module_& m) {
  g_unsupported_task_warning = PyErr_NewExceptionWithDoc(
      "privrace.UnsupportedTaskWarning",
      "privrace.M2M answered a task its sketch's features cannot identify (allow_unsupported=True): on HIST, "
      "cov and counting queries over several attributes.",
      PyExc_UserWarning, nullptr);
  if (!g_unsupported_task_warning) throw py::error_already_set();
  m.attr("UnsupportedTaskWarning") = py::reinterpret_borrow<py::object>(g_unsupported_task_warning);

  py::class_<PyM2M>(m, "M2M", R"doc(
M2M (Houssiau et al.): moments, CDFs, covariance and counting queries from a released feature
sketch (`privrace sketch --kernel rff|hist`, or a RACE sketch), as `privrace m2m` computes them.
The sketch is a file's path or a sketch in memory (a fitted or loaded FeatureSketch or RaceSketch).
Post-processing of the release: no data is read and no budget spent.

M2M(path_or_sketch, domain=None, samples=100000, seed=0x4d324d, threads=0, intercept=False, lambda_rule="eq5",
    allow_unsupported=False)
  domain: the box every record lies in, (lo, hi) for all attributes or (los, his) per attribute.
        None: the domain a HIST sketch records (the only one it accepts; another raises ValueError
        naming both). RFF and RACE sketches record none and need it.
  intercept: fit an unpenalised constant feature whose sketch value is 1 (`privrace m2m --intercept`).
  lambda_rule: "eq5" (the paper's sigma_xi^2 / (n + zeta)) or "auto-noise" (`--lambda auto-noise`).
  allow_unsupported: answer a task the sketch's features cannot identify (on HIST, which holds one
        histogram per attribute: cov, and counting queries over several attributes), with a
        privrace.UnsupportedTaskWarning; without it such a task raises ValueError with the reason
        (`privrace m2m --allow-unsupported`).)doc")
      .def(py::init<const py::object&, const py::object&, std::size_t, std::uint64_t, int, bool, const std::string&,
                    bool>(),
           py::arg("path"), py::kw_only(), py::arg("domain") = py::none(), py::arg("samples") = 100000,
           py::arg("seed") = 0x4d324d, py::arg("threads") = 0, py::arg("intercept") = false,
           py::arg("lambda_rule") = "eq5", py::arg("allow_unsupported") = false)
      .def("mean", &PyM2M::mean, "Per-attribute means.")
      .def("moment2", &PyM2M::moment2, "Per-attribute second moments.")
      .def("cdf", &PyM2M::cdf, py::arg("points") = 10,
           "attributes x points: F_j at lo_j + t (hi_j - lo_j) / points, t = 1..points.")
      .def("cov", &PyM2M::cov,
           "Covariance matrix (about the M2M means). Joint: on HIST only with allow_unsupported=True (a warning).")
      .def("count", &PyM2M::count, py::arg("queries"),
           "Fractions of records matching each query [(attribute, '<=' or '>=', value), ...] (one or more "
           "predicates on distinct attributes); times .released_count for counts. On HIST a query over several "
           "attributes is joint: only with allow_unsupported=True (a warning).")
      .def_property_readonly("released_count", &PyM2M::released_count, "n + zeta as used by the model.")
      .def_property_readonly("weights", &PyM2M::weights, "w_i of the implicit M2M, one per synthetic point.")
      .def_property_readonly("lambda_", &PyM2M::lambda, "The ridge term used.")
      .def_property_readonly("synthetic", &PyM2M::synthetic, "The n_s synthetic points (public, seeded).")
      .def_property_readonly("header", &PyM2M::header)
      .def_property_readonly("fit_info", &PyM2M::describe);
}

}  // namespace

PYBIND11_MODULE(_core, m) {
  m.doc() = "privrace engine: differentially private RACE sketches";
  m.attr("__version__") = version();
  m.attr("git_commit") = git_commit();
  bind_errors(m);
  py::class_<PyRaceSketch> race_sketch = bind_race_sketch(m);
  bind_race_sketch_storage(race_sketch);
  bind_race_sketch_state(race_sketch);
  bind_feature_sketch(m);
  bind_dask(m);
  bind_m2m(m);
}
