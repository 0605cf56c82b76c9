// Opening a sweep in the database: its cells written, an existing sweep
// resumed, extended or superseded, and cells linked to reusable runs.
#include "spec/sweep_setup.h"

#include <fmt/format.h>

#include <chrono>
#include <filesystem>

#include "util/error.h"
#include "util/files.h"
#include "util/unix_time.h"

namespace egm::spec {
namespace {

// The ownership rule (db/ownership.h) applied to what the database holds now.
// Inside the opening transaction: a refusal leaves nothing written.
std::optional<std::string> check_owner(const std::optional<db::SweepRow>& existing, const db::Claimant& me,
                                       const std::string& name, const std::string& db_path) {
  EGM_REQUIRE(existing || !me.takeover, ConfigError, "--takeover: no sweep named '{}' in {}; nothing to take over",
              name, db_path);
  const std::optional<db::SweepOwner> owner = existing ? existing->owner : std::nullopt;
  // An owner on this host is judged by its process; this very process (an
  // earlier coordinator object in it, in tests) does not count as alive.
  bool alive = true;
  if (owner && owner->host == me.host) alive = owner->pid != me.pid && db::process_alive(owner->pid);
  const db::TakeoverDecision d = db::decide_takeover(owner, unix_now(), me, alive, db::owner_stale_after_s());
  switch (d.kind) {
    case db::Takeover::claim:
      EGM_REQUIRE(!me.takeover, ConfigError,
                  "--takeover: nobody owns sweep '{}' in {}; run the same command without --takeover to resume it",
                  name, db_path);
      return std::nullopt;
    case db::Takeover::take_over: return d.line;
    case db::Takeover::refuse: break;
  }
  EGM_THROW(ConfigError, "sweep '{}' in {} is running elsewhere: {}", name, db_path, d.line);
}

}  // namespace

// A refusal before a job is submitted or workers start; the binding check is open_sweep's, in its transaction.
void precheck_owner(const std::string& db_path, const std::string& name, const db::Claimant& me) {
  std::error_code ec;
  if (!std::filesystem::exists(db_path, ec)) return;
  std::optional<db::SweepRow> existing;
  try {
    db::ResultsDb db(db_path, db::OpenMode::read_only);
    existing = db.find_sweep(name);
  } catch (const std::exception&) {
    return;  // an older schema (or a locked file): the coordinator's own check decides
  }
  if (existing) check_owner(existing, me, name, db_path);
}

SweepSetup open_sweep(const std::string& spec_path, const std::string& db_path, db::ChangedSpec on_change,
                      const SweepOpening& opening) {
  // Checked in full before the database is opened: a bad spec touches nothing.
  return open_sweep(load_spec(spec_path), db_path, on_change, opening);
}

SweepSetup open_sweep(ExperimentSpec spec, const std::string& db_path, db::ChangedSpec on_change,
                      const SweepOpening& opening) {
  std::vector<Cell> cells = expand(spec);
  const std::vector<db::CellInput> inputs = to_cell_inputs(spec, cells);
  const bool takeover = opening.claimant && opening.claimant->takeover;
  // --takeover names a sweep that exists: no file is created for it.
  EGM_REQUIRE(!takeover || std::filesystem::exists(db_path), ConfigError,
              "--takeover: {} does not exist; there is no sweep to take over", db_path);
  const std::filesystem::path parent = std::filesystem::path(db_path).parent_path();
  if (!parent.empty() && !takeover) make_dirs(parent.string());
  db::ResultsDb db(db_path, takeover ? db::OpenMode::read_write : db::OpenMode::read_write_create);
  db::SweepOpenResult sweep;
  std::vector<int64_t> ids;
  std::optional<db::SweepOwner> owner;
  std::optional<std::string> took_over, corpus_note;
  std::vector<db::ReuseLink> reused;
  std::vector<std::string> reuse_notes;
  {
    // BEGIN IMMEDIATE: the ownership check, the sweep row, its cells, its
    // corpus and the claim appear together, or (on a refusal) not at all; two
    // coordinators starting at once are serialised here.
    db::Transaction tx(db.connection());
    if (opening.claimant) took_over = check_owner(db.find_sweep(spec.name), *opening.claimant, spec.name, db.path());
    sweep = db.create_or_load_sweep(spec.name, spec.canonical.dump(2), spec.hash, on_change);
    ids = db.ensure_cells(sweep.sweep.id, inputs);
    if (opening.corpus) {
      const db::SweepRow& row = sweep.sweep;
      const db::SweepCorpus& mine = *opening.corpus;
      // The first coordinator to open the sweep records the corpus; every later one must read the same bytes.
      if (!row.corpus_sha256) {
        db.set_sweep_corpus(row.id, mine);
      } else if (*row.corpus_sha256 == "unknown") {
        corpus_note = fmt::format("sweep '{}' ran before egm recorded its corpus: not checked (this launch reads {}, "
                                  "sha256 {})",
                                  spec.name, mine.path, mine.sha256);
      } else if (*row.corpus_sha256 != mine.sha256) {
        EGM_THROW(ConfigError,
                  "sweep '{}' trains on {} (sha256 {}), but this launch reads {} (sha256 {}); refused, nothing "
                  "written: pass --data {} to go on with it, or --new-sweep to start a new sweep on this corpus",
                  spec.name, row.corpus_path.value_or("?"), *row.corpus_sha256, mine.path, mine.sha256,
                  row.corpus_path.value_or("<its corpus>"));
      }
    }
    // Reuse needs the corpus hash: a finished run is only reusable if it trained on the same data.
    if (opening.reuse && opening.corpus && spec.reuse) {
      const db::ReuseLaunch launch{opening.corpus->sha256, opening.reuse->device_kind, opening.reuse->numerics_version,
                                   [&spec](const std::string& variant) { return spec.ranks_for(variant); }};
      reused = db::link_reusable_cells(db, sweep.sweep.id, launch);
      for (const db::CheckedInput& input : opening.reuse->from) {
        db::ReuseFromResult r = db::link_from_database(db, sweep.sweep.id, launch, input);
        reused.insert(reused.end(), r.links.begin(), r.links.end());
        if (!r.note.empty()) reuse_notes.push_back(r.note);
      }
    }
    if (opening.claimant) {
      const db::Claimant& me = *opening.claimant;
      owner = db::SweepOwner{me.host, me.pid, unix_now(), me.slurm_job, std::nullopt};
      db.claim_sweep(sweep.sweep.id, *owner);
    }
    tx.commit();
  }
  sweep.sweep = db.sweep(sweep.sweep.id);  // with its owner and corpus as written
  return SweepSetup{std::move(spec), std::move(cells), std::move(db), std::move(sweep), std::move(ids),
                    std::move(owner), std::move(took_over), std::move(corpus_note), std::move(reused),
                    std::move(reuse_notes)};
}

std::vector<db::CellInput> to_cell_inputs(const ExperimentSpec& spec, const std::vector<Cell>& cells) {
  std::vector<db::CellInput> inputs;
  inputs.reserve(cells.size());
  for (const auto& c : cells) {
    db::CellInput in;
    in.key = c.key;
    in.variant = c.variant;
    in.seed = static_cast<int64_t>(c.seed);
    in.config_json = c.config_json;  // expand made it: the text the hash is of
    in.config_hash = c.config_hash;
    in.max_steps = c.config.train.max_steps;
    // The spec's retries + 1: the first attempt is not a retry.
    in.max_attempts = spec.max_attempts();
    if (c.point) {
      in.grid_point = c.point->index;
      in.grid_json = c.point->as_json().dump();
    }
    inputs.push_back(std::move(in));
  }
  return inputs;
}

}  // namespace egm::spec
