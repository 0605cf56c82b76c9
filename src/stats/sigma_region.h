// The paper's four scale regions for a learned MoPE width sigma (in
// characters): character [1, 6), word [6, 20), clause [20, 55), sentence
// >= 55, plus "below 1" for widths under one character.
#pragma once

namespace egm::stats {

enum class SigmaRegion { below_one, character, word, clause, sentence };

// Throws ConfigError for a non-finite or non-positive sigma.
SigmaRegion sigma_region(double sigma);
const char* sigma_region_name(SigmaRegion region);  // "below_1", "character", ...

}  // namespace egm::stats
