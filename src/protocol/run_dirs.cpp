// A cell's run folder from its key and config hash, and a sweep's folder bound
// to it by sweep.json (another sweep's folder of that name moved aside).
#include "protocol/run_dirs.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <system_error>

#include "util/error.h"
#include "util/files.h"
#include "util/json_limits.h"

namespace egm::protocol {
namespace fs = std::filesystem;

std::string run_dir(const std::string& runs_dir, const std::string& sweep_name, const std::string& cell_key,
                    const std::string& config_hash) {
  EGM_CHECK(!sweep_name.empty() && !cell_key.empty() && config_hash.size() >= 12,
            "run_dir needs a sweep name, a cell key and a config hash");
  // The hash in the name: a cell whose config changed (--new-sweep) never resumes from the old folder's checkpoint.
  return (fs::path(runs_dir) / sweep_name / fmt::format("{}-{}", cell_key, config_hash.substr(0, 12))).string();
}

namespace {

constexpr const char* kMarker = "sweep.json";

nlohmann::json marker_json(const SweepIdentity& s) {
  return {{"sweep_id", s.id}, {"name", s.name}, {"spec_hash", s.spec_hash}, {"created_at", s.created_at}};
}

// The owner recorded in a folder's marker; nullopt when there is none or it is unreadable.
std::optional<SweepIdentity> read_marker(const fs::path& dir) {
  const fs::path marker = dir / kMarker;
  if (!fs::exists(marker)) return std::nullopt;
  try {
    const nlohmann::json j = read_json_file(marker.string(), JsonLimits::user());
    SweepIdentity s;
    s.id = j.at("sweep_id").get<int64_t>();
    s.name = j.at("name").get<std::string>();
    s.spec_hash = j.at("spec_hash").get<std::string>();
    s.created_at = j.at("created_at").get<double>();
    return s;
  } catch (const std::exception&) {
    // An unreadable marker is treated as no marker: the folder is moved aside, never written into.
    return std::nullopt;
  }
}

// The first of base, base.2, base.3, ... that does not exist; nothing already there is overwritten.
fs::path free_name(const fs::path& base) {
  if (!fs::exists(base)) return base;
  for (int i = 2;; ++i) {
    fs::path candidate = base.string() + fmt::format(".{}", i);
    if (!fs::exists(candidate)) return candidate;
  }
}

}  // namespace

SweepDir prepare_sweep_dir(const std::string& runs_dir, const SweepIdentity& sweep) {
  const fs::path dir = fs::path(runs_dir) / sweep.name;
  SweepDir result{dir.string(), std::nullopt};
  if (fs::exists(dir)) {
    const std::optional<SweepIdentity> owner = read_marker(dir);
    // The id alone is not enough: a database made anew reuses ids, but not the creation time.
    const bool ours = owner && owner->id == sweep.id && owner->created_at == sweep.created_at;
    if (ours) return result;
    const fs::path aside =
        free_name(fs::path(runs_dir) / (sweep.name + "@" + (owner ? std::to_string(owner->id) : "unknown")));
    std::error_code ec;
    fs::rename(dir, aside, ec);
    EGM_REQUIRE(!ec, IoError, "cannot move the folder of another sweep {} aside to {}: {}", dir.string(),
                aside.string(), ec.message());
    result.moved_aside = aside.string();
  }
  make_dirs(dir.string());
  // Written for a new folder only (one that is ours returned above): the marker binds it to this sweep.
  atomic_write_file((dir / kMarker).string(), marker_json(sweep).dump(2) + "\n");
  return result;
}

}  // namespace egm::protocol
