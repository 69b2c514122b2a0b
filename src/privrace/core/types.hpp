#pragma once
// Matrix and view types shared by every layer. Data is row-major: one record per row.
#include <Eigen/Core>
#include <cstdint>
#include <span>
#include <vector>

namespace privrace {

using Real = float;  // storage type of dense data; hashing projections run in float through GEMM
using DenseMatrix = Eigen::Matrix<Real, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using DenseRef = Eigen::Ref<const DenseMatrix>;
using DoubleMatrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using CodeMatrix = Eigen::Matrix<std::uint64_t, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// Sets (graph neighbourhoods, categorical bags) in compressed sparse row form:
// set i is ids[offsets[i] .. offsets[i+1]), sorted and without duplicates.
struct SetCollection {
  std::vector<std::uint64_t> offsets{0};
  std::vector<std::uint32_t> ids;

  std::size_t size() const { return offsets.size() - 1; }
  std::span<const std::uint32_t> set(std::size_t i) const {
    return {ids.data() + offsets[i], ids.data() + offsets[i + 1]};
  }
  void push_back(std::span<const std::uint32_t> s) {
    ids.insert(ids.end(), s.begin(), s.end());
    offsets.push_back(ids.size());
  }
};

// A contiguous slice [begin, end) of a SetCollection, without copying.
struct SetBatch {
  const SetCollection* sets = nullptr;
  std::size_t begin = 0, end = 0;
  std::size_t size() const { return end - begin; }
  std::span<const std::uint32_t> set(std::size_t i) const { return sets->set(begin + i); }
};

}  // namespace privrace
