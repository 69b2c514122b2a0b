#include "privrace/core/version.hpp"
#include "privrace/sketch/sketch_io.hpp"

#include <optional>

#include "privrace/core/error.hpp"
#include "privrace/io/sketch_file.hpp"

namespace privrace {

std::string sketch_kind(const LshFamily& family) {
  const std::string k = family.kernel_name();
  return k == "rff" || k == "hist" ? k : "race";
}

nlohmann::json sketch_header(const RaceSketch& sketch) {
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
  if (!sketch.family().accumulates_values()) header["n_hat"] = sketch.n_hat();
  else header["quantum"] = sketch.family().quantum();
  return header;
}

void save_sketch(const std::string& path, const RaceSketch& sketch, bool allow_nonprivate, const nlohmann::json& extra,
                 SketchWriteTimings* timings) {
  if (!sketch.is_private() && !allow_nonprivate)
    throw UsageError("refusing to write a sketch without noise: it would release exact counts (pass --no-privacy to do so deliberately)");
  nlohmann::json header = sketch_header(sketch);
  for (const auto& [key, value] : extra.items()) header[key] = value;
  write_sketch_file(path, header, sketch.counts(), timings);
}

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
