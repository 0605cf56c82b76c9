// libFuzzer target: what egm reads back from a results database that may have
// come from elsewhere (issue 40). The first byte picks the reader, the rest is
// the stored value:
//   0  a parameter layout and its snapshot, split at the first NUL
//      (db::parse_param_layout, then db::unpack_params);
//   1  a stored spec (spec::read_stored_spec, through the bounded reader).
// A refusal is an egm::Error; a crash, a sanitizer report, an allocation the
// size of a crafted count, or another exception type is a finding.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "spec/experiment_spec.h"
#include "db/param_pack.h"
#include "util/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  try {
    if (data[0] % 2 == 0) {
      const size_t nul = text.find('\0');
      const std::string_view layout = text.substr(0, nul);
      const std::string_view blob = nul == std::string_view::npos ? std::string_view() : text.substr(nul + 1);
      egm::db::unpack_params(egm::db::parse_param_layout(layout), blob);
    } else {
      egm::spec::read_stored_spec(text);
    }
  } catch (const egm::Error&) {
  }
  return 0;
}
