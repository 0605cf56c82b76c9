// A corpus loaded from a file: its byte vocabulary, the 90/10 split, encode and
// decode, and the check that a resumed run reads the corpus it began with.
#include "data/corpus.h"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "util/error.h"
#include "util/files.h"
#include "util/sha256.h"

namespace egm {

const char* split_name(Split split) { return split == Split::train ? "train" : "val"; }

Corpus Corpus::load(const std::string& path, double train_fraction) {
  // Checked first so the message can say how to get the corpus, not just that a read failed.
  EGM_REQUIRE(file_exists(path), IoError,
              "corpus not found at {}; run `egm data fetch` to download TinyShakespeare, "
              "or pass --data PATH / set EGM_DATA",
              path);
  Corpus c = from_text(read_file(path), train_fraction);
  c.path_ = path;
  return c;
}

Corpus Corpus::from_text(const std::string& text, double train_fraction) {
  EGM_REQUIRE(!text.empty(), IoError, "the corpus is empty");
  EGM_REQUIRE(train_fraction > 0.0 && train_fraction < 1.0, ConfigError,
              "train fraction must be in (0, 1), got {}", train_fraction);
  Corpus c;
  // The hash of the bytes: what sweeps and run folders record to refuse a resume on other data.
  c.sha256_ = sha256_hex(text);
  // A byte-level vocabulary: every byte value the text holds, in byte order, so the same text gives the same ids.
  bool seen[256] = {};
  for (unsigned char ch : text) seen[ch] = true;
  for (int b = 0; b < 256; ++b) {
    c.index_of_[b] = -1;
    if (seen[b]) {
      c.index_of_[b] = static_cast<int16_t>(c.vocab_.size());
      c.vocab_.push_back(static_cast<char>(b));
    }
  }
  const int64_t n = static_cast<int64_t>(text.size());
  torch::Tensor ids = torch::empty({n}, torch::kInt64);
  int64_t* out = ids.data_ptr<int64_t>();
  for (int64_t i = 0; i < n; ++i) out[i] = c.index_of_[static_cast<unsigned char>(text[i])];
  // The first train_fraction of the text trains, the rest validates: a contiguous split, no shuffling.
  const int64_t n_train = static_cast<int64_t>(std::floor(train_fraction * static_cast<double>(n)));
  // clone: each split owns its memory, so the full ids tensor is freed here.
  c.train_ = ids.slice(0, 0, n_train).clone();
  c.val_ = ids.slice(0, n_train, n).clone();
  return c;
}

std::vector<int64_t> Corpus::encode(const std::string& text) const {
  std::vector<int64_t> ids;
  ids.reserve(text.size());
  for (unsigned char ch : text) {
    int16_t id = index_of_[ch];
    // A prompt may hold a byte the corpus never had: the model has no token for it.
    EGM_REQUIRE(id >= 0, ConfigError, "character {:?} is not in the corpus vocabulary", static_cast<char>(ch));
    ids.push_back(id);
  }
  return ids;
}

std::string Corpus::decode(const std::vector<int64_t>& ids) const {
  std::string s;
  s.reserve(ids.size());
  for (int64_t id : ids) {
    EGM_CHECK(id >= 0 && id < vocab_size(), "token id {} out of range", id);
    s.push_back(vocab_[static_cast<size_t>(id)]);
  }
  return s;
}

// corpus.json in the run folder records the corpus the run began with; a resume must read the same bytes.
void check_run_corpus(const std::string& out_dir, const Corpus& corpus) {
  const std::string record = (std::filesystem::path(out_dir) / "corpus.json").string();
  if (file_exists(record)) {
    std::string sha, path;
    try {
      const nlohmann::json j = nlohmann::json::parse(read_file(record));
      sha = j.at("sha256").get<std::string>();
      path = j.value("path", std::string("?"));
    } catch (const std::exception&) {
      sha.clear();  // unreadable: written again below
    }
    EGM_REQUIRE(sha.empty() || sha == corpus.sha256(), ConfigError,
                "run folder {} was trained on {} (sha256 {}), but this run reads {} (sha256 {}); refused: pass --data "
                "{} to resume it, or another --out",
                out_dir, path, sha, corpus.path(), corpus.sha256(), path);
  }
  nlohmann::json j;
  j["sha256"] = corpus.sha256();
  j["bytes"] = corpus.size();
  j["path"] = corpus.path();
  // Written on every start (atomically: a crash leaves the old file or the new one), so the path stays current.
  atomic_write_file(record, j.dump(2) + "\n");
}

}  // namespace egm
