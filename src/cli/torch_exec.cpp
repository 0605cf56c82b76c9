// The torch verbs in `egm` (torch_verbs.h): `egm` does not link LibTorch, so
// each run_<verb>() replaces this process with egm-torch, built next to it,
// given the same command line. By then CLI11 has checked the flags (a bad
// one is refused here, with egm's message and exit status 2) and --help has
// been answered; egm-torch parses the same flags again (the same
// cmd_<verb>.cpp) and does the work in this process: same pid, so signals,
// output and the exit status are the verb's own.
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "cli/torch_verbs.h"
#include "util/error.h"

namespace egm::cli {
namespace {

[[noreturn]] void exec_egm_torch() {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  EGM_REQUIRE(!ec, IoError, "cannot locate the egm binary (/proc/self/exe): {}", ec.message());
  const fs::path torch_binary = self.parent_path() / "egm-torch";
  char** argv = command_line();
  EGM_REQUIRE(argv != nullptr, IoError, "the command line was not recorded");
  std::fflush(stdout);
  std::fflush(stderr);
  execv(torch_binary.c_str(), argv);
  EGM_THROW(IoError, "cannot run {}: {}; egm train, bench, audit, data and sweep run in egm-torch, built next to "
            "egm (cmake --build BUILD --target egm)", torch_binary.string(), std::strerror(errno));
}

}  // namespace

void run_train(const TrainArgs&) { exec_egm_torch(); }
void run_bench(const BenchArgs&) { exec_egm_torch(); }
void run_audit_causality(const AuditCausalityArgs&) { exec_egm_torch(); }
void run_data_fetch(const DataFetchArgs&) { exec_egm_torch(); }
void run_data_verify(const std::string&) { exec_egm_torch(); }
void run_data_path() { exec_egm_torch(); }
void run_sweep(SweepOptions) { exec_egm_torch(); }

}  // namespace egm::cli
