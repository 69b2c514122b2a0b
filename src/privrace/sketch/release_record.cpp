#include "privrace/sketch/release_record.hpp"

#include <openssl/evp.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <set>

#include "privrace/core/error.hpp"
#include "privrace/core/random.hpp"
#include "privrace/privacy/mechanisms.hpp"
#include "privrace/sketch/privatize.hpp"

namespace privrace {

std::string to_string(FieldClass c) {
  switch (c) {
    case FieldClass::Public: return "public";
    case FieldClass::Noisy: return "noisy";
    case FieldClass::Derived: return "derived";
    case FieldClass::Exact: return "exact";
  }
  return "?";
}

namespace {

struct Declared {
  std::string_view path;  // a field, or a prefix ending in '.' for every field under it
  FieldClass private_class;
  FieldClass exact_class;  // the class in a file without noise
};

constexpr FieldClass P = FieldClass::Public, N = FieldClass::Noisy, D = FieldClass::Derived, X = FieldClass::Exact;

// The release record. Public parameters are chosen before any record is read; "privacy.count"
// (rff/hist) is |D| + zeta, and n_hat is total / R of the noisy counts: both exact when the
// file has no noise. "merged_inputs" names the released files a merge read (chosen by whoever
// merged them). The owner's input file name, the exact record count and every graph statistic
// are exact: the owner's terminal (the summary line, --timings) and Python's fit report have
// them, a private file never does.
constexpr Declared kFields[] = {
    {"format", P, P},
    {"kind", P, P},
    {"rows", P, P},
    {"width", P, P},
    {"family.", P, P},
    {"column_map", P, P},
    {"software.", P, P},
    {"quantum", P, P},
    {"n_hat", D, X},
    {"merged_inputs", P, P},
    {"build.threads", P, P},
    {"build.strategy", P, P},
    {"build.points", X, X},
    {"build.input", X, X},
    {"graph.symmetrised", P, P},
    {"graph.self_loops_kept", P, P},
    {"graph.declared_nodes", P, P},
    {"graph.", X, X},  // nodes, edge_lines, stored_edges, self_loops, duplicates, max_degree, empty_sets, from_cache
    {"privacy.count", N, X},
    {"privacy.noise_id", N, N},
    {"privacy.noise_ids", N, N},
    {"privacy.", P, P},  // the mechanism's parameters, sensitivities, noise scale and variance, merges' parts
};

}  // namespace

FieldClass classify_header_field(std::string_view path, bool is_private) {
  // A merged record's parts ("privacy.merged_from.count") are classified as the record's own fields.
  std::string p(path);
  for (std::size_t at; (at = p.find("merged_from.")) != std::string::npos;) p.erase(at, 12);
  for (const Declared& d : kFields) {
    const bool prefix = !d.path.empty() && d.path.back() == '.';
    if (prefix ? p.rfind(d.path, 0) == 0 : p == d.path) return is_private ? d.private_class : d.exact_class;
  }
  throw Error("header field '" + std::string(path) + "' has no declared class in the release record (sketch/release_record.cpp)");
}

namespace {
void collect(const nlohmann::json& node, const std::string& path, bool is_private,
             std::vector<std::pair<std::string, FieldClass>>& out) {
  if (node.is_object()) {
    for (const auto& [key, value] : node.items()) {
      const std::string child = path.empty() ? key : path + "." + key;
      // The family and the software record are public as a whole: their leaves need no walk.
      if (child == "family" || child == "software") {
        out.emplace_back(child, classify_header_field(child + ".", is_private));
        continue;
      }
      collect(value, child, is_private, out);
    }
    return;
  }
  if (node.is_array()) {
    bool leaves = true;
    for (const auto& e : node) leaves = leaves && !e.is_object() && !e.is_array();
    if (leaves) {
      out.emplace_back(path, classify_header_field(path, is_private));
      return;
    }
    for (const auto& e : node) collect(e, path, is_private, out);
    return;
  }
  out.emplace_back(path, classify_header_field(path, is_private));
}
}  // namespace

std::vector<std::pair<std::string, FieldClass>> classify_header(const nlohmann::json& header) {
  const bool is_private = header.contains("privacy") && header.at("privacy").is_object() &&
                          header.at("privacy").value("private", false);
  std::vector<std::pair<std::string, FieldClass>> out;
  collect(header, "", is_private, out);
  return out;
}

void check_release_header(const nlohmann::json& header) {
  const bool is_private = header.contains("privacy") && header.at("privacy").is_object() &&
                          header.at("privacy").value("private", false);
  for (const auto& [path, cls] : classify_header(header))
    if (is_private && cls == FieldClass::Exact)
      throw Error("refusing to write a private sketch whose header field '" + path +
                  "' is exact (a function of the records): the release record allows public, noisy and derived fields only");
}

// ---------------------------------------------------------------------------------------------
// The reader's check of meaning

namespace {

double number(const nlohmann::json& p, const char* key, const std::string& where) {
  if (!p.contains(key)) throw InputError(where + "." + key + "' is missing (a private record needs it)");
  if (!p.at(key).is_number()) throw InputError(where + "." + key + "': expected a number, got " + p.at(key).dump());
  return p.at(key).get<double>();
}

std::string text(const nlohmann::json& p, const char* key, const std::string& where) {
  if (!p.contains(key)) throw InputError(where + "." + key + "' is missing (a private record needs it)");
  if (!p.at(key).is_string()) throw InputError(where + "." + key + "': expected a string, got " + p.at(key).dump());
  return p.at(key).get<std::string>();
}

bool close(double a, double b, double rel) { return std::abs(a - b) <= rel * std::max(std::abs(a), std::abs(b)); }

// The scale a mechanism must use for sensitivity `sens` at `eps` (discrete Laplace rounds up by
// a relative 2^-12 at most: the realised epsilon is never above the claim).
void check_scale(double scale, double need, const std::string& mechanism, const std::string& field) {
  const bool ok = mechanism == "discrete_laplace" ? scale >= need * (1.0 - 1e-9) && scale <= need * (1.0 + 0x1.0p-11)
                                                  : close(scale, need, 1e-9);
  if (!ok) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "': %.17g, but the sensitivity and epsilon call for %.17g (%s)", scale, need, mechanism.c_str());
    throw InputError(field + buf);
  }
}

void check_one(const nlohmann::json& p, const LshFamily& family, const std::string& where) {
  if (!p.is_object()) throw InputError(where + "': expected an object");
  if (!p.contains("private") || !p.at("private").is_boolean())
    throw InputError(where + ".private': expected true or false");
  const bool fit = p.contains("fit_for_release") && p.at("fit_for_release").is_boolean() && p.at("fit_for_release").get<bool>();
  if (!p.at("private").get<bool>()) {
    if (fit) throw InputError(where + ".fit_for_release': true, but the record says the counts carry no noise");
    return;
  }
  const double eps = number(p, "epsilon", where);
  if (!std::isfinite(eps) || !(eps > 0.0)) throw InputError(where + ".epsilon': must be a finite number > 0, got " + p.at("epsilon").dump());
  const std::string neighbors = text(p, "neighbors", where);
  NeighborRelation rel;
  try {
    rel = parse_neighbors(neighbors);
  } catch (const std::exception&) {
    throw InputError(where + ".neighbors': expected add-remove or replace, got '" + neighbors + "'");
  }
  NeighborUnit unit = NeighborUnit::Record;
  if (p.contains("neighbor_unit")) {
    try {
      unit = parse_neighbor_unit(text(p, "neighbor_unit", where));
    } catch (const std::exception&) {
      throw InputError(where + ".neighbor_unit': expected record, edge or undirected_edge, got " + p.at("neighbor_unit").dump());
    }
  }
  const std::string mechanism = text(p, "mechanism", where);
  if (mechanism != "discrete_laplace" && mechanism != "floored_laplace" && mechanism != "gaussian")
    throw InputError(where + ".mechanism': expected discrete_laplace, floored_laplace or gaussian, got '" + mechanism + "'");
  const double delta = p.contains("delta") ? number(p, "delta", where) : 0.0;
  if (mechanism == "gaussian" && !(delta > 0.0 && delta < 1.0))
    throw InputError(where + ".delta': the gaussian mechanism needs delta in (0, 1), got " + p.at("delta").dump());
  if (mechanism != "gaussian" && delta != 0.0)
    throw InputError(where + ".delta': " + mechanism + " is pure epsilon-DP, delta must be 0, got " + p.at("delta").dump());
  const Sensitivity sens = sketch_sensitivity(family, rel, unit);
  const double l1 = number(p, "sensitivity_l1", where), l2 = number(p, "sensitivity_l2", where);
  if (!close(l1, sens.l1, 1e-9))
    throw InputError(where + ".sensitivity_l1': " + p.at("sensitivity_l1").dump() + ", but this family under " + neighbors +
                     " neighbours has " + nlohmann::json(sens.l1).dump());
  if (!close(l2, sens.l2, 1e-9))
    throw InputError(where + ".sensitivity_l2': " + p.at("sensitivity_l2").dump() + ", but this family under " + neighbors +
                     " neighbours has " + nlohmann::json(sens.l2).dump());
  double eps_num = eps;
  if (p.contains("epsilon_num") || p.contains("epsilon_den")) {
    eps_num = number(p, "epsilon_num", where);
    const double eps_den = number(p, "epsilon_den", where);
    if (!(eps_num > 0.0) || eps_den < 0.0 || !close(eps_num + eps_den, eps, 1e-9))
      throw InputError(where + ".epsilon_num': epsilon_num + epsilon_den must equal epsilon with epsilon_num > 0");
    if (eps_den > 0.0) {
      const double count_sens = count_sensitivity(rel);
      check_scale(number(p, "count_noise_scale", where), count_sens / eps_den, "discrete_laplace", where + ".count_noise_scale");
    }
  } else if (family.accumulates_values() || family.kernel_name() == "hist") {
    throw InputError(where + ".epsilon_num' is missing: a feature sketch splits epsilon between its sums and its record count");
  }
  const double scale = number(p, "noise_scale", where);
  const double need = mechanism == "gaussian" ? analytic_gaussian_sigma(eps_num, delta, sens.l2) : sens.l1 / eps_num;
  check_scale(scale, need, mechanism, where + ".noise_scale");
  if (fit) {
    if (p.value("noise_source", std::string()) == "seeded" || p.contains("noise_seed"))
      throw InputError(where + ".fit_for_release': true, but the noise was drawn from a seed (not fit for release)");
  }
}

}  // namespace

void check_privacy_meaning(const nlohmann::json& privacy, const LshFamily& family, const std::string& where) {
  if (!privacy.is_object()) throw InputError(where + "': expected an object");
  if (!privacy.contains("merged_from")) return check_one(privacy, family, where);
  const auto& parts = privacy.at("merged_from");
  if (!parts.is_array() || parts.size() < 2) throw InputError(where + ".merged_from': expected an array of two or more records");
  double eps = 0.0;
  bool all_fit = true, all_private = true;
  std::string neighbors;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const std::string part = where + ".merged_from[" + std::to_string(i) + "]";
    check_privacy_meaning(parts[i], family, part);  // a part's "private" is a boolean from here on
    const bool part_private = parts[i].at("private").get<bool>();
    all_private = all_private && part_private;
    all_fit = all_fit && parts[i].value("fit_for_release", false);
    if (part_private) {
      eps = std::max(eps, parts[i].at("epsilon").get<double>());
      const std::string n = parts[i].at("neighbors").get<std::string>();
      if (!neighbors.empty() && n != neighbors) throw InputError(part + ".neighbors': the parts of a merge must share their neighbouring relation");
      neighbors = n;
    }
  }
  if (!privacy.contains("private") || !privacy.at("private").is_boolean()) throw InputError(where + ".private': expected true or false");
  if (privacy.at("private").get<bool>() != all_private)
    throw InputError(where + ".private': " + privacy.at("private").dump() + ", but the merged parts say otherwise");
  if (privacy.value("fit_for_release", false) && !all_fit)
    throw InputError(where + ".fit_for_release': true, but a merged part is not fit for release");
  if (all_private) {
    const double e = number(privacy, "epsilon", where);
    if (!close(e, eps, 1e-12)) throw InputError(where + ".epsilon': " + privacy.at("epsilon").dump() + ", but the largest part's epsilon is " + nlohmann::json(eps).dump());
  }
}

// ---------------------------------------------------------------------------------------------
// Noise identifiers

namespace {
std::string hex(const unsigned char* bytes, std::size_t n) {
  static const char* digits = "0123456789abcdef";
  std::string s;
  for (std::size_t i = 0; i < n; ++i) {
    s += digits[bytes[i] >> 4];
    s += digits[bytes[i] & 15];
  }
  return s;
}
}  // namespace

std::string fresh_noise_id() {
  CryptoRandom rng;
  std::array<unsigned char, 16> b{};
  for (std::size_t i = 0; i < 2; ++i) {
    const std::uint64_t w = rng.next();
    for (std::size_t j = 0; j < 8; ++j) b[i * 8 + j] = static_cast<unsigned char>(w >> (8 * j));
  }
  return "csprng:" + hex(b.data(), b.size());
}

std::string seeded_noise_id(std::uint64_t noise_seed) {
  std::string message = "privrace noise seed ";
  for (std::size_t j = 0; j < 8; ++j) message += static_cast<char>((noise_seed >> (8 * j)) & 0xFF);
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int len = 0;
  if (EVP_Digest(message.data(), message.size(), digest.data(), &len, EVP_sha256(), nullptr) != 1 || len < 16)
    throw Error("SHA-256 of the noise seed failed (OpenSSL)");
  return "seed-sha256:" + hex(digest.data(), 16);
}

std::vector<std::string> noise_ids(const nlohmann::json& privacy) {
  std::vector<std::string> out;
  if (!privacy.is_object()) return out;
  if (privacy.contains("noise_id") && privacy.at("noise_id").is_string()) out.push_back(privacy.at("noise_id").get<std::string>());
  if (privacy.contains("merged_from") && privacy.at("merged_from").is_array())
    for (const auto& part : privacy.at("merged_from")) {
      const auto ids = noise_ids(part);
      out.insert(out.end(), ids.begin(), ids.end());
    }
  return out;
}

}  // namespace privrace
