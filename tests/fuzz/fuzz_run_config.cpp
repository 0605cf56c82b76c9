// libFuzzer target: a run config read from outside (`egm train --config FILE`):
// the bounded reader, then run_config_from_json; what loads must survive the
// round trip through to_json (the config.json a run writes) unchanged.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "config/run_config.h"
#include "util/error.h"
#include "util/json_limits.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    const nlohmann::json j = egm::parse_json(text, egm::JsonLimits::user(), "fuzz.json");
    const egm::RunConfig c = egm::run_config_from_json(j, "tiny");
    const std::string written = egm::to_json(c).dump();
    const egm::RunConfig again =
        egm::run_config_from_json(egm::parse_json(written, egm::JsonLimits::user(), "config.json"), "tiny");
    if (egm::to_json(again).dump() != written) std::abort();  // config.json would not resume the same run
  } catch (const egm::Error&) {
  }
  return 0;
}
