-- The egm results database (SQLite). One file holds every sweep: its spec,
-- its cells (variant x seed), every attempt at a cell, the metrics and learned
-- parameters the workers report, and an event log. The coordinator is the only
-- writer; `egm status/runs/query` read it (read-only) while it runs.
--
-- This file is a list of migrations. Each starts with a marker line
--   -- @migration N: what it does
-- and holds the SQL that takes a database from version N-1 to N. egm applies,
-- in one transaction each, every migration above the file's PRAGMA user_version
-- and then sets user_version = N. Never edit a released migration: append one.
-- Times are UNIX seconds (REAL, UTC); datetime(t, 'unixepoch') shows them.
-- schemas/README.md documents every table.

-- @migration 1: initial schema
CREATE TABLE sweeps (
  id           INTEGER PRIMARY KEY,
  name         TEXT NOT NULL UNIQUE,      -- from the spec; 'NAME@ID' once superseded
  spec_json    TEXT NOT NULL,             -- the parsed spec, canonical JSON
  spec_hash    TEXT NOT NULL,             -- sha256 of the canonical JSON
  created_at   REAL NOT NULL,
  updated_at   REAL NOT NULL,
  status       TEXT NOT NULL DEFAULT 'pending'
               CHECK (status IN ('pending', 'running', 'done', 'failed', 'interrupted', 'superseded')),
  slurm_job_id TEXT
);

CREATE TABLE cells (
  id           INTEGER PRIMARY KEY,
  sweep_id     INTEGER NOT NULL REFERENCES sweeps(id) ON DELETE CASCADE,
  position     INTEGER NOT NULL,          -- order in the spec's expansion
  key          TEXT NOT NULL,             -- 'VARIANT-sSEED', unique in its sweep
  variant      TEXT NOT NULL,
  seed         INTEGER NOT NULL,
  config_json  TEXT NOT NULL,             -- the full RunConfig
  config_hash  TEXT NOT NULL,
  max_steps    INTEGER NOT NULL,
  status       TEXT NOT NULL DEFAULT 'pending'
               CHECK (status IN ('pending', 'running', 'done', 'failed', 'interrupted')),
  attempts     INTEGER NOT NULL DEFAULT 0,  -- attempts started, whatever their end
  failures     INTEGER NOT NULL DEFAULT 0,  -- attempts that ended 'failed'
  max_attempts INTEGER NOT NULL,            -- failures allowed = 1 + the spec's retries
  last_error   TEXT,
  final_val    REAL,                      -- val loss at the last step (the paper's number)
  best_val     REAL,                      -- lowest val loss over the evals
  full_val     REAL,                      -- deterministic pass over every val window
  ar_val       REAL,                      -- autoregressive (prefix-only) val loss
  ar_ref_val   REAL,                      -- the full-window loss on the same windows as ar_val
  final_step   INTEGER,
  updated_at   REAL NOT NULL,
  UNIQUE (sweep_id, variant, seed, config_hash),
  UNIQUE (sweep_id, key)
);
CREATE INDEX cells_by_sweep_status ON cells (sweep_id, status);

CREATE TABLE runs (
  id                INTEGER PRIMARY KEY,
  cell_id           INTEGER NOT NULL REFERENCES cells(id) ON DELETE CASCADE,
  attempt           INTEGER NOT NULL,     -- 1, 2, ... within the cell
  status            TEXT NOT NULL
                    CHECK (status IN ('running', 'done', 'failed', 'interrupted')),
  host              TEXT,
  device            TEXT,
  world_size        INTEGER,
  backend           TEXT,
  torch_version     TEXT,
  git_commit        TEXT,
  started_at        REAL NOT NULL,
  ended_at          REAL,
  resumed_from_step INTEGER,              -- NULL: started from scratch
  error             TEXT,
  UNIQUE (cell_id, attempt)
);

-- Keyed by (cell, split, step), not by run: a resumed attempt that redoes the
-- steps after its checkpoint overwrites them, so a cell has one trajectory.
CREATE TABLE metrics (
  cell_id      INTEGER NOT NULL REFERENCES cells(id) ON DELETE CASCADE,
  run_id       INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  step         INTEGER NOT NULL,
  split        TEXT NOT NULL,             -- train, eval_train, eval_val, val_full, val_ar, val_ar_ref
  loss         REAL,                      -- NULL when it was NaN
  lr           REAL,
  tokens_per_s REAL,
  time         REAL NOT NULL,             -- when it was measured
  PRIMARY KEY (cell_id, split, step)
) WITHOUT ROWID;
CREATE INDEX metrics_by_run ON metrics (run_id);

CREATE TABLE params (
  cell_id INTEGER NOT NULL REFERENCES cells(id) ON DELETE CASCADE,
  run_id  INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  step    INTEGER NOT NULL,
  module  TEXT NOT NULL,                  -- 'mope', 'ega', ...
  layer   INTEGER NOT NULL,               -- -1 when the module is not per layer
  idx     INTEGER NOT NULL,               -- pair / head index
  name    TEXT NOT NULL,                  -- 'omega', 'sigma', 'tau', 'alpha', ...
  value   REAL,
  PRIMARY KEY (cell_id, step, module, layer, idx, name)
) WITHOUT ROWID;
CREATE INDEX params_by_run ON params (run_id);

CREATE TABLE events (
  id       INTEGER PRIMARY KEY,
  time     REAL NOT NULL,
  sweep_id INTEGER REFERENCES sweeps(id) ON DELETE CASCADE,
  cell_id  INTEGER REFERENCES cells(id) ON DELETE CASCADE,
  run_id   INTEGER REFERENCES runs(id) ON DELETE CASCADE,
  kind     TEXT NOT NULL,
  message  TEXT NOT NULL
);
CREATE INDEX events_by_sweep ON events (sweep_id, time);

-- @migration 2: coordinator heartbeat
-- The running coordinator sets it every few seconds (ResultsDb::kHeartbeatIntervalS);
-- a 'running' sweep whose heartbeat is older than kStaleAfterS has lost its
-- coordinator (killed, node lost): `egm status` shows it as stale. NULL: written
-- by an egm without heartbeats, or never run.
ALTER TABLE sweeps ADD COLUMN heartbeat_at REAL;

-- @migration 3: grid points
-- A spec's "grid" (experiments/README.md) crosses variants x seeds with
-- run-config values; each cell then belongs to one grid point. Both NULL for a
-- cell of a sweep without a grid. grid_json is the point's values keyed by
-- field path: json_extract(grid_json, '$."train.lr"') selects one.
ALTER TABLE cells ADD COLUMN grid_point INTEGER;  -- 0-based index in the spec's expansion
ALTER TABLE cells ADD COLUMN grid_json TEXT;      -- {"train.lr": 0.001, "model.dropout": 0}

-- @migration 4: event steps
-- The training step an event is about, where it has one: a checkpoint's step,
-- the step a run resumed from, where an attempt started, ended or stopped.
-- NULL for events without a step (sweep_created, coordinator_started, ...).
-- Rows written before this migration get the step their message carried:
-- 'checkpoint at step N', '... (step N)...', '... resumed from step N',
-- '... at step N; checkpointed'.
ALTER TABLE events ADD COLUMN step INTEGER;
UPDATE events SET step = CAST(substr(message, length('checkpoint at step ') + 1) AS INTEGER)
  WHERE kind = 'checkpoint' AND message LIKE 'checkpoint at step %';
UPDATE events SET step = CAST(substr(message, instr(message, '(step ') + length('(step ')) AS INTEGER)
  WHERE kind IN ('resumed', 'checkpoint_skipped', 'restart_from_scratch') AND instr(message, '(step ') > 0;
UPDATE events SET step = CAST(substr(message, instr(message, 'resumed from step ') + length('resumed from step '))
                              AS INTEGER)
  WHERE kind = 'attempt_started' AND instr(message, 'resumed from step ') > 0;
UPDATE events SET step = CAST(substr(message, instr(message, ' at step ') + length(' at step ')) AS INTEGER)
  WHERE kind = 'attempt_interrupted' AND instr(message, ' at step ') > 0;

-- @migration 5: learned parameters packed
-- One row per snapshot (a cell's parameters at one step) instead of one per
-- value: 100,000 cells x 11 evals of the 2x2's parameters were 16 GB as
-- rows, about 0.9 GB packed (results/BENCHMARKS.md, issue 16). param_layouts holds each snapshot shape once: a
-- JSON list of [module, layer, name, first_idx, count] series, ordered by
-- (module, layer, name, idx); param_snapshots.data holds the values in that
-- order, 4-byte floats when every value is exactly a float, else 8-byte
-- doubles (little-endian; NULL as NaN). src/db/param_pack.h.
-- `params` becomes a read-only view with the old columns: egm's connections
-- register param_values(layout, data), the table-valued function that
-- unpacks a snapshot (other SQLite clients cannot read the view). Old rows
-- are packed by the aggregates param_pack_layout/param_pack_data; a snapshot
-- keeps the latest run_id of its rows.
CREATE TABLE param_layouts (
  id     INTEGER PRIMARY KEY,
  layout TEXT NOT NULL UNIQUE
);
-- A rowid table: a snapshot's BLOB (1-3 KB for the 2x2) would spill into
-- overflow pages in a WITHOUT ROWID table's b-tree (about 1 KB per row).
CREATE TABLE param_snapshots (
  id        INTEGER PRIMARY KEY,
  cell_id   INTEGER NOT NULL REFERENCES cells(id) ON DELETE CASCADE,
  run_id    INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  step      INTEGER NOT NULL,
  layout_id INTEGER NOT NULL REFERENCES param_layouts(id),
  data      BLOB NOT NULL,
  UNIQUE (cell_id, step)
);
CREATE INDEX param_snapshots_by_run ON param_snapshots (run_id);
CREATE TEMP TABLE packed_params AS
  SELECT cell_id, max(run_id) AS run_id, step, param_pack_layout(module, layer, idx, name) AS layout,
         param_pack_data(module, layer, idx, name, value) AS data
  FROM params GROUP BY cell_id, step;
INSERT OR IGNORE INTO param_layouts (layout) SELECT layout FROM packed_params ORDER BY cell_id, step;
INSERT INTO param_snapshots (cell_id, run_id, step, layout_id, data)
  SELECT p.cell_id, p.run_id, p.step, l.id, p.data FROM packed_params p JOIN param_layouts l ON l.layout = p.layout;
DROP TABLE temp.packed_params;
DROP INDEX params_by_run;
DROP TABLE params;
-- metrics_by_run served only a cascade from a deleted run (egm deletes none;
-- readers go by cell): 27% of the metrics' bytes (0.27 GB at 100,000 cells).
DROP INDEX metrics_by_run;
CREATE VIEW params AS
  SELECT s.cell_id AS cell_id, s.run_id AS run_id, s.step AS step, v.module AS module, v.layer AS layer,
         v.idx AS idx, v.name AS name, v.value AS value
  FROM param_snapshots s JOIN param_layouts l ON l.id = s.layout_id JOIN param_values(l.layout, s.data) v;

-- @migration 6: source provenance
-- The code behind every number: a run trained by a build from a modified tree
-- records the sha256 of its modification (`git diff HEAD`, embedded at build
-- time, util/source_state.h); the coordinator stores the text once per sha.
-- NULL: built from a clean tree (git_commit has no "-dirty"), or recorded by an
-- egm from before this version.
ALTER TABLE runs ADD COLUMN source_diff_sha256 TEXT;
CREATE TABLE source_diffs (
  sha256 TEXT PRIMARY KEY,
  size   INTEGER NOT NULL,  -- bytes of the whole diff
  diff   TEXT NOT NULL      -- as built: the whole diff, or its first 512 KiB when larger
);

-- @migration 7: compute per run; typed views for notebooks
-- What a run used, for the compute statement (src/analysis/compute.h): the
-- intra-op threads of each of its world_size ranks, and the GPU's name for a
-- CUDA run (NULL on CPU). Both NULL for runs recorded before this version.
ALTER TABLE runs ADD COLUMN threads INTEGER;
ALTER TABLE runs ADD COLUMN gpu_name TEXT;
-- Views for other tools (README.md, "Notebooks": pandas, Polars, DuckDB). Each
-- column is a table column (its declared type) or a CAST to INTEGER, DOUBLE or
-- TEXT, written in SQL that SQLite and DuckDB (which plans an attached SQLite
-- view's SQL itself, and reads every column as VARCHAR when it cannot) both
-- understand; no egm function, so unlike `params` they open in any client.
-- Times stay UNIX seconds (DOUBLE): SQLite has no timestamp type.
CREATE VIEW cell_results AS
  SELECT s.name AS sweep, c.id AS cell_id, c.key AS key, c.variant AS variant, c.seed AS seed,
         c.grid_point AS grid_point, c.grid_json AS grid_json, c.status AS status, c.attempts AS attempts,
         c.failures AS failures, c.final_step AS final_step, c.final_val AS final_val, c.best_val AS best_val,
         c.full_val AS full_val, c.ar_val AS ar_val, c.ar_ref_val AS ar_ref_val, c.updated_at AS updated_at
  FROM cells c JOIN sweeps s ON s.id = c.sweep_id;
CREATE VIEW metric_points AS
  SELECT s.name AS sweep, c.id AS cell_id, c.key AS key, c.variant AS variant, c.seed AS seed,
         c.grid_point AS grid_point, m.run_id AS run_id, m.split AS split, m.step AS step, m.loss AS loss,
         m.lr AS lr, m.tokens_per_s AS tokens_per_s, m.time AS time
  FROM metrics m JOIN cells c ON c.id = m.cell_id JOIN sweeps s ON s.id = c.sweep_id;
-- One row per attempt with what it cost: seconds of wall time; on a GPU
-- (device cuda...) GPU-seconds = seconds x world_size, else core-seconds =
-- seconds x world_size x threads (1 when not recorded). NULL while running.
CREATE VIEW run_compute AS
  SELECT s.name AS sweep, r.id AS run_id, c.id AS cell_id, c.key AS key, c.variant AS variant, c.seed AS seed,
         c.grid_point AS grid_point, r.attempt AS attempt, r.status AS status, r.host AS host, r.device AS device,
         r.gpu_name AS gpu_name, r.world_size AS world_size, r.threads AS threads, r.started_at AS started_at,
         r.ended_at AS ended_at, CAST(r.ended_at - r.started_at AS DOUBLE) AS seconds,
         CAST(CASE WHEN r.device LIKE 'cuda%' THEN (r.ended_at - r.started_at) * coalesce(r.world_size, 1) END
              AS DOUBLE) AS gpu_seconds,
         CAST(CASE WHEN r.device NOT LIKE 'cuda%'
                   THEN (r.ended_at - r.started_at) * coalesce(r.world_size, 1) * coalesce(r.threads, 1) END
              AS DOUBLE) AS core_seconds
  FROM runs r JOIN cells c ON c.id = r.cell_id JOIN sweeps s ON s.id = c.sweep_id;

-- @migration 8: merged databases
-- `egm merge OUT IN...` (src/db/merge.h) combines sweeps from several
-- databases. Each input it read is one row here; every run copied from it
-- names that row, so a merged cell keeps where it came from (its file) as well
-- as what ran it (runs.host, git_commit, source_diff_sha256). An input that was
-- itself a merge brings its own rows along, their `via` naming it.
CREATE TABLE merge_sources (
  id             INTEGER PRIMARY KEY,
  path           TEXT NOT NULL,     -- the input file, absolute, as egm merge read it
  size           INTEGER,           -- its bytes then
  schema_version INTEGER NOT NULL,  -- its PRAGMA user_version then
  host           TEXT,              -- where egm merge ran
  egm_commit     TEXT,              -- the egm that merged it
  merged_at      REAL NOT NULL,
  via            INTEGER REFERENCES merge_sources(id)  -- NULL: an input of this file's own merge
);
-- NULL: recorded in this file (by its coordinator), not merged into it.
ALTER TABLE runs ADD COLUMN merge_source INTEGER REFERENCES merge_sources(id);
-- @migration 9: sweep ownership; the sweep's corpus
-- One live coordinator per sweep (coordinator/README.md, "Ownership"): the
-- coordinator that runs a sweep claims it (host, pid, when it claimed it, its
-- Slurm job id when it runs in one) in the transaction that opens the sweep,
-- refreshes owner_heartbeat with heartbeat_at, and clears the owner when it
-- ends in order. Another coordinator is refused while the owner is alive, and
-- takes over a stale one. All NULL: nobody owns the sweep.
ALTER TABLE sweeps ADD COLUMN owner_host TEXT;
ALTER TABLE sweeps ADD COLUMN owner_pid INTEGER;
ALTER TABLE sweeps ADD COLUMN owner_started_at REAL;
ALTER TABLE sweeps ADD COLUMN owner_slurm_job TEXT;
ALTER TABLE sweeps ADD COLUMN owner_heartbeat REAL;
-- The corpus the sweep trains on, stored when it first starts: its sha256, its
-- size in bytes, and the path the workers read it from. A resume or --extend
-- with another corpus is refused. Older sweeps that ran: 'unknown' (nothing
-- recorded which corpus their workers read); never run: NULL (the first start
-- records it).
ALTER TABLE sweeps ADD COLUMN corpus_sha256 TEXT;
ALTER TABLE sweeps ADD COLUMN corpus_bytes INTEGER;
ALTER TABLE sweeps ADD COLUMN corpus_path TEXT;
UPDATE sweeps SET corpus_sha256 = 'unknown'
  WHERE EXISTS (SELECT 1 FROM cells c JOIN runs r ON r.cell_id = c.id WHERE c.sweep_id = sweeps.id);
-- @migration 10: the looks of a sequential sweep
-- `egm sweep SPEC --until CLAIMS` (src/cli/sweep_until.h) adds seeds in
-- batches and looks after each: one row per claim and look, with the claim's
-- anytime-valid confidence sequence then (src/analysis/sequences.h), its
-- decision, and what the sweep did next. Written by egm sweep between the
-- coordinator's launches (the database then has no other writer).
CREATE TABLE looks (
  id        INTEGER PRIMARY KEY,
  sweep_id  INTEGER NOT NULL REFERENCES sweeps(id),
  look      INTEGER NOT NULL,  -- 1, 2, ...: the look after each batch, in this sweep
  time      REAL NOT NULL,
  claim     TEXT NOT NULL,     -- "delta(ega)", "interaction"
  seeds     INTEGER NOT NULL,  -- the seeds the sequence has seen
  estimate  REAL,
  lower     REAL,              -- NULL: unbounded
  upper     REAL,
  p_anytime REAL,
  decision  TEXT NOT NULL,     -- undecided | positive | negative | narrow
  settled   INTEGER NOT NULL,  -- 1: settled at this look or before
  next      TEXT NOT NULL,     -- what the sweep did after this look: "seeds 3-4 added", "stopped: ..."
  method    TEXT NOT NULL,     -- the sequence (t-mixture) and its parameters
  params    TEXT NOT NULL
);
CREATE INDEX looks_by_sweep ON looks (sweep_id, look);
-- @migration 11: finished runs reused by identity
-- A run's identity (config/run_config.h, "what makes two runs the same"): its
-- cell's config_hash, its sweep's corpus_sha256, its device kind and world
-- size (runs.device, world_size) and the numerics version of the egm that
-- trained it, stored here; NULL: not recorded (an older run, or one whose
-- worker was another build), and such a run is reused by nothing.
-- A cell whose identity matches a finished run elsewhere in the file is not
-- trained: egm sweep links it (src/db/reuse.h) with a runs row of its own,
-- status 'done', no wall time (started_at = ended_at), what ran the original
-- (host, device, commit, ...), reused_run naming the original and reused_from
-- saying where it came from; the cell takes the original's results, metrics
-- and parameter snapshots. reused_from NULL: trained by this attempt.
ALTER TABLE runs ADD COLUMN numerics_version INTEGER;
ALTER TABLE runs ADD COLUMN reused_run INTEGER REFERENCES runs(id) ON DELETE SET NULL;
ALTER TABLE runs ADD COLUMN reused_from TEXT;
CREATE INDEX cells_by_config_hash ON cells (config_hash);
-- @migration 12: reused runs read through
-- A cell linked to a finished run of this same file (runs.reused_run set on
-- its done run) no longer holds a copy of the original's metrics and
-- parameter snapshots: they stay stored once, under the original's cell, and
-- every reader reads them through row_sources, under the linking cell and
-- its link run. Linking 100,000 cells so writes 100,000 runs rows instead of
-- copying 1.8 million metric rows (results/BENCHMARKS.md, issue 38). A link
-- to a run of another file (egm sweep --reuse-from; reused_run NULL) still
-- holds copied rows. Links written before this version hold copies too,
-- which the readers leave unread (they equal the original's).
-- row_sources: for every cell, the cell whose metric rows and parameter
-- snapshots are its own (itself unless it is such a link) and, for a link,
-- the link's run, which the rows read as.
CREATE VIEW row_sources AS
  SELECT c.id AS cell_id,
         coalesce((SELECT o.cell_id FROM runs l JOIN runs o ON o.id = l.reused_run
                   WHERE l.cell_id = c.id AND l.status = 'done' ORDER BY l.attempt DESC LIMIT 1), c.id)
           AS rows_cell_id,
         (SELECT l.id FROM runs l JOIN runs o ON o.id = l.reused_run
          WHERE l.cell_id = c.id AND l.status = 'done' ORDER BY l.attempt DESC LIMIT 1) AS link_run_id
  FROM cells c;
-- The two views over the rows read through it: a linked cell's points and
-- learned values are its original's, named by the linking cell and run.
DROP VIEW metric_points;
CREATE VIEW metric_points AS
  SELECT s.name AS sweep, c.id AS cell_id, c.key AS key, c.variant AS variant, c.seed AS seed,
         c.grid_point AS grid_point, coalesce(x.link_run_id, m.run_id) AS run_id, m.split AS split,
         m.step AS step, m.loss AS loss, m.lr AS lr, m.tokens_per_s AS tokens_per_s, m.time AS time
  FROM row_sources x JOIN cells c ON c.id = x.cell_id JOIN sweeps s ON s.id = c.sweep_id
       JOIN metrics m ON m.cell_id = x.rows_cell_id;
DROP VIEW params;
CREATE VIEW params AS
  SELECT x.cell_id AS cell_id, coalesce(x.link_run_id, s.run_id) AS run_id, s.step AS step, v.module AS module,
         v.layer AS layer, v.idx AS idx, v.name AS name, v.value AS value
  FROM row_sources x JOIN param_snapshots s ON s.cell_id = x.rows_cell_id
       JOIN param_layouts l ON l.id = s.layout_id JOIN param_values(l.layout, s.data) v;
