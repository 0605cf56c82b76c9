// egm data: where the corpus is, fetching it with a checksum, verifying it.
#include <cstdio>

#include "cli/commands.h"
#include "data/corpus.h"
#include "data/corpus_source.h"
#include "util/error.h"
#include "util/files.h"

namespace egm::cli {

void register_data_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("data", "the TinyShakespeare corpus: fetch, verify, path");
  cmd->require_subcommand(1);

  auto* fetch = cmd->add_subcommand("fetch", "download TinyShakespeare into the cache and check its sha256");
  auto dest = std::make_shared<std::string>();
  auto url = std::make_shared<std::string>(kTinyShakespeareUrl);
  auto force = std::make_shared<bool>(false);
  fetch->add_option("--dest", *dest, "where to write it (default: $EGM_CACHE_DIR/tinyshakespeare/input.txt, data/ by default)");
  fetch->add_option("--url", *url, "download from here instead")->capture_default_str();
  fetch->add_flag("--force", *force, "download again even if a verified copy exists");
  fetch->callback([=] {
    const std::string path = dest->empty() ? default_corpus_path() : *dest;
    if (!*force && file_exists(path)) {
      verify_corpus(path);
      std::printf("%s is present and verified (sha256 %s)\n", path.c_str(), kTinyShakespeareSha256);
      return;
    }
    std::printf("downloading %s\n", url->c_str());
    fetch_corpus(path, *url);
    std::printf("wrote %s (sha256 verified)\n", path.c_str());
  });

  auto* verify = cmd->add_subcommand("verify", "check a corpus file against TinyShakespeare's sha256");
  auto vpath = std::make_shared<std::string>();
  verify->add_option("path", *vpath, "file (default: --data/EGM_DATA/cache resolution)");
  verify->callback([=] {
    const std::string path = locate_corpus(*vpath);
    verify_corpus(path);
    Corpus c = Corpus::load(path);
    std::printf("%s: ok, %lld characters, vocabulary %lld, sha256 %s\n", path.c_str(),
                static_cast<long long>(c.size()), static_cast<long long>(c.vocab_size()), c.sha256().c_str());
  });

  auto* where = cmd->add_subcommand("path", "print the corpus path egm would use");
  where->callback([] { std::printf("%s\n", locate_corpus("").c_str()); });
}

}  // namespace egm::cli
