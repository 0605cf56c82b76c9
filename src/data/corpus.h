// A character-level corpus: vocabulary = sorted set of the bytes that occur
// (65 for TinyShakespeare), first 90% of the text for training, the rest for
// validation (SPEC.md section 3).
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>
#include <vector>

namespace egm {

enum class Split { train, val };
const char* split_name(Split split);

class Corpus {
 public:
  // Loads `path`; throws IoError naming the path (and how to get the corpus)
  // when it is missing or empty.
  static Corpus load(const std::string& path, double train_fraction = 0.9);
  // From text in memory (tests).
  static Corpus from_text(const std::string& text, double train_fraction = 0.9);

  int64_t vocab_size() const { return static_cast<int64_t>(vocab_.size()); }
  const std::string& vocab() const { return vocab_; }
  const std::string& path() const { return path_; }
  const std::string& sha256() const { return sha256_; }
  int64_t size() const { return train_.numel() + val_.numel(); }

  // Token ids of a split, as a 1-D int64 tensor on the CPU.
  const at::Tensor& tokens(Split split) const { return split == Split::train ? train_ : val_; }

  std::vector<int64_t> encode(const std::string& text) const;
  std::string decode(const std::vector<int64_t>& ids) const;

 private:
  std::string path_;
  std::string sha256_;
  std::string vocab_;
  int16_t index_of_[256] = {};
  at::Tensor train_, val_;
};

// The corpus a run folder was trained on: RUN_DIR/corpus.json ({"sha256",
// "bytes", "path"}), written by `egm train` and by a sweep's worker before the
// run starts. A folder that records another corpus than `corpus` is refused
// (ConfigError, one line with both paths and hashes): resuming its checkpoint
// on other text would mix two data sets in one run. Otherwise the record is
// (re)written. A folder without one (older egm) is accepted and gets one.
void check_run_corpus(const std::string& out_dir, const Corpus& corpus);

}  // namespace egm
