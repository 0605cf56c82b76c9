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
  // Index -1 is plain "cuda": the launcher deals out one GPU per worker.
  return index < 0 ? "cuda" : fmt::format("cuda:{}", index);
}

DeviceName parse_device_name(std::string_view text, const std::string& what) {
  // The default DeviceName is the CPU.
  if (text == "cpu") return {};
  if (text == "cuda") return {DeviceName::Kind::cuda, -1};
  if (text.substr(0, 5) == "cuda:") {
    const std::string_view digits = text.substr(5);
    // At most 4 digits: stoi cannot overflow, and no node has 10,000 GPUs.
    bool ok = !digits.empty() && digits.size() <= 4;
    for (char ch : digits) ok = ok && std::isdigit(static_cast<unsigned char>(ch));
    if (ok) return {DeviceName::Kind::cuda, std::stoi(std::string(digits))};
  }
  EGM_THROW(ConfigError, "{}unknown device '{}'; use cpu, cuda (GPUs dealt out per worker) or cuda:N",
            what.empty() ? "" : what + ": ", std::string(text));
}

// The kind without the index: what a reusable run must match (a run on cuda:0 serves one on cuda:3).
const char* device_kind(const DeviceName& device) { return device.is_cuda() ? "cuda" : "cpu"; }

// Decided at build time: EGM_BUILT_WITH_CUDA is defined when the LibTorch found has CUDA.
bool built_with_cuda() {
#ifdef EGM_BUILT_WITH_CUDA
  return true;
#else
  return false;
#endif
}

// Refused before any worker starts: a CUDA device in a CPU-only build would fail in every worker.
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

// ProtocolError: backend names arrive in workers' records and stored runs, never from the user.
Backend parse_backend(std::string_view name) {
  return parse_enum<Backend, ProtocolError>(name, kBackendNames, "backend");
}

// NCCL only when every rank of the group can use it; one rank without it puts the whole group on MPI,
// since all ranks must agree on one communicator.
Backend backend_for(const DeviceName& device, int world_size, bool nccl_on_every_rank) {
  if (world_size <= 1) return Backend::none;
  return device.is_cuda() && nccl_on_every_rank ? Backend::nccl : Backend::mpi;
}

}  // namespace egm
