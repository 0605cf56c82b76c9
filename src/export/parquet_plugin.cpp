// egm-parquet.so found (beside the binary, or where asked) and dlopen'ed on the
// first Parquet export; its one entry point gives the Parquet sinks.
#include "export/parquet_plugin.h"

#include <dlfcn.h>

#include <filesystem>
#include <stdexcept>

#include "util/error.h"

namespace egm::exporter {
namespace {

// Wraps the module's sink so that its std::runtime_errors reach the user as
// egm's one-line IoError.
class LoadedSink final : public TableSink {
 public:
  explicit LoadedSink(TableSink* sink) : sink_(sink) {}
  void add(const Row& row) override {
    try {
      sink_->add(row);
    } catch (const std::runtime_error& e) {
      EGM_THROW(IoError, "{}", e.what());
    }
  }
  void finish() override {
    try {
      sink_->finish();
    } catch (const std::runtime_error& e) {
      EGM_THROW(IoError, "{}", e.what());
    }
  }

 private:
  std::unique_ptr<TableSink> sink_;
};

std::filesystem::path default_module_path() {
  std::error_code ec;
  // The running binary's real path (Linux), not argv[0], which may be relative or found through PATH.
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  EGM_REQUIRE(!ec, IoError, "cannot find the running egm (/proc/self/exe: {}), nor egm-parquet.so next to it",
              ec.message());
  return self.parent_path() / "egm-parquet.so";
}

}  // namespace

SinkFactory load_parquet_sinks(const std::string& module_path) {
  const std::filesystem::path path = module_path.empty() ? default_module_path() : std::filesystem::path(module_path);
  // Loaded once per process and never closed: its sinks' code lives there.
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    EGM_THROW(IoError, "cannot load {}: {}; egm export --format parquet needs it next to egm (build target "
              "egm_parquet, with Apache Arrow from scripts/arrow_env.sh)", path.string(), why ? why : "unknown error");
  }
  // The symbol's name carries its version (_v1): a module from an incompatible build lacks it.
  auto open = reinterpret_cast<ParquetOpenFn>(dlsym(handle, kParquetEntryPoint));
  EGM_REQUIRE(open != nullptr, IoError, "{} has no {}: it is from another egm build", path.string(),
              kParquetEntryPoint);
  return [open](const std::string& file, const TableSchema& schema) -> std::unique_ptr<TableSink> {
    // Failure comes back as nullptr and a message: the extern "C" entry point throws nothing.
    std::string error;
    TableSink* sink = open(&file, &schema, &error);
    EGM_REQUIRE(sink != nullptr, IoError, "{}", error);
    // LoadedSink owns the sink; its code stays valid because the module is never dlclose'd.
    return std::make_unique<LoadedSink>(sink);
  };
}

}  // namespace egm::exporter
