// egm sweep: its flags (the work: run_sweep.cpp, in egm-torch; torch_verbs.h).
#include <memory>

#include "cli/commands.h"
#include "cli/torch_verbs.h"

namespace egm::cli {

void register_sweep_command(CLI::App& app) {
  auto o = std::make_shared<SweepOptions>();
  auto* cmd = app.add_subcommand("sweep", "train every cell of a spec: 1 coordinator + N workers under mpirun");
  launch::add_launch_flags(*cmd, o->launch);  // spec, --db, --device, ...: launch/launch_options.h
  cmd->add_option("--workers", o->workers,
                  "worker processes (default: min(cores, cells); under --device cuda min(GPUs x runs_per_gpu, "
                  "cells); at least the largest data_parallel)")
      ->check(launch::positive_count());
  cmd->add_option("--data", o->data, "corpus file (default: $EGM_DATA, else data/tinyshakespeare/input.txt)");
  cmd->add_flag("--print-command", o->print_command, "print the mpirun command instead of running it");
  cmd->add_option("--max-cells", o->max_cells, "refuse a spec of more cells than this (variants x seeds x grid points)")
      ->capture_default_str()
      ->check(launch::positive_count());
  cmd->add_flag("--dry-run", o->dry_run,
                "list the cells with the memory and compute each run needs and whether this launch would train it, "
                "link it to a finished run of its identity (reuse) or find it done; train nothing, write nothing");
  // Sequential sweeps (src/sequential): seeds in batches until the claims are settled.
  sequential::add_until_flags(*cmd, o->until);
  cmd->add_option("--mpirun", o->mpirun, "the MPI launcher")->capture_default_str();
  cmd->add_option("--mpirun-args", o->mpirun_args, "extra launcher arguments, e.g. \"--mca btl self,vader\"");
  cmd->add_option("--view", o->view, "live view: auto, tty (redraw in place), plain (a status line every 10 s), none")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "tty", "plain", "none"}));
  cmd->footer(
      "With --until (or the spec's \"until\" field; the flags override its fields), the sweep is launched again "
      "with the next seeds (--extend) after each look, and every look is stored in the database (looks); it stops "
      "when every claim is settled or --max-seeds is reached. "
      "Exit status: 0 every cell done; 1 some cell failed for good; 2 error (bad spec: nothing ran); 75 interrupted "
      "by SIGUSR2/SIGTERM/SIGINT after checkpointing: run the same command again to resume. Running a finished or "
      "interrupted spec again skips done cells and resumes the rest.");
  cmd->callback([o] { run_sweep(*o); });  // a copy: run_sweep resolves the device into it
}

}  // namespace egm::cli
