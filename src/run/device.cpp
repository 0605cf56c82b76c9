// DeviceName and Backend: parsed from text and written back, and the one rule
// that picks a run's backend (none, mpi, nccl) from its device and ranks.
#include "run/device.h"

#include <fmt/format.h>

#include <cctype>

#include "util/enum_names.h"
#include "util/error.h"

namespace egm {

std::string DeviceName::str() const {
  if (kind == Kind::cpu) return "cpu";
  return index < 0 ? "cuda" : fmt::format("cuda:{}", index);
}

DeviceName parse_device_name(std::string_view text, const std::string& what) {
  if (text == "cpu") return {};
  if (text == "cuda") return {DeviceName::Kind::cuda, -1};
  if (text.substr(0, 5) == "cuda:") {
    const std::string_view digits = text.substr(5);
    bool ok = !digits.empty() && digits.size() <= 4;
    for (char ch : digits) ok = ok && std::isdigit(static_cast<unsigned char>(ch));
    if (ok) return {DeviceName::Kind::cuda, std::stoi(std::string(digits))};
  }
  EGM_THROW(ConfigError, "{}unknown device '{}'; use cpu, cuda (GPUs dealt out per worker) or cuda:N",
            what.empty() ? "" : what + ": ", std::string(text));
}

const char* device_kind(const DeviceName& device) { return device.is_cuda() ? "cuda" : "cpu"; }

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

namespace {
constexpr const char* kBackendNames[] = {"none", "mpi", "nccl"};  // in enum order
}  // namespace

const char* to_string(Backend backend) { return enum_name(backend, kBackendNames); }

Backend parse_backend(std::string_view name) {
  return parse_enum<Backend, ProtocolError>(name, kBackendNames, "backend");
}

Backend backend_for(const DeviceName& device, int world_size, bool nccl_on_every_rank) {
  if (world_size <= 1) return Backend::none;
  return device.is_cuda() && nccl_on_every_rank ? Backend::nccl : Backend::mpi;
}

}  // namespace egm
