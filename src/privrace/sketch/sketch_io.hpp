#pragma once
// Saving and loading RaceSketch objects. A sketch without noise is written only when the
// caller passes allow_nonprivate = true (the CLI's --no-privacy): the exact counts can never
// be written out by accident.
#include <cstdint>
#include <optional>
#include <string>

#include "privrace/io/sketch_file.hpp"
#include "privrace/sketch/race_sketch.hpp"

namespace privrace {

// "race" for the LSH families, else the feature map: "rff" | "hist".
std::string sketch_kind(const LshFamily& family);
// `total`: the sum of the counts when they are not in `sketch` (a release that holds them encoded).
nlohmann::json sketch_header(const RaceSketch& sketch, std::optional<std::int64_t> total = std::nullopt);
void save_sketch(const std::string& path, const RaceSketch& sketch, bool allow_nonprivate = false,
                 const nlohmann::json& extra = nlohmann::json::object(), SketchWriteTimings* timings = nullptr,
                 const EncodedCountBlocks* encoded = nullptr);  // encoded: the sketch's counts, already encoded
RaceSketch load_sketch(const std::string& path, nlohmann::json* header_out = nullptr);

}  // namespace privrace
