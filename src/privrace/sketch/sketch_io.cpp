#include "privrace/core/version.hpp"
#include "privrace/sketch/sketch_io.hpp"

#include <optional>
#include <variant>

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
          {"privacy", privacy_record_json(sketch.privacy())},
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

RaceSketch load_sketch(const std::string& path, nlohmann::json* header_out) {
  std::optional<RaceSketch> sketch;
  nlohmann::json h;
  PrivacyRecord privacy;
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
    // The types of the fields the library reads first, then their meaning (release_record.hpp).
    privacy = privacy_record_from_json(h.at("privacy"), path + ": header field 'privacy");
    check_privacy_meaning(privacy, *family, path + ": header field 'privacy");
    sketch.emplace(family, h.at("width").get<std::size_t>());
    return sketch->mutable_counts();
  });
  // A sketch written without noise carries its exact record count: merging it keeps it exact.
  if (!privacy.is_private && privacy.count && std::holds_alternative<std::int64_t>(*privacy.count))
    sketch->add_records(std::get<std::int64_t>(*privacy.count));
  sketch->set_privacy(std::move(privacy));
  if (header_out) *header_out = h;
  return std::move(*sketch);
}

}  // namespace privrace
