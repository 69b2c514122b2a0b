#include "privrace/sketch/release_record.hpp"

#include "privrace/lsh/kernel_registry.hpp"
#include "privrace/privacy/discrete_gaussian.hpp"
#include "privrace/sketch/release.hpp"

#include <openssl/evp.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <map>
#include <variant>
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

namespace {
// The header says "privacy": {"private": true, ...}.
bool header_is_private(const nlohmann::json& header) {
  if (!header.contains("privacy") || !header.at("privacy").is_object()) return false;
  const auto it = header.at("privacy").find("private");
  return it != header.at("privacy").end() && it->is_boolean() && it->get<bool>();
}
}  // namespace

std::vector<std::pair<std::string, FieldClass>> classify_header(const nlohmann::json& header) {
  const bool is_private = header_is_private(header);
  std::vector<std::pair<std::string, FieldClass>> out;
  collect(header, "", is_private, out);
  return out;
}

void check_release_header(const nlohmann::json& header) {
  const bool is_private = header_is_private(header);
  for (const auto& [path, cls] : classify_header(header))
    if (is_private && cls == FieldClass::Exact)
      throw Error("refusing to write a private sketch whose header field '" + path +
                  "' is exact (a function of the records): the release record allows public, noisy and derived fields only");
}

// ---------------------------------------------------------------------------------------------
// The privacy record at the file edge

namespace {

using Json = nlohmann::json;

std::string number_text(double v) { return Json(v).dump(); }

// The types of the privacy record's fields that the library reads (merge, M2M, info), checked
// over the whole record (its merged parts included) before anything is read, so that a damaged
// or hand-edited header gives an error naming the field, not a JSON type error from deep inside
// a merge.
void check_record_types(const Json& p, const std::string& where) {
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
      check_record_types(p.at("merged_from")[i], part);
    }
}

// A private record that is not a merge is checked for its meaning (check_privacy_meaning): the
// fields that check reads must be of their type, and its mechanism and relation known.
void check_private_fields(const Json& p, const std::string& where) {
  if (p.contains("neighbors")) {
    const Json& n = p.at("neighbors");
    if (!n.is_string()) throw InputError(where + ".neighbors': expected a string, got " + n.dump());
    try {
      parse_neighbors(n.get<std::string>());
    } catch (const std::exception&) {
      throw InputError(where + ".neighbors': expected add-remove or replace, got '" + n.get<std::string>() + "'");
    }
  }
  if (p.contains("neighbor_unit")) {
    const Json& u = p.at("neighbor_unit");
    try {
      if (!u.is_string()) throw UsageError("not a string");
      parse_neighbor_unit(u.get<std::string>());
    } catch (const std::exception&) {
      throw InputError(where + ".neighbor_unit': expected record, edge or undirected_edge, got " + u.dump());
    }
  }
  if (p.contains("mechanism")) {
    const std::string m = p.at("mechanism").get<std::string>();
    if (m != "discrete_laplace" && m != "floored_laplace" && m != "gaussian" && m != "discrete_gaussian")
      throw InputError(where + ".mechanism': expected discrete_laplace, floored_laplace, gaussian or discrete_gaussian, got '" + m +
                       "'");
  }
  for (const char* key : {"sensitivity_l1", "sensitivity_l2"})
    if (p.contains(key) && !p.at(key).is_number())
      throw InputError(where + "." + key + "': expected a number, got " + p.at(key).dump());
  const bool count_noised = p.contains("epsilon_den") && p.at("epsilon_den").get<double>() > 0.0;
  if (count_noised && p.contains("count_noise_scale") && !p.at("count_noise_scale").is_number())
    throw InputError(where + ".count_noise_scale': expected a number, got " + p.at("count_noise_scale").dump());
  const bool fit = p.contains("fit_for_release") && p.at("fit_for_release").get<bool>();
  if (fit && p.contains("noise_source") && !p.at("noise_source").is_string())
    throw InputError(where + ".noise_source': expected a string, got " + p.at("noise_source").dump());
}

// An enum field's value by its parser (budget.hpp); false when the value names none.
template <typename Enum>
bool parse_name(const Json& value, Enum (*parse)(const std::string&), std::optional<Enum>& out) {
  if (!value.is_string()) return false;
  try {
    out = parse(value.get<std::string>());
  } catch (const UsageError&) {
    return false;
  }
  return true;
}

PrivacyRecord parse_record(const Json& p, const std::string& where) {
  PrivacyRecord r;
  if (!p.contains("private")) throw InputError(where + ".private': expected true or false");
  r.is_private = p.at("private").get<bool>();
  if (p.contains("merged_from")) {
    const Json& parts = p.at("merged_from");
    if (parts.size() < 2) throw InputError(where + ".merged_from': expected an array of two or more records");
    for (std::size_t i = 0; i < parts.size(); ++i)
      r.merged_from.push_back(parse_record(parts[i], where + ".merged_from[" + std::to_string(i) + "]"));
  }
  if (r.is_private && !r.merged()) check_private_fields(p, where);
  using Number = std::optional<double> PrivacyRecord::*;
  using Text = std::optional<std::string> PrivacyRecord::*;
  static const std::map<std::string, Number, std::less<>> numbers = {
      {"epsilon", &PrivacyRecord::epsilon},
      {"delta", &PrivacyRecord::delta},
      {"realised_epsilon", &PrivacyRecord::realised_epsilon},
      {"sensitivity_l1", &PrivacyRecord::sensitivity_l1},
      {"sensitivity_l2", &PrivacyRecord::sensitivity_l2},
      {"noise_scale", &PrivacyRecord::noise_scale},
      {"noise_variance", &PrivacyRecord::noise_variance},
      {"quantum", &PrivacyRecord::quantum},
      {"noise_variance_feature_units", &PrivacyRecord::noise_variance_feature_units},
      {"epsilon_num", &PrivacyRecord::epsilon_num},
      {"epsilon_den", &PrivacyRecord::epsilon_den},
      {"count_sensitivity", &PrivacyRecord::count_sensitivity},
      {"count_noise_scale", &PrivacyRecord::count_noise_scale},
      {"count_noise_variance", &PrivacyRecord::count_noise_variance},
      {"epsilon_if_overlapping", &PrivacyRecord::epsilon_if_overlapping},
      {"delta_if_overlapping", &PrivacyRecord::delta_if_overlapping}};
  static const std::map<std::string, Text, std::less<>> texts = {
      {"noise_source", &PrivacyRecord::noise_source},   {"noise_sampler", &PrivacyRecord::noise_sampler},
      {"noise_id", &PrivacyRecord::noise_id},           {"noise_streams", &PrivacyRecord::noise_streams},
      {"warning", &PrivacyRecord::warning},             {"sensitivity_note", &PrivacyRecord::sensitivity_note},
      {"count_mechanism", &PrivacyRecord::count_mechanism}, {"composition", &PrivacyRecord::composition},
      {"noise", &PrivacyRecord::noise}};
  for (const auto& [key, value] : p.items()) {
    // A field is typed when its value has its type; otherwise it is kept as it was (a record
    // whose meaning depends on it was refused above).
    bool typed = true;
    if (key == "private" || key == "merged_from") continue;
    if (const auto n = numbers.find(key); n != numbers.end()) {
      if ((typed = value.is_number())) r.*(n->second) = value.get<double>();
    } else if (const auto t = texts.find(key); t != texts.end()) {
      if ((typed = value.is_string())) r.*(t->second) = value.get<std::string>();
    } else if (key == "fit_for_release") {
      r.fit_for_release = value.get<bool>();
    } else if (key == "mechanism") {
      if (value.get<std::string>() == "mixed") r.mixed_mechanisms = true;
      else typed = parse_name(value, parse_mechanism, r.mechanism);
    } else if (key == "neighbors") {
      typed = parse_name(value, parse_neighbors, r.neighbors);
    } else if (key == "neighbor_unit") {
      typed = parse_name(value, parse_neighbor_unit, r.neighbor_unit);
    } else if (key == "count") {
      if (value.is_number_integer()) r.count = value.get<std::int64_t>();
      else r.count = value.get<double>();
    } else if (key == "merged_parts") {
      if ((typed = value.is_number_unsigned())) r.merged_parts = value.get<std::uint64_t>();
    } else {
      typed = false;
    }
    if (!typed) r.other[key] = value.dump();
  }
  return r;
}

}  // namespace

nlohmann::json privacy_record_json(const PrivacyRecord& r) {
  Json j = Json::object();
  for (const auto& [key, text] : r.other) j[key] = Json::parse(text);
  j["private"] = r.is_private;
  const auto put = [&j](const char* key, const auto& field) {
    if (field) j[key] = *field;
  };
  put("fit_for_release", r.fit_for_release);
  put("epsilon", r.epsilon);
  put("delta", r.delta);
  put("realised_epsilon", r.realised_epsilon);
  if (r.mechanism) j["mechanism"] = to_string(*r.mechanism);
  else if (r.mixed_mechanisms) j["mechanism"] = "mixed";
  if (r.neighbors) j["neighbors"] = to_string(*r.neighbors);
  if (r.neighbor_unit) j["neighbor_unit"] = to_string(*r.neighbor_unit);
  put("sensitivity_l1", r.sensitivity_l1);
  put("sensitivity_l2", r.sensitivity_l2);
  put("noise_scale", r.noise_scale);
  put("noise_variance", r.noise_variance);
  put("noise_source", r.noise_source);
  put("noise_sampler", r.noise_sampler);
  put("noise_id", r.noise_id);
  put("noise_streams", r.noise_streams);
  put("warning", r.warning);
  put("quantum", r.quantum);
  put("noise_variance_feature_units", r.noise_variance_feature_units);
  put("sensitivity_note", r.sensitivity_note);
  put("epsilon_num", r.epsilon_num);
  put("epsilon_den", r.epsilon_den);
  put("count_sensitivity", r.count_sensitivity);
  put("count_mechanism", r.count_mechanism);
  put("count_noise_scale", r.count_noise_scale);
  put("count_noise_variance", r.count_noise_variance);
  if (r.count) std::visit([&j](auto v) { j["count"] = v; }, *r.count);
  put("epsilon_if_overlapping", r.epsilon_if_overlapping);
  put("delta_if_overlapping", r.delta_if_overlapping);
  put("composition", r.composition);
  put("noise", r.noise);
  if (r.merged()) {
    Json parts = Json::array();
    for (const PrivacyRecord& part : r.merged_from) parts.push_back(privacy_record_json(part));
    j["merged_from"] = std::move(parts);
  }
  put("merged_parts", r.merged_parts);
  return j;
}

void to_json(nlohmann::json& out, const PrivacyRecord& privacy) { out = privacy_record_json(privacy); }

PrivacyRecord privacy_record_from_json(const nlohmann::json& privacy, const std::string& where) {
  if (!privacy.is_object()) throw InputError(where + "': expected an object");
  check_record_types(privacy, where);
  return parse_record(privacy, where);
}

// ---------------------------------------------------------------------------------------------
// The reader's check of meaning

namespace {

double needed(const std::optional<double>& value, const char* key, const std::string& where) {
  if (!value) throw InputError(where + "." + key + "' is missing (a private record needs it)");
  return *value;
}

bool close(double a, double b, double rel) { return std::abs(a - b) <= rel * std::max(std::abs(a), std::abs(b)); }

// The scale a mechanism must use for sensitivity `sens` at `eps` (the discrete Laplace and the
// discrete Gaussian round their scale up, by a relative 2^-12 at most: the realised epsilon is
// never above the claim).
void check_scale(double scale, double need, NoiseMechanism mechanism, const std::string& field) {
  const bool rounds_up = mechanism == NoiseMechanism::DiscreteLaplace || mechanism == NoiseMechanism::DiscreteGaussian;
  const bool ok = rounds_up ? scale >= need * (1.0 - 1e-9) && scale <= need * (1.0 + 0x1.0p-11) : close(scale, need, 1e-9);
  if (!ok) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "': %.17g, but the sensitivity and epsilon call for %.17g (%s)", scale, need,
                  to_string(mechanism).c_str());
    throw InputError(field + buf);
  }
}

void check_one(const PrivacyRecord& p, const LshFamily& family, const std::string& where) {
  if (!p.is_private) {
    if (p.fit()) throw InputError(where + ".fit_for_release': true, but the record says the counts carry no noise");
    return;
  }
  const double eps = needed(p.epsilon, "epsilon", where);
  if (!std::isfinite(eps) || !(eps > 0.0)) throw InputError(where + ".epsilon': must be a finite number > 0, got " + number_text(eps));
  if (!p.neighbors) throw InputError(where + ".neighbors' is missing (a private record needs it)");
  const NeighborRelation rel = *p.neighbors;
  const std::string neighbors = to_string(rel);
  if (!p.mechanism) {
    if (p.mixed_mechanisms)
      throw InputError(where + ".mechanism': expected discrete_laplace, floored_laplace, gaussian or discrete_gaussian, got 'mixed'");
    throw InputError(where + ".mechanism' is missing (a private record needs it)");
  }
  const NoiseMechanism mechanism = *p.mechanism;
  const double delta = p.delta.value_or(0.0);
  if (is_gaussian(mechanism) && !(delta > 0.0 && delta < 1.0))
    throw InputError(where + ".delta': the " + to_string(mechanism) + " mechanism needs delta in (0, 1), got " +
                     (p.delta ? number_text(delta) : "null"));
  if (!is_gaussian(mechanism) && delta != 0.0)
    throw InputError(where + ".delta': " + to_string(mechanism) + " is pure epsilon-DP, delta must be 0, got " + number_text(delta));
  const Sensitivity sens = sketch_sensitivity(family, rel, p.unit());
  const double l1 = needed(p.sensitivity_l1, "sensitivity_l1", where), l2 = needed(p.sensitivity_l2, "sensitivity_l2", where);
  if (!close(l1, sens.l1, 1e-9))
    throw InputError(where + ".sensitivity_l1': " + number_text(l1) + ", but this family under " + neighbors +
                     " neighbours has " + number_text(sens.l1));
  if (!close(l2, sens.l2, 1e-9))
    throw InputError(where + ".sensitivity_l2': " + number_text(l2) + ", but this family under " + neighbors +
                     " neighbours has " + number_text(sens.l2));
  double eps_num = eps;
  if (p.epsilon_num || p.epsilon_den) {
    eps_num = needed(p.epsilon_num, "epsilon_num", where);
    const double eps_den = needed(p.epsilon_den, "epsilon_den", where);
    if (!(eps_num > 0.0) || eps_den < 0.0 || !close(eps_num + eps_den, eps, 1e-9))
      throw InputError(where + ".epsilon_num': epsilon_num + epsilon_den must equal epsilon with epsilon_num > 0");
    if (eps_den > 0.0) {
      const double count_sens = count_sensitivity(rel);
      check_scale(needed(p.count_noise_scale, "count_noise_scale", where), count_sens / eps_den, NoiseMechanism::DiscreteLaplace,
                  where + ".count_noise_scale");
    }
  } else if (family.accumulates_values() || family.kernel_name() == "hist") {
    throw InputError(where + ".epsilon_num' is missing: a feature sketch splits epsilon between its sums and its record count");
  }
  const double scale = needed(p.noise_scale, "noise_scale", where);
  const double need = mechanism == NoiseMechanism::Gaussian           ? analytic_gaussian_sigma(eps_num, delta, sens.l2)
                      : mechanism == NoiseMechanism::DiscreteGaussian ? sens.l2 / std::sqrt(2.0 * zcdp_rho(eps_num, delta))
                                                                      : sens.l1 / eps_num;
  check_scale(scale, need, mechanism, where + ".noise_scale");
  if (p.fit()) {
    if (p.noise_source == "seeded" || p.other.contains("noise_seed"))
      throw InputError(where + ".fit_for_release': true, but the noise was drawn from a seed (not fit for release)");
  }
}

}  // namespace

void check_privacy_meaning(const PrivacyRecord& privacy, const LshFamily& family, const std::string& where) {
  if (!privacy.merged()) return check_one(privacy, family, where);
  const auto& parts = privacy.merged_from;
  if (parts.size() < 2) throw InputError(where + ".merged_from': expected an array of two or more records");
  double eps = 0.0;
  bool all_fit = true, all_private = true;
  std::optional<NeighborRelation> neighbors;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const std::string part = where + ".merged_from[" + std::to_string(i) + "]";
    check_privacy_meaning(parts[i], family, part);
    all_private = all_private && parts[i].is_private;
    all_fit = all_fit && parts[i].fit();
    if (parts[i].is_private) {
      eps = std::max(eps, needed(parts[i].epsilon, "epsilon", part));
      if (!parts[i].neighbors) throw InputError(part + ".neighbors' is missing (a private record needs it)");
      if (neighbors && *parts[i].neighbors != *neighbors)
        throw InputError(part + ".neighbors': the parts of a merge must share their neighbouring relation");
      neighbors = parts[i].neighbors;
    }
  }
  if (privacy.is_private != all_private)
    throw InputError(where + ".private': " + std::string(privacy.is_private ? "true" : "false") + ", but the merged parts say otherwise");
  if (privacy.fit() && !all_fit) throw InputError(where + ".fit_for_release': true, but a merged part is not fit for release");
  if (all_private) {
    const double e = needed(privacy.epsilon, "epsilon", where);
    if (!close(e, eps, 1e-12))
      throw InputError(where + ".epsilon': " + number_text(e) + ", but the largest part's epsilon is " + number_text(eps));
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

// ---------------------------------------------------------------------------------------------
// Public parameters of an existing sketch

ReleaseParams like_params(const nlohmann::json& header, ReleaseParams base) {
  if (!header.is_object() || !header.contains("family") || !header.at("family").is_object())
    throw InputError("parameters: field 'family' is missing (expected a sketch header or a parameters file with 'family' and 'width')");
  const nlohmann::json& f = header.at("family");
  auto need = [&](const char* key) -> const nlohmann::json& {
    if (!f.contains(key)) throw InputError(std::string("parameters: field 'family.") + key + "' is missing");
    return f.at(key);
  };
  try {
    FamilySpec& fam = base.family;
    fam.kernel = parse_kernel(need("kernel").get<std::string>());
    // A header names the classic MinHash "jaccard" without a scheme (lsh/family.cpp).
    if (fam.kernel == Kernel::Jaccard && (!f.contains("scheme") || f.at("scheme") == "classic")) fam.kernel = Kernel::JaccardClassic;
    if (!f.contains("seed") || !f.at("seed").is_number_unsigned())
      throw InputError("parameters: field 'family.seed' (the public hash seed) must be an unsigned integer");
    base.hash_seed = f.at("seed").get<std::uint64_t>();
    // The fields the kernel's registry entry says it reads.
    const KernelFields fields = kernel_info(fam.kernel).fields;
    if (fields.features_sigma) {
      fam.features = need("features").get<std::size_t>();
      fam.sigma = need("sigma").get<double>();
    }
    if (fields.bins_domain) {
      fam.bins = need("bins").get<std::size_t>();
      fam.lo = need("lo").get<std::vector<double>>();
      fam.hi = need("hi").get<std::vector<double>>();
    }
    if (fields.rows_power) {
      fam.rows = need("rows").get<std::size_t>();
      if (f.contains("power")) fam.power = f.at("power").get<std::size_t>();
      if (fields.bandwidth) fam.bandwidth = need("bandwidth").get<double>();
      if (fields.pair_mode) fam.pair_mode = parse_pair_mode(need("pair_mode").get<std::string>());
      if (!header.contains("width")) throw InputError("parameters: field 'width' is missing");
      base.width = header.at("width").get<std::size_t>();
    }
  } catch (const nlohmann::json::exception& e) {
    throw InputError(std::string("parameters: a field of 'family' has the wrong type (") + e.what() + ")");
  }
  return base;
}

}  // namespace privrace
