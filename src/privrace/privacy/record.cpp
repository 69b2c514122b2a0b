#include "privrace/privacy/record.hpp"

namespace privrace {

std::optional<double> PrivacyRecord::count_value() const {
  if (!count) return std::nullopt;
  if (const auto* n = std::get_if<std::int64_t>(&*count)) return static_cast<double>(*n);
  return std::get<double>(*count);
}

std::vector<std::string> noise_ids(const PrivacyRecord& privacy) {
  std::vector<std::string> out;
  if (privacy.noise_id) out.push_back(*privacy.noise_id);
  for (const PrivacyRecord& part : privacy.merged_from) {
    const auto ids = noise_ids(part);
    out.insert(out.end(), ids.begin(), ids.end());
  }
  return out;
}

}  // namespace privrace
