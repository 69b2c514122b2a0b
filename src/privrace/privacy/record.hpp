#pragma once
// The privacy record of a sketch, typed: what the noise was (mechanism, neighbouring relation,
// epsilon, delta, sensitivities, scale, source), the released record count of a feature sketch,
// and, for a merge, every part's record. privatize() builds it, merged_privacy() composes it,
// the reader checks it (check_privacy_meaning) and the front ends report it. It meets JSON at
// the file edge only: privacy_record_json / privacy_record_from_json (sketch/release_record.hpp)
// write and read the header's "privacy" object (docs/file-format.md lists its fields).
//
// Every field but `is_private` may be absent (a field the writer did not set is not written),
// so that a record read from a file is written back with the same fields.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "privrace/privacy/budget.hpp"

namespace privrace {

struct PrivacyRecord {
  bool is_private = false;               // "private": the counts carry noise
  std::optional<bool> fit_for_release;   // true only for noise from the CSPRNG
  std::optional<double> epsilon, delta, realised_epsilon;
  std::optional<NoiseMechanism> mechanism;
  bool mixed_mechanisms = false;         // "mechanism": "mixed" (a merge of parts with different mechanisms)
  std::optional<NeighborRelation> neighbors;
  std::optional<NeighborUnit> neighbor_unit;  // absent: one record
  std::optional<double> sensitivity_l1, sensitivity_l2;
  std::optional<double> noise_scale, noise_variance;
  std::optional<std::string> noise_source;   // CryptoRandom::name() or "seeded"
  std::optional<std::string> noise_sampler;  // bernoulli_exp | exact_geometric_table | inversion | box_muller | discrete_gaussian_table | discrete_gaussian_rejection
  std::optional<std::string> noise_id;       // which noise this is (release_record.hpp: fresh_noise_id, seeded_noise_id)
  std::optional<std::string> noise_streams, warning;
  // Value families (RFF): the grid of the counts and the noise in feature units.
  std::optional<double> quantum, noise_variance_feature_units;
  std::optional<std::string> sensitivity_note;
  // Feature sketches: the budget split and the released record count |D| + zeta (exact, and an
  // integer, in a file without noise). A count read from a file keeps its JSON type.
  std::optional<double> epsilon_num, epsilon_den, count_sensitivity, count_noise_scale, count_noise_variance;
  std::optional<std::string> count_mechanism;
  std::optional<std::variant<std::int64_t, double>> count;
  // Merges (merged_privacy): the composition assumed and every part's record.
  std::optional<double> epsilon_if_overlapping, delta_if_overlapping;
  std::optional<std::string> composition, noise;
  std::vector<PrivacyRecord> merged_from;    // empty: not a merge
  std::optional<std::uint64_t> merged_parts;  // a merge of sketches without noise
  // Fields of a record read from a file that this version does not interpret (or whose value it
  // cannot type, in a record whose meaning does not depend on them): name -> JSON text, written
  // back as they were.
  std::map<std::string, std::string> other;

  bool fit() const { return fit_for_release.value_or(false); }
  bool merged() const { return !merged_from.empty(); }
  NeighborUnit unit() const { return neighbor_unit.value_or(NeighborUnit::Record); }
  std::optional<double> count_value() const;
  bool operator==(const PrivacyRecord&) const = default;
};

// Every noise identifier a privacy record holds (its own, then those of its merged parts).
std::vector<std::string> noise_ids(const PrivacyRecord& privacy);

}  // namespace privrace
