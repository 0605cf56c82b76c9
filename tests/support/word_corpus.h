// A small synthetic corpus with structure to learn and no file behind it: 20,000
// words from a 9-word list, drawn by a 64-bit LCG from `seed`.
#pragma once

#include <cstdint>
#include <string>

#include "data/corpus.h"

namespace egm::test {

inline egm::Corpus word_corpus(uint64_t seed) {
  std::string text;
  const char* words[] = {"the ", "king ", "and ", "queen ", "of ", "rome ", "speak ", "now. ", "\n"};
  uint64_t x = seed;
  for (int i = 0; i < 20000; ++i) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    text += words[(x >> 33) % 9];
  }
  return egm::Corpus::from_text(text);
}

}  // namespace egm::test
