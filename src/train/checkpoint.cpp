// Checkpoint files: a magic and format version, a JSON header and LibTorch's
// archive, written atomically; read back with every mismatch named.
#include "train/checkpoint.h"

#include "egm/version_info.h"

#include <cstring>
#include <filesystem>
#include <sstream>

#include "util/error.h"
#include "util/files.h"
#include "util/json_limits.h"
#include "util/sha256.h"
#include "util/torch_compat.h"

namespace egm {
namespace {

// Layout: 8-byte magic, 4-byte header length (host order: checkpoints stay on one kind of machine), the JSON header, the payload.
constexpr char kMagic[8] = {'E', 'G', 'M', 'C', 'K', 'P', 'T', '1'};
constexpr int kFormatVersion = 1;

struct ParsedFile {
  nlohmann::json header;
  std::string payload;
};

ParsedFile parse(const std::string& path) {
  std::string bytes = read_file(path);
  EGM_REQUIRE(bytes.size() >= 12 && std::memcmp(bytes.data(), kMagic, 8) == 0, IoError,
              "{} is not an egm checkpoint (bad magic)", path);
  uint32_t header_len = 0;
  std::memcpy(&header_len, bytes.data() + 8, 4);
  // size_t arithmetic: a 32-bit length cannot overflow it.
  EGM_REQUIRE(12 + static_cast<size_t>(header_len) <= bytes.size(), IoError, "{} is truncated (header)", path);
  ParsedFile f;
  try {
    // IoError, not a JSON error: the file is damaged; load_checkpoint then tries the older one.
    f.header = parse_json(std::string_view(bytes).substr(12, header_len), JsonLimits::machine(), "header");
  } catch (const JsonError& e) {
    EGM_THROW(IoError, "{} has a corrupt header: {}", path, e.what());
  }
  const int version = f.header.value("format_version", 0);
  EGM_REQUIRE(version == kFormatVersion, IoError,
              "{} has checkpoint format {}, this egm reads {}; resume it with the egm that wrote it", path,
              version, kFormatVersion);
  f.payload = bytes.substr(12 + header_len);
  const auto expected_size = f.header.at("payload_bytes").get<size_t>();
  EGM_REQUIRE(f.payload.size() == expected_size, IoError, "{} is truncated: payload has {} of {} bytes", path,
              f.payload.size(), expected_size);
  // The checksum catches a torn write or bit rot before LibTorch's archive reader sees the bytes.
  EGM_REQUIRE(sha256_hex(f.payload) == f.header.at("payload_sha256").get<std::string>(), IoError,
              "{} is corrupt: payload checksum mismatch", path);
  return f;
}

// One generator state per device: "rng_cpu", "rng_cuda:0".
std::string rng_key(const torch::Device& d) { return "rng_" + d.str(); }

}  // namespace

CheckpointPaths checkpoint_paths(const std::string& run_dir) {
  namespace fs = std::filesystem;
  return {(fs::path(run_dir) / "checkpoint.egmc").string(), (fs::path(run_dir) / "checkpoint.prev.egmc").string()};
}

void save_checkpoint(const std::string& run_dir, torch::nn::Module& model, torch::optim::Optimizer& optimizer,
                     const TrainState& state, const std::string& config_hash,
                     const std::vector<torch::Device>& rng_devices) {
  torch::serialize::OutputArchive archive;
  torch::serialize::OutputArchive model_archive, optim_archive;
  for (const auto& p : model.named_parameters()) model_archive.write(p.key(), p.value());
  // Parameters and buffers by name, so a checkpoint does not depend on the order modules were registered in.
  for (const auto& b : model.named_buffers()) model_archive.write(b.key(), b.value(), /*is_buffer=*/true);
  archive.write("model", model_archive);
  optimizer.save(optim_archive);
  archive.write("optimizer", optim_archive);
  for (const auto& d : rng_devices) archive.write(rng_key(d), compat::default_generator(d).get_state());
  std::ostringstream payload_stream;
  archive.save_to(payload_stream);
  const std::string payload = payload_stream.str();

  nlohmann::json header = {
      {"format_version", kFormatVersion}, {"step", state.step},
      // best_val starts at +inf (no eval yet), which JSON cannot hold: null, read back as +inf.
      {"best_val", std::isfinite(state.best_val) ? nlohmann::json(state.best_val) : nlohmann::json(nullptr)},
      {"best_val_step", state.best_val_step}, {"extra", state.extra}, {"config_hash", config_hash},
      {"payload_bytes", payload.size()}, {"payload_sha256", sha256_hex(payload)},
      {"torch_version", compat::torch_version()}, {"egm_commit", EGM_GIT_COMMIT}};
  const std::string header_text = header.dump();
  std::string bytes(kMagic, 8);
  const auto header_len = static_cast<uint32_t>(header_text.size());
  bytes.append(reinterpret_cast<const char*>(&header_len), 4);
  bytes += header_text;
  bytes += payload;

  make_dirs(run_dir);
  CheckpointPaths paths = checkpoint_paths(run_dir);
  // Write the new file completely first (a full disk throws here, leaving both
  // old checkpoints intact), then rotate: current -> previous, new -> current.
  const std::string staged = paths.current + ".new";
  atomic_write_file(staged, bytes);
  if (file_exists(paths.current) && std::rename(paths.current.c_str(), paths.previous.c_str()) != 0)
    EGM_THROW(IoError, "cannot rotate {} to {}: {}", paths.current, paths.previous, std::strerror(errno));
  if (std::rename(staged.c_str(), paths.current.c_str()) != 0)
    EGM_THROW(IoError, "cannot move {} to {}: {}", staged, paths.current, std::strerror(errno));
}

nlohmann::json read_checkpoint_header(const std::string& path) { return parse(path).header; }

std::optional<LoadedCheckpoint> load_checkpoint(const std::string& run_dir, torch::nn::Module& model,
                                                torch::optim::Optimizer& optimizer, const std::string& config_hash,
                                                const std::vector<torch::Device>& rng_devices,
                                                std::vector<std::string>* problems_out) {
  CheckpointPaths paths = checkpoint_paths(run_dir);
  std::vector<std::string> problems;
  // A crash between the two renames of save_checkpoint leaves only ".new" and ".prev".
  for (const std::string& path : {paths.current, paths.current + ".new", paths.previous}) {
    if (!file_exists(path)) continue;
    ParsedFile f;
    try {
      f = parse(path);
    } catch (const IoError& e) {
      problems.push_back(e.what());
      continue;
    }
    // A wrong config is an error, not a skipped file: the folder holds another run, and training over it would mix them.
    const std::string their_hash = f.header.value("config_hash", "");
    EGM_REQUIRE(their_hash == config_hash, IoError,
                "the checkpoint {} belongs to another run config (hash {}, this run {}); "
                "use a fresh --out directory or delete it",
                path, their_hash.substr(0, 12), config_hash.substr(0, 12));
    torch::serialize::InputArchive archive, model_archive, optim_archive;
    std::istringstream in(f.payload);
    // Every tensor straight onto the model's device, so a checkpoint written on
    // CUDA resumes on a CPU-only machine and back (the optimizer's moments too).
    const std::vector<torch::Tensor> params = model.parameters();
    archive.load_from(in, params.empty() ? torch::Device(torch::kCPU) : params.front().device());
    archive.read("model", model_archive);
    {
      torch::NoGradGuard no_grad;
      // copy_ into the existing tensors: the optimizer holds these very tensors, so they must not be replaced.
      for (auto& p : model.named_parameters()) {
        torch::Tensor t;
        model_archive.read(p.key(), t);
        p.value().copy_(t);
      }
      for (auto& b : model.named_buffers()) {
        torch::Tensor t;
        model_archive.read(b.key(), t, /*is_buffer=*/true);
        b.value().copy_(t);
      }
    }
    archive.read("optimizer", optim_archive);
    // LibTorch maps the saved moments to the parameters by position: the model must build the same list.
    optimizer.load(optim_archive);
    for (const auto& d : rng_devices) {
      // A generator state is a CPU byte tensor; a checkpoint from another device
      // type has none for this one (dropout is reseeded every step anyway).
      torch::Tensor state;
      if (archive.try_read(rng_key(d), state)) compat::default_generator(d).set_state(state.cpu());
    }
    LoadedCheckpoint loaded;
    loaded.path = path;
    loaded.state.step = f.header.at("step").get<int64_t>();
    loaded.state.best_val = f.header.at("best_val").is_null() ? std::numeric_limits<double>::infinity()
                                                               : f.header.at("best_val").get<double>();
    loaded.state.best_val_step = f.header.value("best_val_step", int64_t{-1});
    loaded.state.extra = f.header.value("extra", nlohmann::json::object());
    loaded.problems = problems;
    if (problems_out) *problems_out = problems;
    return loaded;
  }
  if (problems_out) *problems_out = problems;
  return std::nullopt;
}

}  // namespace egm
