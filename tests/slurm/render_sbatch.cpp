// egm_render_sbatch: renders the sweep batch script from name=value arguments
// and/or a params file (one name=value per line, # comments), for the scripted
// Slurm tests and for regenerating golden/egm-sweep.sbatch. Test tool only;
// users get the same rendering through `egm submit`.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>

#include "slurm/batch_script.h"
#include "util/error.h"

namespace {

void add_assignment(egm::slurm::BatchParams& params, const std::string& text) {
  auto eq = text.find('=');
  EGM_REQUIRE(eq != std::string::npos && eq > 0, ConfigError, "expected name=value, got '{}'", text);
  params[text.substr(0, eq)] = text.substr(eq + 1);
}

}  // namespace

int main(int argc, char** argv) {
  try {
    egm::slurm::BatchParams params;
    for (int i = 1; i < argc; ++i) {
      std::string arg = argv[i];
      if (arg == "--params-file" && i + 1 < argc) {
        std::ifstream in(argv[++i]);
        EGM_REQUIRE(in, IoError, "cannot read {}", argv[i]);
        for (std::string line; std::getline(in, line);)
          if (!line.empty() && line[0] != '#') add_assignment(params, line);
      } else {
        add_assignment(params, arg);
      }
    }
    std::cout << egm::slurm::render_batch_script(params);
    return 0;
  } catch (const egm::Error& e) {
    std::cerr << "egm_render_sbatch: " << e.what() << "\n";
    return 2;
  }
}
