// egm bench: its flags (the work: run_bench.cpp, in egm-torch; torch_verbs.h).
#include <memory>
#include <string>

#include "cli/commands.h"
#include "cli/torch_verbs.h"
#include "launch/launch_options.h"

namespace egm::cli {

void register_bench_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("bench", "time training steps: ms/step, tokens/s, MFU, memory");
  auto a = std::make_shared<BenchArgs>();
  add_run_config_flags(cmd, a->flags);
  cmd->add_option("--warmup", a->warmup, "untimed steps first")
      ->capture_default_str()
      ->check(launch::non_negative_count());
  cmd->add_option("--timed-steps", a->timed, "timed steps (the median is reported)")
      ->capture_default_str()
      ->check(launch::positive_count());
  cmd->add_flag("--json", a->json, "one JSON object instead of text");
  cmd->add_option("--profile", a->profile, "after the timed steps, profile one more step per op (Chrome trace JSON)");
  cmd->add_flag("--count-ops", a->count_ops,
                "after the timed steps, count the ATen operators one more step dispatches (a proxy for CUDA kernel "
                "launches)");
  cmd->add_option("--matmul-gflops", a->matmul_gflops,
                  "take this matrix-product rate (GFLOP/s) for MFU instead of measuring it for a second at the end "
                  "(concurrent runs on one GPU: measure it once, alone)")
      ->check(CLI::Validator(
          [](std::string& v) {
            double x = 0;
            return CLI::detail::lexical_cast(v, x) && x > 0 ? std::string()
                                                            : "expected a positive rate in GFLOP/s, got " + v;
          },
          "GFLOP/S"));
  cmd->callback([a] { run_bench(*a); });
}

}  // namespace egm::cli
