// egm data: its flags (the work: run_data.cpp, in egm-torch; torch_verbs.h).
#include <memory>

#include "cli/commands.h"
#include "cli/torch_verbs.h"
#include "data/corpus_source.h"

namespace egm::cli {

void register_data_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("data", "the TinyShakespeare corpus: fetch, verify, path");
  cmd->require_subcommand(1);

  auto* fetch = cmd->add_subcommand("fetch", "download TinyShakespeare into the cache and check its sha256");
  auto a = std::make_shared<DataFetchArgs>();
  a->url = kTinyShakespeareUrl;
  fetch->add_option("--dest", a->dest, "where to write it (default: $EGM_CACHE_DIR/tinyshakespeare/input.txt, data/ by default)");
  fetch->add_option("--url", a->url, "download from here instead")->capture_default_str();
  fetch->add_flag("--force", a->force, "download again even if a verified copy exists");
  fetch->callback([a] { run_data_fetch(*a); });

  auto* verify = cmd->add_subcommand("verify", "check a corpus file against TinyShakespeare's sha256");
  auto vpath = std::make_shared<std::string>();
  verify->add_option("path", *vpath, "file (default: --data/EGM_DATA/cache resolution)");
  verify->callback([vpath] { run_data_verify(*vpath); });

  auto* where = cmd->add_subcommand("path", "print the corpus path egm would use (exit 2 when the file is missing)");
  where->callback([] { run_data_path(); });
}

}  // namespace egm::cli
