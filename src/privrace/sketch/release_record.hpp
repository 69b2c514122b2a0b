#pragma once
// The release record: what may leave the owner's machine. Every field of a sketch file's header
// has a declared class (docs/file-format.md lists them):
//   Public   chosen by the releaser, independent of the records (kernel, R, W, the family and its
//            hash seed, epsilon, mechanism, neighbours, sensitivities, noise scale, software, ...)
//   Noisy    drawn by the mechanism (the counts; a feature sketch's record count; the release's
//            noise identifier)
//   Derived  computed from noisy values and public parameters only (N-hat)
//   Exact    a function of the records (the record count, graph statistics, the input's name):
//            written only into files without privacy (--no-privacy), never into a private file.
// The writer classifies every field of a header before anything is written: an unclassified
// field, or an exact field in a private file, is refused (Error naming the field). The reader
// checks the privacy record's meaning, not only its types (check_privacy_meaning).
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "privrace/lsh/family.hpp"
#include "privrace/privacy/record.hpp"

namespace privrace {

enum class FieldClass { Public, Noisy, Derived, Exact };
std::string to_string(FieldClass c);

// The class of a header field given by its dotted path ("privacy.count", "build.points",
// "family.seed"; array elements take their array's path). `is_private`: the class of the
// privacy record's counts depends on it (privacy.count and n_hat are exact without noise).
// Throws Error for a field the release record does not declare.
FieldClass classify_header_field(std::string_view path, bool is_private);

// Every leaf of `header` with its class (dotted paths, in document order).
std::vector<std::pair<std::string, FieldClass>> classify_header(const nlohmann::json& header);

// The writer's check: every field declared, and no exact field when the privacy record says
// "private": true. Error naming the field ("header field 'build.points' is exact ...").
void check_release_header(const nlohmann::json& header);

// The privacy record at the file edge: the header's "privacy" object of a PrivacyRecord (the
// fields it holds, in the header's key order and number formats: a record read and written back
// gives the same bytes), and the record of a header's "privacy" object. The reader checks the
// types of the fields the library reads and that a private record's mechanism and neighbouring
// relation are known (InputError naming `where` + the field, e.g. "FILE: header field
// 'privacy.epsilon': expected a number, got \"1\""); a merged record needs two or more parts.
// Fields it does not interpret are kept (PrivacyRecord::other).
nlohmann::json privacy_record_json(const PrivacyRecord& privacy);
PrivacyRecord privacy_record_from_json(const nlohmann::json& privacy, const std::string& where = "privacy record: field 'privacy");
// nlohmann's conversion hook (json j = record): privacy_record_json.
void to_json(nlohmann::json& out, const PrivacyRecord& privacy);

// The reader's check of a privacy record's meaning for a sketch of `family` (InputError naming
// `where` + the field): a private record names a known mechanism and neighbouring relation, has
// a finite epsilon > 0 (delta in (0, 1) for the Gaussian mechanism), sensitivities equal to the
// family's under that relation, and a noise scale that sensitivity / epsilon calls for;
// "fit_for_release": true requires noise from the CSPRNG (no seed); a record without noise is
// never fit for release; a merged record's parts are checked the same way and its epsilon is
// their largest.
void check_privacy_meaning(const PrivacyRecord& privacy, const LshFamily& family, const std::string& where);

// The identifier of a release's noise stream, recorded as privacy.noise_id: 128 bits from the
// CSPRNG for a release (so two files with one noise_id share their noise: a file and itself),
// or a fingerprint of the noise seed for seeded noise (SHA-256, never the seed itself), so two
// files of one noise seed are recognised as sharing their noise.
std::string fresh_noise_id();
std::string seeded_noise_id(std::uint64_t noise_seed);

// noise_ids(const PrivacyRecord&): privacy/record.hpp.

}  // namespace privrace
