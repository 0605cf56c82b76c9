// The paper's scale region of a learned MoPE width sigma (character, word,
// clause, sentence, or below one character) and its name.
#include "stats/sigma_region.h"

#include <cmath>

#include "util/error.h"

namespace egm::stats {

SigmaRegion sigma_region(double sigma) {
  EGM_REQUIRE(std::isfinite(sigma) && sigma > 0.0, ConfigError,
              "MoPE sigma must be a finite positive width, got {}", sigma);
  // Half-open regions [lower, upper) in characters, as the paper bins the learned widths (sigma_region.h).
  if (sigma < 1.0) return SigmaRegion::below_one;
  if (sigma < 6.0) return SigmaRegion::character;
  if (sigma < 20.0) return SigmaRegion::word;
  if (sigma < 55.0) return SigmaRegion::clause;
  return SigmaRegion::sentence;
}

const char* sigma_region_name(SigmaRegion region) {
  switch (region) {
    case SigmaRegion::below_one: return "below_1";
    case SigmaRegion::character: return "character";
    case SigmaRegion::word: return "word";
    case SigmaRegion::clause: return "clause";
    case SigmaRegion::sentence: return "sentence";
  }
  return "?";
}

}  // namespace egm::stats
