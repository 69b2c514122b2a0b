// The counting-query file of `privrace m2m --task count --queries FILE` (and the m2m experiments).
// The first byte picks the data's dimension (1 to 16); the rest is the file.
#include "fuzz_util.hpp"
#include "privrace/core/error.hpp"
#include "privrace/tasks/m2m.hpp"

using namespace privrace;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  const std::size_t dim = 1 + data[0] % 16;
  const std::string path = fuzz::temp_path(".queries");
  fuzz::write_bytes(path, data + 1, size - 1);
  try {
    const auto queries = parse_counting_queries(path, dim);
    // What was accepted is usable: every predicate names an attribute of the data, one or more
    // distinct attributes a query, and the text form parses back to the same query.
    for (const auto& q : queries) {
      if (q.predicates.empty()) __builtin_trap();
      for (std::size_t k = 0; k < q.predicates.size(); ++k) {
        if (q.predicates[k].attribute >= dim) __builtin_trap();
        for (std::size_t l = 0; l < k; ++l)
          if (q.predicates[l].attribute == q.predicates[k].attribute) __builtin_trap();
      }
    }
    const std::string again = fuzz::temp_path(".requeries");
    {
      std::string text;
      for (const auto& q : queries) text += q.text() + "\n";
      fuzz::write_bytes(again, reinterpret_cast<const std::uint8_t*>(text.data()), text.size());
    }
    const auto reread = parse_counting_queries(again, dim);
    std::remove(again.c_str());
    if (reread.size() != queries.size()) __builtin_trap();
    for (std::size_t i = 0; i < queries.size(); ++i) {
      if (reread[i].predicates.size() != queries[i].predicates.size()) __builtin_trap();
      for (std::size_t k = 0; k < queries[i].predicates.size(); ++k) {
        const auto &a = queries[i].predicates[k], &b = reread[i].predicates[k];
        if (a.attribute != b.attribute || a.less != b.less || a.value != b.value) __builtin_trap();
      }
    }
  } catch (const Error&) {
  }
  std::remove(path.c_str());
  return 0;
}
