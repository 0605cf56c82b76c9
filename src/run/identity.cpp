// A run's identity: its parts, whether they are all known, and its text.
#include "run/identity.h"

#include <fmt/format.h>

namespace egm {

// A part that is unknown (an older run, a corpus never hashed) makes the identity unknown: such a run is never reused.
bool RunIdentity::known() const {
  return !config_hash.empty() && !corpus_sha256.empty() && corpus_sha256 != "unknown" && !device_kind.empty() &&
         world_size >= 1 && numerics_version > 0;
}

// Hashes cut to 12 hex digits: enough to tell runs apart in a message.
std::string RunIdentity::str() const {
  return fmt::format("config {}, corpus {}, {} x{}, numerics {}", config_hash.substr(0, 12),
                     corpus_sha256.empty() ? "unknown" : corpus_sha256.substr(0, 12),
                     device_kind.empty() ? "?" : device_kind, world_size,
                     numerics_version > 0 ? std::to_string(numerics_version) : "unknown");
}

// Two unknown identities are never the same run, even when equal field by field.
bool same_run(const RunIdentity& a, const RunIdentity& b) { return a.known() && b.known() && a == b; }

// "" for a device text this build cannot parse: an unknown kind, so the run is not reused.
std::string device_kind_of(const std::string& device_text) {
  try {
    return device_kind(parse_device_name(device_text, ""));
  } catch (const std::exception&) {
    return "";
  }
}

}  // namespace egm
