// The paper's published claims as data: every number of SPEC.md section 4
// (absolute values, deltas quoted without values, the interaction, the MoPE
// claims), read from one JSON file, experiments/paper_claims.json, which is
// embedded in the binary (cmake/EgmEmbed.cmake) and can be replaced with
// `egm paper --claims FILE`. Checked once, at load: an entry with an unknown
// kind or variant, a number that is not a finite JSON number, a missing or
// unknown field is refused in one line naming the entry.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/sweep_data.h"

namespace egm::analysis {

// What a claim says, and so how egm measures it (scorecard.h).
enum class ClaimKind {
  value,          // a variant's val loss; its sign claim is the delta against the reference
  delta,          // reference - variant, quoted without absolute values
  interaction,    // delta(ab) - delta(a) - delta(b) on the claim's factors
  mope_clusters,  // the learned MoPE pairs form `clusters` clusters (gap statistic per run)
  mope_boundary,  // every learned MoPE pair sits on omega * sigma = `boundary`
};
const char* claim_kind_name(ClaimKind kind);  // "value", "delta", ...

struct PaperClaim {
  std::string id;       // unique in the file: "ega", "interaction"
  ClaimKind kind = ClaimKind::value;
  std::string claim;    // what is claimed, in a sentence
  std::string note;     // optional: what a reader must know (the published code's flaws, ...)
  std::string variant;  // value, delta
  std::string reference;  // value, delta: the variant the delta is against
  std::optional<double> value;  // value: the published val; interaction: the published I
  // The published delta (reference - variant): as quoted, or for a value
  // without one the reference's published value minus this value.
  std::optional<double> delta;
  bool delta_quoted = false;   // the paper printed it (false: derived)
  Factors factors;             // interaction
  std::vector<std::string> variants;  // mope_*: the variants whose learned pairs count
  int clusters = 0;            // mope_clusters
  double boundary = 0;         // mope_boundary
  // The variants a sweep must have measured for this claim.
  std::vector<std::string> needs() const;
};

struct PaperClaims {
  std::string source;           // where the numbers were published
  std::string published_scale;  // at what scale
  Metric metric = Metric::final_val;
  std::string reference;        // the default reference of value and delta claims
  std::vector<PaperClaim> claims;  // file order
  std::string origin;           // "embedded experiments/paper_claims.json" or the --claims path
  const PaperClaim* find(const std::string& id) const;
};

// Parses and checks a claims file's text; `origin` names it in messages.
// ConfigError in one line naming the entry ("claims[3] (id 'ega'): ...").
PaperClaims parse_claims(std::string_view text, const std::string& origin);
// The claims embedded in the binary (experiments/paper_claims.json).
const PaperClaims& embedded_claims();
// A --claims FILE (IoError when it cannot be read), or the embedded ones when `path` is empty.
PaperClaims load_claims(const std::string& path);

}  // namespace egm::analysis
