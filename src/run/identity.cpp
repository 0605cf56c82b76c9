// A run's identity: its parts, whether they are all known, and its text.
#include "run/identity.h"

#include <fmt/format.h>

namespace egm {

bool RunIdentity::known() const {
  return !config_hash.empty() && !corpus_sha256.empty() && corpus_sha256 != "unknown" && !device_kind.empty() &&
         world_size >= 1 && numerics_version > 0;
}

std::string RunIdentity::str() const {
  return fmt::format("config {}, corpus {}, {} x{}, numerics {}", config_hash.substr(0, 12),
                     corpus_sha256.empty() ? "unknown" : corpus_sha256.substr(0, 12),
                     device_kind.empty() ? "?" : device_kind, world_size,
                     numerics_version > 0 ? std::to_string(numerics_version) : "unknown");
}

bool same_run(const RunIdentity& a, const RunIdentity& b) { return a.known() && b.known() && a == b; }

std::string device_kind_of(const std::string& device_text) {
  try {
    return device_kind(parse_device_name(device_text, ""));
  } catch (const std::exception&) {
    return "";
  }
}

}  // namespace egm
