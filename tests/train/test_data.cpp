// The corpus, its splits and the counter-based batch sampler.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <filesystem>
#include <fstream>

#include "data/batch_sampler.h"
#include "data/corpus.h"
#include "data/corpus_source.h"
#include "util/error.h"
#include "util/files.h"

namespace {

TEST(Corpus, VocabularyIsTheSortedSetAndSplitIsNinetyTen) {
  egm::Corpus c = egm::Corpus::from_text("hello world, hello egm!");
  EXPECT_EQ(c.vocab(), std::string(" !,deghlmorw"));
  EXPECT_EQ(c.tokens(egm::Split::train).numel() + c.tokens(egm::Split::val).numel(), 23);
  EXPECT_EQ(c.tokens(egm::Split::train).numel(), 20);  // floor(0.9 * 23)
  EXPECT_EQ(c.decode(c.encode("hello")), "hello");
  EXPECT_THROW(c.encode("xyz"), egm::ConfigError);
}

TEST(Corpus, TinyShakespeareHasThePaperStatistics) {
  std::string path = egm::locate_corpus("");
  if (!egm::file_exists(path)) GTEST_SKIP() << "no corpus at " << path << " (set EGM_DATA)";
  egm::Corpus c = egm::Corpus::load(path);
  EXPECT_EQ(c.size(), 1115394);    // SPEC.md section 3
  EXPECT_EQ(c.vocab_size(), 65);
  EXPECT_EQ(c.sha256(), egm::kTinyShakespeareSha256);
  EXPECT_NO_THROW(egm::verify_corpus(path));
}

TEST(CorpusSource, MissingFileAndBadChecksumAreClearErrors) {
  try {
    egm::Corpus::load("/nonexistent/input.txt");
    FAIL();
  } catch (const egm::IoError& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("/nonexistent/input.txt"), std::string::npos);
    EXPECT_NE(m.find("egm data fetch"), std::string::npos);
  }
  std::string path = (std::filesystem::temp_directory_path() / "egm_not_shakespeare.txt").string();
  std::ofstream(path) << "not the corpus";
  EXPECT_THROW(egm::verify_corpus(path), egm::IoError);
  std::filesystem::remove(path);
}

TEST(BatchSampler, DeterministicInTheSeedAndStep) {
  egm::Corpus c = egm::Corpus::from_text(std::string(5000, 'a') + std::string(5000, 'b') + "abcdefgh");
  egm::BatchSampler s1(c, 16, 42), s2(c, 16, 42), s3(c, 16, 43);
  EXPECT_TRUE(torch::equal(s1.train_batch(5, 8).x, s2.train_batch(5, 8).x));
  EXPECT_FALSE(torch::equal(s1.train_batch(5, 8).x, s1.train_batch(6, 8).x));
  EXPECT_FALSE(torch::equal(s1.train_batch(5, 8).x, s3.train_batch(5, 8).x));
  egm::Batch b = s1.train_batch(5, 8);
  EXPECT_TRUE(torch::equal(b.x.narrow(1, 1, 15), b.y.narrow(1, 0, 15)));  // targets are inputs shifted by one
}

TEST(BatchSampler, RankSlicesTileTheGlobalBatch) {
  egm::Corpus c = egm::Corpus::from_text(std::string("abcdefghijklmnopqrstuvwxyz").append(4000, 'q'));
  egm::BatchSampler s(c, 8, 9);
  egm::Batch global = s.train_batch(3, 12);
  egm::Batch a = s.train_batch(3, 12, 0, 6), b = s.train_batch(3, 12, 6, 6);
  EXPECT_TRUE(torch::equal(torch::cat({a.x, b.x}), global.x));
  EXPECT_TRUE(torch::equal(torch::cat({a.y, b.y}), global.y));
}

TEST(BatchSampler, NonOverlappingWindowsCoverTheSplitInOrder) {
  egm::Corpus c = egm::Corpus::from_text(std::string(900, 'x') + "0123456789" + std::string(90, 'y'));
  egm::BatchSampler s(c, 4, 0);
  const auto& val = c.tokens(egm::Split::val);
  EXPECT_EQ(s.num_windows(egm::Split::val), (val.numel() - 1) / 4);
  egm::Batch w = s.windows(egm::Split::val, 2, 3);
  EXPECT_TRUE(torch::equal(w.x[0], val.slice(0, 8, 12)));
  EXPECT_TRUE(torch::equal(w.y[2], val.slice(0, 17, 21)));
}

TEST(BatchSampler, SplitShorterThanAWindowIsRefused) {
  egm::Corpus c = egm::Corpus::from_text(std::string(100, 'a') + "b");
  EXPECT_THROW(egm::BatchSampler(c, 64, 0), egm::ConfigError);
}

}  // namespace
