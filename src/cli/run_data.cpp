// egm data's work (egm-torch): where the corpus is, fetching it with a
// checksum, verifying it. Its flags: cmd_data.cpp.
#include <cstdio>
#include <cstdlib>

#include "cli/torch_verbs.h"
#include "data/corpus.h"
#include "data/corpus_source.h"
#include "util/error.h"
#include "util/files.h"

namespace egm::cli {

void run_data_fetch(const DataFetchArgs& a) {
  const std::string path = a.dest.empty() ? default_corpus_path() : a.dest;
  if (!a.force && file_exists(path)) {
    verify_corpus(path);
    std::printf("%s is present and verified (sha256 %s)\n", path.c_str(), kTinyShakespeareSha256);
    return;
  }
  std::printf("downloading %s\n", a.url.c_str());
  fetch_corpus(path, a.url);
  std::printf("wrote %s (sha256 verified)\n", path.c_str());
}

void run_data_verify(const std::string& given) {
  const std::string path = locate_corpus(given);
  verify_corpus(path);
  Corpus c = Corpus::load(path);
  std::printf("%s: ok, %lld characters, vocabulary %lld, sha256 %s\n", path.c_str(),
              static_cast<long long>(c.size()), static_cast<long long>(c.vocab_size()), c.sha256().c_str());
}

// The path, when the file is there; a missing one is one line naming it (exit 2):
// a script that reads the path must not go on with a file that does not exist.
void run_data_path() {
  const std::string path = locate_corpus("");
  EGM_REQUIRE(file_exists(path), IoError, "corpus {} ({}) not found: run `egm data fetch`, or set EGM_DATA to the file",
              path, std::getenv("EGM_DATA") && *std::getenv("EGM_DATA") ? "from EGM_DATA" : "the default: EGM_DATA is not set");
  std::printf("%s\n", path.c_str());
}

}  // namespace egm::cli
