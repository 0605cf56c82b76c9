// The numerics version (config/run_config.h, kNumericsVersion) against the
// losses it stands for: a few tiny CPU runs' final and full validation losses,
// bit for bit, pinned per version. egm sweep reuses a finished run for a cell
// whose identity matches (db/reuse.h), and the numerics version is the part of
// that identity which says "training still computes what it computed": a
// change that moves a seeded loss fails here until the version is raised (with
// the reason in its commit) and the new losses are pinned below.
//
// One thread, the tiny preset on a synthetic corpus: seconds. The pins hold on
// the machines egm is tested on (OpenBLAS's kernel chosen by
// scripts/blas_env.sh); a CPU whose BLAS kernels round differently moves them
// too, and this test says so rather than guessing.
#include <gtest/gtest.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <map>
#include <string>
#include <vector>

#include "config/run_config.h"
#include "train/trainer.h"
#include "word_corpus.h"

namespace {

const egm::Corpus& corpus() {
  static const egm::Corpus c = egm::test::word_corpus(12345);
  return c;
}

struct Pinned {
  std::string variant;
  std::string final_val;  // hexadecimal floating point ("%a"): the exact double
  std::string full_val;
};

// The pinned losses of each numerics version. Raising kNumericsVersion adds a
// row here (the failure message prints the values this build computes).
const std::map<int64_t, std::vector<Pinned>>& pins() {
  static const std::map<int64_t, std::vector<Pinned>> p = {
      {1,
       {
           {"base", "0x1.368568p+1", "0x1.370a954311f2cp+1"},
           {"ega_mope", "0x1.411322p+1", "0x1.419909cee0d3ap+1"},
           {"ega_causal_mope", "0x1.413682p+1", "0x1.41ba318cc0b56p+1"},
       }},
  };
  return p;
}

egm::RunOutcome train(const std::string& variant) {
  egm::RunConfig c = egm::preset_config("tiny");
  c.model.variant = variant;
  c.model.vocab_size = corpus().vocab_size();
  c.train.seed = 11;
  c.train.max_steps = 20;
  c.train.eval_interval = 10;
  c.train.eval_batches = 2;
  c.train.ar_eval_windows = 2;
  egm::RuntimeOptions r;
  r.threads = 1;
  egm::MemorySink sink;
  return egm::Trainer(c, r, corpus(), sink).run();
}

std::string hex(const std::optional<double>& v) { return v ? fmt::format("{:a}", *v) : "none"; }

TEST(NumericsVersion, PinsTheBitwiseLossesOfTinyCpuRuns) {
  const auto found = pins().find(egm::kNumericsVersion);
  std::string computed;
  std::vector<std::string> moved;
  const std::vector<Pinned>* pinned = found == pins().end() ? nullptr : &found->second;
  for (const std::string variant : {"base", "ega_mope", "ega_causal_mope"}) {
    const egm::RunOutcome r = train(variant);
    ASSERT_EQ(r.status, egm::Outcome::done) << variant;
    const Pinned now{variant, hex(r.measured.final_val), hex(r.measured.full_val)};
    computed += fmt::format("           {{\"{}\", \"{}\", \"{}\"}},\n", now.variant, now.final_val, now.full_val);
    if (!pinned) continue;
    for (const Pinned& p : *pinned)
      if (p.variant == variant && (p.final_val != now.final_val || p.full_val != now.full_val))
        moved.push_back(fmt::format("{}: final {} (pinned {}), full {} (pinned {})", variant, now.final_val,
                                    p.final_val, now.full_val, p.full_val));
  }
  ASSERT_NE(pinned, nullptr) << "numerics version " << egm::kNumericsVersion
                             << " has no pinned losses; pin what this build computes:\n"
                             << computed;
  EXPECT_TRUE(moved.empty()) << "a change moved seeded losses at numerics version " << egm::kNumericsVersion
                             << ":\n  " << fmt::format("{}", fmt::join(moved, "\n  "))
                             << "\nraise egm::kNumericsVersion (config/run_config.h) in the same commit, say why, and "
                                "pin the new losses:\n"
                             << computed;
}

// The same config twice gives the same bits (what the pins rest on), and the
// pins are told apart by the variant: a test that compares nothing cannot pass.
TEST(NumericsVersion, ThePinsAreDistinctPerVariant) {
  const auto found = pins().find(egm::kNumericsVersion);
  ASSERT_NE(found, pins().end());
  for (size_t i = 0; i < found->second.size(); ++i)
    for (size_t j = i + 1; j < found->second.size(); ++j)
      EXPECT_NE(found->second[i].final_val, found->second[j].final_val);
}

}  // namespace
