#include "launch/device_name.h"

#include <fmt/format.h>

#include <cctype>

#include "util/error.h"

namespace egm::launch {

std::string DeviceName::str() const {
  if (kind == Kind::cpu) return "cpu";
  return index < 0 ? "cuda" : fmt::format("cuda:{}", index);
}

DeviceName parse_device_name(const std::string& text, const std::string& what) {
  if (text == "cpu") return {};
  if (text == "cuda") return {DeviceName::Kind::cuda, -1};
  if (text.rfind("cuda:", 0) == 0) {
    const std::string digits = text.substr(5);
    bool ok = !digits.empty() && digits.size() <= 4;
    for (char ch : digits) ok = ok && std::isdigit(static_cast<unsigned char>(ch));
    if (ok) return {DeviceName::Kind::cuda, std::stoi(digits)};
  }
  EGM_THROW(ConfigError, "{}unknown device '{}'; use cpu, cuda (GPUs dealt out per worker) or cuda:N",
            what.empty() ? "" : what + ": ", text);
}

bool built_with_cuda() {
#ifdef EGM_BUILT_WITH_CUDA
  return true;
#else
  return false;
#endif
}

void require_buildable(const DeviceName& device) {
  EGM_REQUIRE(!device.is_cuda() || built_with_cuda(), ConfigError,
              "--device {}: this egm was built against a LibTorch without CUDA; build it with scripts/setup.sh "
              "(PyPI's CUDA LibTorch) or use --device cpu",
              device.str());
}

}  // namespace egm::launch
