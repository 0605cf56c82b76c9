// libFuzzer target: the experiment spec loader (egm::spec::parse_spec), bounded
// reader, schema (valijson, std::regex), meaning checks and expansion included.
// A refusal is an egm::Error; anything else (a crash, a sanitizer report, an
// exception of another type, which egm would print without a path) is a finding.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "spec/expand.h"
#include "spec/experiment_spec.h"
#include "util/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    const egm::spec::ExperimentSpec spec = egm::spec::parse_spec(text, "fuzz.json");
    // What loads must expand (the coordinator does this next).
    if (spec.variants.size() * spec.seeds.size() <= 64) egm::spec::expand(spec);
  } catch (const egm::Error&) {
  }
  return 0;
}
