// The sweep batch script: one function renders slurm/egm-sweep.sbatch.tmpl
// (embedded at build time) from named parameters. #SBATCH lines come out
// sorted and every value shell-quoted; unknown parameters are refused with the
// list of valid ones, so a typo never silently drops a resource request.
// slurm/README.md documents the parameters and the requeue protocol.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace egm::slurm {

// Exit status of the coordinator for "interrupted and checkpointed, requeue
// me": EX_TEMPFAIL from sysexits.h. The batch script requeues on it.
inline constexpr int kRequeueExitCode = 75;
// The time-limit warning signal (--signal=B:USR2@warning_seconds). Not USR1:
// NCCL may use it.
inline constexpr const char* kWarningSignal = "USR2";

// Parameter name -> value, e.g. {"workers", "4"}, {"time", "1-00:00:00"}.
using BatchParams = std::map<std::string, std::string>;

struct BatchParamInfo {
  std::string name;
  bool required = false;
  std::string default_value;  // used when the parameter is absent; empty: no default
  std::string help;
};

// Every parameter render_batch_script accepts, sorted by name.
const std::vector<BatchParamInfo>& batch_parameters();

// Renders the batch script. Throws ConfigError for an unknown parameter (with
// the valid names), a missing required one, or a malformed value.
std::string render_batch_script(const BatchParams& params);

// The raw template text, as embedded at build time.
std::string_view batch_script_template();

// A Slurm time limit in seconds: "M", "M:S", "H:M:S", "D-H", "D-H:M" or
// "D-H:M:S" (sbatch --time). Throws ConfigError for anything else.
std::int64_t parse_slurm_time_seconds(std::string_view time);

// The job id in sbatch's output ("Submitted batch job 123", possibly after
// warning lines, or "123[;cluster]" from --parsable). Throws egm::Error quoting
// the output when there is none.
std::uint64_t parse_sbatch_job_id(std::string_view sbatch_output);

}  // namespace egm::slurm
