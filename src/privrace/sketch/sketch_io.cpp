#include "privrace/core/version.hpp"
#include "privrace/sketch/sketch_io.hpp"

#include <optional>

#include "privrace/core/error.hpp"
#include "privrace/io/sketch_file.hpp"
#include "privrace/sketch/release_record.hpp"

namespace privrace {

std::string sketch_kind(const LshFamily& family) {
  const std::string k = family.kernel_name();
  return k == "rff" || k == "hist" ? k : "race";
}

nlohmann::json sketch_header(const RaceSketch& sketch, std::optional<std::int64_t> total) {
  nlohmann::json header = {{"format", "privrace-race-sketch"},
          {"kind", sketch_kind(sketch.family())},
          {"rows", sketch.rows()},
          {"width", sketch.width()},
          {"family", sketch.family().params()},
          {"column_map", sketch.family().accumulates_values()
                             ? "features: row 0 holds the sums of cos(omega_j . x), row 1 of sin(omega_j . x), in units of the header's quantum (2^-family.grid_bits)"
                             : sketch.direct_columns() ? "identity (every code has its own column)"
                                                       : "vector-multiply-shift-32 + range reduction, seeded from family.seed"},
          {"privacy", sketch.privacy()},
          {"software", {{"name", "privrace"}, {"version", version()}, {"commit", git_commit()}}}};
  // Feature sketches (rff, hist) carry the released count in "privacy"; N-hat of an RFF sum
  // would mean nothing.
  if (!sketch.family().accumulates_values()) header["n_hat"] = total ? sketch.n_hat_of(*total) : sketch.n_hat();
  else header["quantum"] = sketch.family().quantum();
  return header;
}

void save_sketch(const std::string& path, const RaceSketch& sketch, bool allow_nonprivate, const nlohmann::json& extra,
                 SketchWriteTimings* timings, const EncodedCountBlocks* encoded) {
  if (!sketch.is_private() && !allow_nonprivate)
    throw UsageError("refusing to write a sketch without noise: it would release exact counts (pass --no-privacy to do so deliberately)");
  if (encoded && encoded->counts != sketch.counts().size()) throw Error("save_sketch: the encoded counts are not this sketch's");
  nlohmann::json header = sketch_header(sketch, encoded ? std::optional<std::int64_t>(encoded->total) : std::nullopt);
  for (const auto& [key, value] : extra.items()) header[key] = value;
  check_release_header(header);  // every field declared; no exact field in a private file
  if (!encoded) return write_sketch_file(path, header, sketch.counts(), timings, !sketch.is_private());
  write_sketch_file(path, header, *encoded, timings, !sketch.is_private());
}

namespace {
// The privacy record's fields that the library reads (merge, M2M, info), checked for their
// types so that a damaged or hand-edited header gives an error naming the field, not a JSON
// type error from deep inside a merge. Unknown fields are kept as they are.
void check_privacy_record(const nlohmann::json& p, const std::string& where) {
  using Json = nlohmann::json;
  struct Field {
    const char* name;
    bool (Json::*is)() const noexcept;
    const char* expected;
  };
  static const Field fields[] = {{"private", &Json::is_boolean, "true or false"},
                                 {"fit_for_release", &Json::is_boolean, "true or false"},
                                 {"epsilon", &Json::is_number, "a number"},
                                 {"delta", &Json::is_number, "a number"},
                                 {"realised_epsilon", &Json::is_number, "a number"},
                                 {"epsilon_num", &Json::is_number, "a number"},
                                 {"epsilon_den", &Json::is_number, "a number"},
                                 {"noise_scale", &Json::is_number, "a number"},
                                 {"noise_variance", &Json::is_number, "a number"},
                                 {"noise_variance_feature_units", &Json::is_number, "a number"},
                                 {"count_noise_variance", &Json::is_number, "a number"},
                                 {"count", &Json::is_number, "a number"},
                                 {"quantum", &Json::is_number, "a number"},
                                 {"mechanism", &Json::is_string, "a string"},
                                 {"merged_from", &Json::is_array, "an array"}};
  for (const Field& f : fields)
    if (p.contains(f.name) && !(p.at(f.name).*f.is)())
      throw InputError(where + "." + f.name + "': expected " + f.expected + ", got " + p.at(f.name).dump());
  if (p.contains("merged_from"))
    for (std::size_t i = 0; i < p.at("merged_from").size(); ++i) {
      const std::string part = where + ".merged_from[" + std::to_string(i) + "]";
      if (!p.at("merged_from")[i].is_object()) throw InputError(part + "': expected an object");
      check_privacy_record(p.at("merged_from")[i], part);
    }
}
}  // namespace

RaceSketch load_sketch(const std::string& path, nlohmann::json* header_out) {
  std::optional<RaceSketch> sketch;
  nlohmann::json h;
  // The sketch is allocated once the header is validated; the counts decode straight into it.
  read_sketch_file(path, [&](const nlohmann::json& header) {
    h = header;
    if (!h.contains("family") || !h.at("family").is_object()) throw InputError(path + ": header field 'family' is missing");
    std::shared_ptr<const LshFamily> family;
    try {
      family = make_family(h.at("family"));
    } catch (const InputError& e) {
      throw InputError(path + ": " + e.what());
    }
    if (family->rows() != h.at("rows").get<std::size_t>())
      throw InputError(path + ": header field 'family.rows' differs from 'rows'");
    if (!h.contains("privacy") || !h.at("privacy").is_object()) throw InputError(path + ": header field 'privacy' is missing");
    check_privacy_record(h.at("privacy"), path + ": header field 'privacy");
    check_privacy_meaning(h.at("privacy"), *family, path + ": header field 'privacy");
    sketch.emplace(family, h.at("width").get<std::size_t>());
    return sketch->mutable_counts();
  });
  sketch->set_privacy(h.at("privacy"));
  // A sketch written without noise carries its exact record count: merging it keeps it exact.
  const auto& p = h.at("privacy");
  if (!sketch->is_private() && p.contains("count") && p.at("count").is_number_integer())
    sketch->add_records(p.at("count").get<std::int64_t>());
  if (header_out) *header_out = h;
  return std::move(*sketch);
}

}  // namespace privrace
