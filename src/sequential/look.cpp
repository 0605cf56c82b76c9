// A look of egm sweep --until (look.h): the refusals before a loop, the look
// itself (recorded, rendered, decided), and the spec file of the next launch.
#include "sequential/look.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "analysis/sequences.h"
#include "analysis/sweep_analysis.h"
#include "analysis/sweep_data.h"
#include "db/results_db.h"
#include "db/sqlite.h"
#include "stats/confidence_sequence.h"
#include "util/error.h"
#include "util/files.h"
#include "util/unix_time.h"

namespace egm::sequential {

namespace {

// What a look decided, for people: "stopped: every claim settled", "not settled: seed 5 added; the sweep goes on".
std::string outcome_text(const LookOutcome& o) {
  return o.stop ? "stopped: " + o.why : "not settled: " + o.why + "; the sweep goes on";
}

}  // namespace

std::vector<uint64_t> seeds_so_far(const std::string& db_path, const spec::ExperimentSpec& spec) {
  std::error_code ec;
  // No database yet: the sequence starts from the spec's own seeds.
  if (!std::filesystem::exists(db_path, ec)) return spec.seeds;
  db::ResultsDb db(db_path, db::OpenMode::read_only);
  const std::optional<db::SweepRow> sweep = db.find_sweep(spec.name);
  if (!sweep) return spec.seeds;
  const std::vector<uint64_t> seeds = spec::read_stored_spec(sweep->spec_json).seeds;
  // An earlier --until of this spec: it starts from where that one stopped.
  for (uint64_t s : spec.seeds)
    if (std::find(seeds.begin(), seeds.end(), s) == seeds.end()) return spec.seeds;
  return seeds;
}

std::optional<SequenceStart> sequence_start(const std::string& db_path, const std::string& sweep_name) {
  std::error_code ec;
  if (!std::filesystem::exists(db_path, ec)) return std::nullopt;
  db::ResultsDb db(db_path, db::OpenMode::read_only);
  const std::optional<db::SweepRow> sweep = db.find_sweep(sweep_name);
  if (!sweep) return std::nullopt;
  // The params each look records: "alpha=... prior_sd=1 adjustment=bonferroni
  // family_alpha=0.05 half_width=0[ new_sequence=1]" (look_and_decide).
  auto field = [](const std::string& params, const std::string& name) -> std::optional<double> {
    const std::string key = " " + name + "=";
    const size_t at = (" " + params).find(key);
    if (at == std::string::npos) return std::nullopt;
    // at indexes " " + params, one character ahead of params itself: hence the - 1.
    const char* begin = params.c_str() + at + key.size() - 1;
    char* end = nullptr;
    const double v = std::strtod(begin, &end);
    return end == begin ? std::nullopt : std::optional<double>(v);
  };
  std::optional<SequenceStart> start;
  for (const db::LookRow& l : db.list_looks(sweep->id)) {
    const bool restart = field(l.params, "new_sequence").value_or(0) == 1;
    // The latest look that began a sequence wins: a --new-sequence look starts the count again.
    if (start && !restart) continue;
    const std::optional<double> alpha = field(l.params, "family_alpha");
    if (!alpha) continue;  // "no paired contrasts yet": no parameters recorded
    start = SequenceStart{l.look, *alpha, field(l.params, "half_width").value_or(0)};
  }
  return start;
}

void require_same_sequence(const UntilOptions& o, const std::string& db_path, const std::string& sweep_name) {
  if (o.new_sequence) return;
  const std::optional<SequenceStart> start = sequence_start(db_path, sweep_name);
  if (!start) return;
  const double half_width = o.half_width.value_or(0);
  // Exact comparison: the looks recorded alpha in fmt's shortest round-trip form, so the same flag value reads back equal.
  EGM_REQUIRE(start->alpha == o.alpha && start->half_width == half_width, ConfigError,
              "sweep {}: its sequence began at look {} with --alpha {:g} --half-width {:g}; this command asks for "
              "--alpha {:g} --half-width {:g}, which would re-judge the earlier looks; pass the first values, or "
              "--new-sequence to start a sequence of its own (recorded; the earlier looks' guarantee does not carry "
              "over); nothing written",
              sweep_name, start->look, start->alpha, start->half_width, o.alpha, half_width);
}

void require_budget(const UntilOptions& o, const std::vector<uint64_t>& seeds,
                    const spec::ExperimentSpec& spec, const std::string& db_path) {
  EGM_REQUIRE(o.max_seeds >= static_cast<int64_t>(seeds.size()), ConfigError,
              "--max-seeds {} is below the {} seeds sweep {} has already run in {}; pass --max-seeds {} or more to "
              "go on",
              o.max_seeds, seeds.size(), spec.name, db_path, seeds.size());
  // A budget no claim can settle within is refused: the sequence at alpha / m
  // (Bonferroni over the m claims the analysis forms) is the whole line until
  // t_mixture_first_bounded seeds, whatever the data.
  const size_t family = claim_family(spec).size();
  stats::TMixtureOptions t;
  t.alpha = stats::per_claim_alpha(o.alpha, std::max<size_t>(family, 1), stats::Adjustment::bonferroni);
  const auto first = static_cast<int64_t>(stats::t_mixture_first_bounded(t));
  EGM_REQUIRE(o.max_seeds >= first, ConfigError,
              "--max-seeds {}: no claim can settle before {} seeds (each of the {} claims' sequences is at alpha {:g} "
              "and unbounded until then, whatever the data); pass --max-seeds {} or more, or a larger --alpha",
              o.max_seeds, first, family, t.alpha, first);
  // Seeds are added after the largest; the last the budget could add must still be a seed a spec may hold.
  const uint64_t largest = seeds.empty() ? 0 : *std::max_element(seeds.begin(), seeds.end());
  // Not negative: the first check of this function made max_seeds >= seeds.size().
  const auto more = static_cast<uint64_t>(o.max_seeds - static_cast<int64_t>(seeds.size()));
  EGM_REQUIRE(largest <= kMaxSeedValue - more, ConfigError,
              "--max-seeds {}: sweep {} would add seeds up to {} + {}, past the largest seed a spec may hold ({}); "
              "start from smaller seeds",
              o.max_seeds, spec.name, largest, more, kMaxSeedValue);
}

LookOutcome look_and_decide(const UntilOptions& o, const std::vector<std::string>& claims, const std::string& db_path,
                            const spec::ExperimentSpec& spec, std::ostream& printed) {
  // Read-write: the look is recorded in the sweep's own database, beside its cells.
  db::ResultsDb db(db_path, db::OpenMode::read_write);
  const analysis::SweepData data = analysis::load_sweep(db, spec.name, /*with_params=*/false);
  const analysis::SweepAnalysis a = analysis::analyze_sweep(data, {});
  analysis::SequenceOptions so;
  so.alpha = o.alpha;
  so.half_width = o.half_width.value_or(0);
  const std::vector<analysis::ClaimSequence> sequences = analysis::claim_sequences(a, data.spec.seeds, so);

  const std::vector<uint64_t>& seeds = data.spec.seeds;
  const int64_t have = static_cast<int64_t>(seeds.size());
  LookOutcome out;
  bool all_settled = true;
  struct Row {
    const analysis::ClaimSequence* seq;
    std::string claim;
  };
  std::vector<Row> rows;
  for (const std::string& c : claims) {
    const analysis::ClaimSequence* seq = nullptr;
    for (const auto& s : sequences)
      if (s.claim == c) seq = &s;
    rows.push_back({seq, c});
    // A claim with no sequence yet (no paired seeds) is not settled.
    all_settled = all_settled && seq && seq->settled_at;
  }
  if (all_settled) {
    out.stop = true;
    out.why = "every claim settled";
  } else if (have >= o.max_seeds) {
    out.stop = true;
    out.why = fmt::format("--max-seeds {} reached", o.max_seeds);
  } else {
    // New seeds follow the largest so far, so they never repeat one, whatever order the spec listed.
    uint64_t next = seeds.empty() ? 0 : *std::max_element(seeds.begin(), seeds.end()) + 1;
    const int64_t add = std::min(o.batch, o.max_seeds - have);
    std::vector<uint64_t> added;
    for (int64_t i = 0; i < add; ++i) added.push_back(next++);
    out.next_seeds = seeds;
    out.next_seeds.insert(out.next_seeds.end(), added.begin(), added.end());
    out.added = added.size() == 1 ? fmt::format("seed {}", added[0])
                                  : fmt::format("seeds {}-{}", added.front(), added.back());
    out.why = out.added + " added";
  }
  const std::string next = out.stop ? "stopped: " + out.why : out.why;

  // The look, recorded whole (one transaction), then printed.
  const db::SweepRow sweep = *db.find_sweep(spec.name);
  // Immediate: the check whether the last look stands and the new look's insert cannot interleave with another writer.
  db::Transaction t(db.connection(), db::Transaction::Kind::immediate);
  // The last look stands when nothing ran since it (no cell of the sweep
  // changed after it) and it judged the same claims: a rerun of a finished
  // sequence, or one killed between a look and its launch, records no second
  // look over the same data; where the decision now differs (a larger
  // budget), the last look's `next` says so instead.
  const std::vector<db::LookRow> last = db.last_look(sweep.id);
  const int64_t look = last.empty() ? 1 : last.front().look + 1;
  double changed = 0;  // the sweep's last cell update
  for (const auto& c : data.cells) changed = std::max(changed, c.row.updated_at);
  std::vector<std::string> judged, wanted = claims;
  for (const db::LookRow& l : last) judged.push_back(l.claim);
  std::sort(judged.begin(), judged.end());
  std::sort(wanted.begin(), wanted.end());
  const bool stands = !last.empty() && !o.new_sequence && judged == wanted &&
                      std::all_of(last.begin(), last.end(), [&](const db::LookRow& l) { return l.time >= changed; });
  if (stands) {
    if (last.front().next != next) db.set_look_next(sweep.id, last.front().look, next);
    t.commit();
    printed << fmt::format("egm sweep --until: look {} stands (nothing ran since it): {}\n", last.front().look,
                           outcome_text(out))
            << std::flush;
    return out;
  }
  const double now = unix_now();
  std::string text = fmt::format("egm sweep --until: look {} after {} seed{} (alpha {:g}, {} over {} claim{}):\n",
                                 look, have, have == 1 ? "" : "s", o.alpha, stats::adjustment_name(so.adjustment),
                                 sequences.size(), sequences.size() == 1 ? "" : "s");
  std::vector<db::LookRow> recorded;
  for (const Row& r : rows) {
    const stats::SequenceLook* l = r.seq && !r.seq->looks.empty() ? &r.seq->looks.back() : nullptr;
    const std::string decision = r.seq ? stats::decision_name(r.seq->decision) : "undecided";
    const bool settled = r.seq && r.seq->settled_at;
    const std::string params =
        // The format sequence_start parses back: keep the two in step.
        r.seq ? fmt::format("{} adjustment={} family_alpha={} half_width={}{}", stats::t_mixture_params(r.seq->options),
                            stats::adjustment_name(so.adjustment), so.alpha, so.half_width,
                            o.new_sequence ? " new_sequence=1" : "")
              : std::string("no paired contrasts yet");
    // An unbounded side (+-inf) or a missing look is stored as NULL.
    auto real = [&](double x) { return l && std::isfinite(x) ? std::optional<double>(x) : std::nullopt; };
    recorded.push_back({look, r.claim, static_cast<int64_t>(l ? l->n : 0), real(l ? l->estimate : NAN),
                        real(l ? l->lower : NAN), real(l ? l->upper : NAN), real(l ? l->p_anytime : NAN), decision,
                        settled, next, now, std::string(stats::t_mixture_method_name()), params});
    text += "  " + look_line(recorded.back()) + "\n";
  }
  db.record_look(sweep.id, recorded);
  t.commit();
  text += "  " + outcome_text(out) + "\n";
  printed << text << std::flush;
  return out;
}

std::string look_line(const db::LookRow& l) {
  auto bound = [](const std::optional<double>& v, const char* none) {
    return v ? fmt::format("{:+.4f}", *v) : std::string(none);
  };
  return fmt::format("look {}: {} after {} seeds {} [{}, {}] {}{}", l.look, l.claim, l.seeds, bound(l.estimate, "-"),
                     bound(l.lower, "-inf"), bound(l.upper, "+inf"), l.decision,
                     l.settled ? ", settled" : ", not settled");
}

// For a stop between a look and its launch: the look's `next` then says why no launch followed.
void amend_last_look(const std::string& db_path, const std::string& sweep_name, const std::string& next) {
  db::ResultsDb db(db_path, db::OpenMode::read_write);
  const std::optional<db::SweepRow> sweep = db.find_sweep(sweep_name);
  if (!sweep) return;
  const std::vector<db::LookRow> last = db.last_look(sweep->id);
  if (!last.empty()) db.set_look_next(sweep->id, last.front().look, next);
}

std::string write_spec_with_seeds(const spec::ExperimentSpec& spec, const std::vector<uint64_t>& seeds,
                                  const std::string& db_path) {
  const std::filesystem::path dir = std::filesystem::path(db_path).parent_path();
  // Beside the database, named after the sweep: the next launch reads its seeds from it.
  const std::string path = (dir.empty() ? std::filesystem::path(".") : dir) / (spec.name + ".until.json");
  atomic_write_file(path, spec::spec_file_json(spec::with_seeds(spec, seeds)).dump(2) + "\n");
  return path;
}

}  // namespace egm::sequential
