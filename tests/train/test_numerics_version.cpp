// The numerics version (config/run_config.h, kNumericsVersion) against the
// losses it stands for: a few tiny CPU runs' final and full validation losses,
// bit for bit, pinned per version. egm sweep reuses a finished run for a cell
// whose identity matches (db/reuse.h), and the numerics version is the part of
// that identity which says "training still computes what it computed": a
// change that moves a seeded loss fails here until the version is raised (with
// the reason in its commit) and the new losses are pinned below.
//
// One thread, the tiny preset on a synthetic corpus: seconds. The bits also
// depend on the CPU: egm's own target_clones, ATen's dispatch and OpenBLAS's
// kernel (scripts/blas_env.sh) follow the vector set, and MKL, inside
// LibTorch, picks its code path by vendor and model (an AVX-512 machine of
// another vendor or generation moved the losses at the last bit), so the pins
// are kept per CPU class (vendor, family and model, vector set, OpenBLAS
// kernel); on a class nobody has pinned the test is skipped and prints the
// values to pin, rather than failing on hardware, not on a change.
#include <gtest/gtest.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cpuid.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "config/run_config.h"
#include "train/trainer.h"
#include "word_corpus.h"

namespace {

const egm::Corpus& pinned_corpus() {
  static const egm::Corpus c = egm::test::word_corpus(12345);
  return c;
}

struct Pinned {
  std::string variant;
  std::string final_val;  // hexadecimal floating point ("%a"): the exact double
  std::string full_val;
};

// "GenuineIntel 6.143": the vendor and the display family and model from
// CPUID leaf 1 (the extended fields folded in as the SDM says).
std::string cpu_model() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(0, &a, &b, &c, &d)) return "unknown";
  char vendor[13] = {};
  std::memcpy(vendor, &b, 4);
  std::memcpy(vendor + 4, &d, 4);
  std::memcpy(vendor + 8, &c, 4);
  if (!__get_cpuid(1, &a, &b, &c, &d)) return vendor;
  unsigned family = (a >> 8) & 0xf, model = (a >> 4) & 0xf;
  if (family == 0xf) family += (a >> 20) & 0xff;
  if (family == 0x6 || family >= 0xf) model += ((a >> 16) & 0xf) << 4;
  return fmt::format("{} {}.{}", vendor, family, model);
}

// The CPU class the bits depend on: the processor, the widest vector set the
// kernels dispatch to, and the OpenBLAS kernel in use.
std::string cpu_class() {
  const char* blas = std::getenv("OPENBLAS_CORETYPE");
  const char* isa = __builtin_cpu_supports("avx512f") ? "avx512f" : __builtin_cpu_supports("avx2") ? "avx2" : "sse";
  return fmt::format("{}/{}/{}", cpu_model(), isa, blas && *blas ? blas : "openblas-auto");
}

using Key = std::pair<int64_t, std::string>;  // (numerics version, CPU class)

// The pinned losses of each numerics version, per CPU class. Raising
// kNumericsVersion adds rows here (the failure message prints the values this
// build computes); so does pinning a new class of machine.
const std::map<Key, std::vector<Pinned>>& pins() {
  static const std::map<Key, std::vector<Pinned>> p = {
      {{1, "GenuineIntel 6.207/avx512f/SkylakeX"},
       {
           {"base", "0x1.368567p+1", "0x1.370a95522f3b8p+1"},
           {"ega_mope", "0x1.411322p+1", "0x1.419909926bb0ap+1"},
           {"ega_causal_mope", "0x1.413682p+1", "0x1.41ba31412e49bp+1"},
       }},
  };
  return p;
}

egm::RunOutcome train(const std::string& variant) {
  egm::RunConfig c = egm::preset_config("tiny");
  c.model.variant = variant;
  c.model.vocab_size = pinned_corpus().vocab_size();
  c.train.seed = 11;
  c.train.max_steps = 20;
  c.train.eval_interval = 10;
  c.train.eval_batches = 2;
  c.train.ar_eval_windows = 2;
  egm::RuntimeOptions r;
  r.threads = 1;
  egm::MemorySink sink;
  return egm::Trainer(c, r, pinned_corpus(), sink).run();
}

std::string hex(const std::optional<double>& v) { return v ? fmt::format("{:a}", *v) : "none"; }

TEST(NumericsVersion, PinsTheBitwiseLossesOfTinyCpuRuns) {
  const auto found = pins().find({egm::kNumericsVersion, cpu_class()});
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
  if (!pinned) {
    bool version_pinned = false;
    for (const auto& [key, rows] : pins()) version_pinned |= key.first == egm::kNumericsVersion;
    // A version nobody pinned is a change without its pins: fail. A CPU class nobody pinned is hardware: skip.
    ASSERT_TRUE(version_pinned) << "numerics version " << egm::kNumericsVersion
                                << " has no pinned losses; pin what this build computes (CPU class " << cpu_class()
                                << "):\n"
                                << computed;
    GTEST_SKIP() << "no pins for CPU class " << cpu_class() << " at numerics version " << egm::kNumericsVersion
                 << "; to pin this class, add these rows:\n"
                 << computed;
  }
  EXPECT_TRUE(moved.empty()) << "a change moved seeded losses at numerics version " << egm::kNumericsVersion
                             << ":\n  " << fmt::format("{}", fmt::join(moved, "\n  "))
                             << "\nraise egm::kNumericsVersion (config/run_config.h) in the same commit, say why, and "
                                "pin the new losses:\n"
                             << computed;
}

// The pins are told apart by the variant (a table of equal rows would compare
// nothing), and the current version has pins on some class of machine.
TEST(NumericsVersion, ThePinsAreDistinctPerVariant) {
  bool any = false;
  for (const auto& [key, rows] : pins()) {
    any |= key.first == egm::kNumericsVersion;
    for (size_t i = 0; i < rows.size(); ++i)
      for (size_t j = i + 1; j < rows.size(); ++j) EXPECT_NE(rows[i].final_val, rows[j].final_val) << key.second;
  }
  EXPECT_TRUE(any) << "no pins at numerics version " << egm::kNumericsVersion;
}

}  // namespace
