#pragma once
// Work a method repeats for every repetition although it is a deterministic function of the
// data and the method's parameters (an exact Bernstein lattice, a spectral basis, PrivBayes's
// mutual-information scores): kept from one group to the next while the key is unchanged. The
// runner walks a method's groups parameter point by point with the repetitions innermost, so
// one entry per method is enough; it is freed before the next key's is made (lattices are
// large). Only what involves no randomness of the repetition may be shared: records keep their
// distribution, and seeded records are unchanged. PRIVRACE_SHARE_WORK=0 in the environment
// remakes the object for every group (the tests compare both ways; a diagnostic).
// The seconds spent making an object are entered in a ledger that the runner empties after
// each cell: the record of the cell that carried the making says so ("shared_work_seconds"),
// and the run-time estimate charges that work once per parameter point, not per repetition.
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "experiment.hpp"

namespace privrace::experiments {

// Seconds of shared work made by this thread since its last take (the runner takes them after
// every cell). One ledger per thread: under --jobs each worker's cells carry their own making.
inline double& shared_work_ledger() {
  thread_local double seconds = 0.0;
  return seconds;
}
inline double take_shared_work_seconds() { return std::exchange(shared_work_ledger(), 0.0); }
// The most OpenMP threads any of that work ran on (0: none made); taken with the seconds, so
// the estimate prices the making at its own threads, not the group's.
inline int& shared_work_threads_ledger() {
  thread_local int threads = 0;
  return threads;
}
inline int take_shared_work_threads() { return std::exchange(shared_work_threads_ledger(), 0); }

// Makes shared work on every thread of the run for its scope, then gives the calling worker
// back its group's threads. Under --jobs the other workers mostly wait for what is being made
// (the repetitions after the first need it), and a making left on one group's threads kept
// their cores idle: the degree-6 Bernstein lattice of kde_covtype_pca took 193 s on one
// thread while the second job waited 222 s. A worker still busy with a cell of its own
// shares its core with the making for that while. The made objects do not depend on the
// thread count (their parallel loops are thread-invariant), so records are unchanged.
class SharedWorkThreads {
 public:
  explicit SharedWorkThreads(int run_threads) : group_threads_(omp_get_max_threads()) {
    const int threads = std::max(run_threads, group_threads_);
    omp_set_num_threads(threads);
    shared_work_threads_ledger() = std::max(shared_work_threads_ledger(), threads);
  }
  ~SharedWorkThreads() { omp_set_num_threads(group_threads_); }
  SharedWorkThreads(const SharedWorkThreads&) = delete;
  SharedWorkThreads& operator=(const SharedWorkThreads&) = delete;

 private:
  int group_threads_;
};

// False under PRIVRACE_SHARE_WORK=0: every group remakes what it would have reused.
inline bool share_work_enabled() {
  const char* share = std::getenv("PRIVRACE_SHARE_WORK");
  return !(share && std::strcmp(share, "0") == 0);
}

// Seconds this thread waited for another worker's shared work since its last take (records'
// waited_seconds). Not this cell's work, and not to be priced: the making it waited for runs on
// every thread of the run (SharedWorkThreads) and its record prices it at all of them, so the
// wait is already paid for; the estimate takes it out of the cell's time and adds nothing.
inline double& waited_ledger() {
  thread_local double seconds = 0.0;
  return seconds;
}
inline double take_waited_seconds() { return std::exchange(waited_ledger(), 0.0); }

// Locks a cache's mutex; under --jobs a wait is another worker making shared work, entered in
// this thread's waited ledger. (Priced as shared work, as it once was, a wait counted the
// making twice: a refused Bernstein degree waiting for another degree's lattice was priced at
// that lattice's 14 minutes.)
inline std::unique_lock<std::mutex> lock_noting_wait(std::mutex& m) {
  std::unique_lock<std::mutex> lock(m, std::try_to_lock);
  if (lock.owns_lock()) return lock;  // free: nothing waited
  const auto t0 = std::chrono::steady_clock::now();
  lock.lock();
  waited_ledger() += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return lock;
}

// Charges the seconds from its construction to its destruction to this thread's ledger: for a
// cache of shared work that does not go through SharedWork (the LDP tasks' populations and
// optima, made once and reused by every repetition), so that the estimate prices it once. The
// making runs on the run's threads (SharedWorkThreads) for the timer's scope.
class SharedWorkTimer {
 public:
  explicit SharedWorkTimer(int run_threads) : threads_(run_threads), start_(std::chrono::steady_clock::now()) {}
  ~SharedWorkTimer() {
    shared_work_ledger() += std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }
  SharedWorkTimer(const SharedWorkTimer&) = delete;
  SharedWorkTimer& operator=(const SharedWorkTimer&) = delete;

 private:
  SharedWorkThreads threads_;
  std::chrono::steady_clock::time_point start_;
};

// A few objects of shared work kept by key, for caches that several methods and parameter points
// reuse (the LDP tasks' populations and instances): when more than `capacity` are held, the least
// recently used is dropped, never the one just made or found. Not locked: the caller's mutex
// guards it. (Dropping the smallest key instead dropped a 10^7-player population right after
// making it whenever its key sorted first, so each of its groups made it again.)
template <typename Key, typename T>
class RecentObjects {
 public:
  explicit RecentObjects(std::size_t capacity) : capacity_(std::max<std::size_t>(capacity, 1)) {}
  // The object for `key`, or null; a hit counts as a use.
  std::shared_ptr<const T> find(const Key& key) {
    const auto it = held_.find(key);
    if (it == held_.end()) return nullptr;
    it->second.used = ++clock_;
    return it->second.object;
  }
  void put(const Key& key, std::shared_ptr<const T> object) {
    held_[key] = Held{std::move(object), ++clock_};
    while (held_.size() > capacity_)
      held_.erase(std::min_element(held_.begin(), held_.end(),
                                   [](const auto& a, const auto& b) { return a.second.used < b.second.used; }));
  }
  std::size_t size() const { return held_.size(); }

 private:
  struct Held {
    std::shared_ptr<const T> object;
    std::uint64_t used = 0;
  };
  std::size_t capacity_;
  std::uint64_t clock_ = 0;
  std::map<Key, Held> held_;
};

template <typename T>
class SharedWork {
 public:
  // The object for (context, key), made by `make()` when absent, and the seconds its making
  // took (the cost of a release that made it from scratch).
  template <typename Make>
  std::pair<std::shared_ptr<T>, double> get(const TaskContext& ctx, const json& key, Make&& make) const {
    const std::string k = std::to_string(reinterpret_cast<std::uintptr_t>(&ctx)) + key.dump();
    const auto lock = lock_noting_wait(mu_);
    if (k != key_ || !obj_ || !share_work_enabled()) {
      obj_.reset();
      const SharedWorkThreads on_all(ctx.run_threads);
      const auto t0 = std::chrono::steady_clock::now();
      obj_ = std::make_shared<T>(make());
      seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      key_ = k;
      shared_work_ledger() += seconds_;
    }
    return {obj_, seconds_};
  }

 private:
  mutable std::mutex mu_;
  mutable std::string key_;
  mutable std::shared_ptr<T> obj_;
  mutable double seconds_ = 0;
};

// Objects made once per key, each by the first worker that asks for it and outside the lock:
// under --jobs the workers make different keys at the same time, and a worker asking for a key
// being made waits for it (entered in its waited ledger). For a cell's own work that later
// cells reuse (Algorithm 7's collections, which the radii share), where SharedWork holds one
// key at a time made on all of the run's threads. Keys live in scopes; the `scopes` latest are
// kept (a worker still in the previous scope keeps its entries). Without sharing
// (PRIVRACE_SHARE_WORK=0) every call makes its own. A making that throws leaves no entry:
// a worker waiting on it gets the error, a later call makes it again.
template <typename T>
class MadeOnce {
 public:
  explicit MadeOnce(std::size_t scopes) : max_scopes_(std::max<std::size_t>(scopes, 1)) {}

  // The object under (scope, key) and whether this call made it.
  template <typename Make>
  std::pair<std::shared_ptr<const T>, bool> get(const std::string& scope, const std::string& key, Make&& make) const {
    const bool sharing = share_work_enabled();
    std::promise<std::shared_ptr<const T>> promise;
    Future future;
    bool mine = true;
    {
      const std::lock_guard<std::mutex> lock(mu_);
      if (std::find(scopes_.begin(), scopes_.end(), scope) == scopes_.end()) {
        scopes_.push_back(scope);
        if (scopes_.size() > max_scopes_) {
          held_.erase(scopes_.front());
          scopes_.erase(scopes_.begin());
        }
      }
      auto& keys = held_[scope];
      if (auto it = keys.find(key); sharing && it != keys.end()) {
        future = it->second;
        mine = false;
      } else {
        future = promise.get_future().share();
        if (sharing) keys[key] = future;
      }
    }
    if (!mine) {
      if (future.wait_for(std::chrono::seconds(0)) != std::future_status::ready) {
        const auto t0 = std::chrono::steady_clock::now();
        future.wait();
        waited_ledger() += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      }
      return {future.get(), false};  // the maker's error, if it failed
    }
    try {
      promise.set_value(std::make_shared<const T>(make()));
    } catch (...) {
      promise.set_exception(std::current_exception());
      const std::lock_guard<std::mutex> lock(mu_);
      if (auto s = held_.find(scope); s != held_.end()) s->second.erase(key);
      throw;
    }
    return {future.get(), true};
  }

 private:
  using Future = std::shared_future<std::shared_ptr<const T>>;
  std::size_t max_scopes_;
  mutable std::mutex mu_;
  mutable std::map<std::string, std::map<std::string, Future>> held_;  // scope -> key -> object
  mutable std::vector<std::string> scopes_;                              // oldest first
};

}  // namespace privrace::experiments
