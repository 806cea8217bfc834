// The migration list is the schema's history: v1 is the first released layout,
// v2 adds pass stages, v3 hardware targets, compiled plans and what searches and
// launches record, v4 the kernel of a calibration point. docs/sessions.md describes every table and the path for the
// tables later capabilities add.
#include "store/schema.h"

namespace tapestry::store {
namespace {

// v1: projects, graph versions, deduplicated tensor values, studio state, placements.
constexpr std::string_view kSchemaV1 = R"sql(
CREATE TABLE projects (
  id         INTEGER PRIMARY KEY,
  name       TEXT NOT NULL,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL
);
CREATE TABLE graph_versions (
  id         INTEGER PRIMARY KEY,
  project_id INTEGER NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  number     INTEGER NOT NULL,
  kind       TEXT NOT NULL,
  saved_at   TEXT NOT NULL,
  node_count INTEGER NOT NULL,
  graph_json TEXT NOT NULL,
  UNIQUE (project_id, number)
);
CREATE TABLE tensor_values (
  id         INTEGER PRIMARY KEY,
  hash       TEXT NOT NULL,
  dtype      TEXT NOT NULL,
  shape      TEXT NOT NULL,
  byte_count INTEGER NOT NULL,
  bytes      BLOB NOT NULL
);
CREATE INDEX tensor_values_by_hash ON tensor_values(hash);
CREATE TABLE version_values (
  version_id INTEGER NOT NULL REFERENCES graph_versions(id) ON DELETE CASCADE,
  tensor_id  TEXT NOT NULL,
  value_id   INTEGER NOT NULL REFERENCES tensor_values(id),
  PRIMARY KEY (version_id, tensor_id)
) WITHOUT ROWID;
CREATE INDEX version_values_by_value ON version_values(value_id);
CREATE TABLE session_state (
  key        TEXT PRIMARY KEY,
  json       TEXT NOT NULL,
  updated_at TEXT NOT NULL
) WITHOUT ROWID;
CREATE TABLE project_state (
  project_id INTEGER NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  key        TEXT NOT NULL,
  json       TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  PRIMARY KEY (project_id, key)
) WITHOUT ROWID;
CREATE TABLE placements (
  project_id INTEGER NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  node_id    TEXT NOT NULL,
  x          REAL NOT NULL,
  y          REAL NOT NULL,
  pinned     INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (project_id, node_id)
) WITHOUT ROWID;
)sql";

// v2: pass stages (issue 5). A stage belongs to the graph version the pass ran
// on; its own graph is another version (kind "stage") of the same project.
constexpr std::string_view kSchemaV2 = R"sql(
CREATE TABLE stages (
  id               INTEGER PRIMARY KEY,
  version_id       INTEGER NOT NULL REFERENCES graph_versions(id) ON DELETE CASCADE,
  ordinal          INTEGER NOT NULL,
  pass_name        TEXT NOT NULL,
  options_json     TEXT NOT NULL,
  summary          TEXT NOT NULL,
  diff_json        TEXT NOT NULL,
  certificate_json TEXT NOT NULL,
  graph_version_id INTEGER NOT NULL REFERENCES graph_versions(id) ON DELETE CASCADE,
  UNIQUE (version_id, ordinal)
);
CREATE INDEX stages_by_graph_version ON stages(graph_version_id);
CREATE INDEX graph_versions_by_kind ON graph_versions(project_id, kind, number);
)sql";

// v3: hardware targets and compiled plans (issue 15), and the tables the plan
// search and the launchers fill. Everything under a graph version cascades from
// it, so deleting a project still removes all it owns. A plan belongs to the
// editor version its pipeline ran on and, when compiled from a stage, to that
// stage too. Targets and calibration name a target rather than refer to a row:
// the built-in targets (resources/targets/) are not stored in the session.
// Every foreign key has an index: SQLite scans the child table on a cascade
// otherwise.
constexpr std::string_view kSchemaV3 = R"sql(
CREATE TABLE targets (
  id          INTEGER PRIMARY KEY,
  name        TEXT NOT NULL UNIQUE,
  origin      TEXT NOT NULL CHECK (origin IN ('user', 'measured')),
  target_json TEXT NOT NULL,
  created_at  TEXT NOT NULL,
  updated_at  TEXT NOT NULL
);
CREATE TABLE plans (
  id               INTEGER PRIMARY KEY,
  version_id       INTEGER NOT NULL REFERENCES graph_versions(id) ON DELETE CASCADE,
  stage_id         INTEGER REFERENCES stages(id) ON DELETE CASCADE,
  target           TEXT NOT NULL,
  devices          INTEGER NOT NULL,
  plan_json        TEXT NOT NULL,
  summary          TEXT NOT NULL,
  makespan_seconds REAL NOT NULL,
  peak_bytes       INTEGER NOT NULL,
  created_at       TEXT NOT NULL
);
CREATE INDEX plans_by_version ON plans(version_id);
CREATE INDEX plans_by_stage ON plans(stage_id);
CREATE TABLE search_runs (
  id            INTEGER PRIMARY KEY,
  version_id    INTEGER NOT NULL REFERENCES graph_versions(id) ON DELETE CASCADE,
  target        TEXT NOT NULL,
  settings_json TEXT NOT NULL,
  seed          INTEGER NOT NULL,
  started_at    TEXT NOT NULL,
  finished_at   TEXT,
  status        TEXT NOT NULL
);
CREATE INDEX search_runs_by_version ON search_runs(version_id);
CREATE TABLE search_candidates (
  id              INTEGER PRIMARY KEY,
  run_id          INTEGER NOT NULL REFERENCES search_runs(id) ON DELETE CASCADE,
  generation      INTEGER NOT NULL,
  objectives_json TEXT NOT NULL,
  plan_json       TEXT,
  on_front        INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX search_candidates_by_run ON search_candidates(run_id, generation);
CREATE TABLE launches (
  id                INTEGER PRIMARY KEY,
  plan_id           INTEGER NOT NULL REFERENCES plans(id) ON DELETE CASCADE,
  backend           TEXT NOT NULL,
  started_at        TEXT NOT NULL,
  finished_at       TEXT NOT NULL,
  status            TEXT NOT NULL CHECK (status IN ('ok', 'failed', 'cancelled')),
  error             TEXT NOT NULL,
  equivalence       TEXT NOT NULL,
  measurements_json TEXT NOT NULL
);
CREATE INDEX launches_by_plan ON launches(plan_id);
CREATE TABLE step_measurements (
  id                INTEGER PRIMARY KEY,
  launch_id         INTEGER NOT NULL REFERENCES launches(id) ON DELETE CASCADE,
  step              INTEGER NOT NULL,
  device            TEXT NOT NULL,
  start_seconds     REAL NOT NULL,
  end_seconds       REAL NOT NULL,
  predicted_seconds REAL NOT NULL
);
CREATE INDEX step_measurements_by_launch ON step_measurements(launch_id, step);
CREATE TABLE calibration (
  id                INTEGER PRIMARY KEY,
  target            TEXT NOT NULL,
  kernel_class      TEXT NOT NULL,
  size              REAL NOT NULL,
  predicted_seconds REAL NOT NULL,
  measured_seconds  REAL NOT NULL,
  launch_id         INTEGER REFERENCES launches(id) ON DELETE CASCADE,
  created_at        TEXT NOT NULL
);
CREATE INDEX calibration_by_target ON calibration(target, kernel_class, size);
CREATE INDEX calibration_by_launch ON calibration(launch_id);
)sql";

// v4: a calibration point names its kernel (the op's kind: "layernorm", "add", …)
// and the threads it ran on, so kernels of one class and size band are calibrated
// apart. Points kept before have neither ('', 0) and count for their band only
// (cost::Calibration::factor).
constexpr std::string_view kSchemaV4 = R"sql(
ALTER TABLE calibration ADD COLUMN kernel TEXT NOT NULL DEFAULT '';
ALTER TABLE calibration ADD COLUMN threads INTEGER NOT NULL DEFAULT 0;
)sql";

// v5: a calibration point names its kernel's element type, so a bf16 kernel and an
// f32 one of the same kind and size band are calibrated apart (on an H200 a
// layer norm of 1e7 bytes ran 1.93× its prediction in f32 and 1.09× in bf16).
// Points kept before have '' and count for their kernel's every-dtype group.
constexpr std::string_view kSchemaV5 = R"sql(
ALTER TABLE calibration ADD COLUMN dtype TEXT NOT NULL DEFAULT '';
)sql";

// v6: a calibration point names its kernel's exact shape (the extents of the
// boxes it reads and writes), so a shape measured before is predicted at the rate
// it ran at: on this CPU two GEMMs of equal FLOPs and size band (the MLP's c_fc
// and mlp_proj) differ by about 20%. Points kept before have '' and count for
// their kernel's groups only.
constexpr std::string_view kSchemaV6 = R"sql(
ALTER TABLE calibration ADD COLUMN shape TEXT NOT NULL DEFAULT '';
)sql";

constexpr Migration kMigrations[] = {
    {1, kSchemaV1},
    {2, kSchemaV2},
    {3, kSchemaV3},
    {4, kSchemaV4},
    {5, kSchemaV5},
    {6, kSchemaV6},
};

}  // namespace

std::span<const Migration> migrations() {
    return kMigrations;
}

int current_schema_version() {
    return kMigrations[std::size(kMigrations) - 1].version;
}

std::vector<std::string> tables_of_schema(int version) {
    std::vector<std::string> tables;
    constexpr std::string_view kCreate = "CREATE TABLE ";
    for (const Migration &m : kMigrations) {
        if (m.version > version) break;
        for (size_t at = m.sql.find(kCreate); at != std::string_view::npos; at = m.sql.find(kCreate, at + 1)) {
            const size_t begin = at + kCreate.size();
            const size_t end = m.sql.find_first_of(" (\n", begin);
            tables.emplace_back(m.sql.substr(begin, end - begin));
        }
    }
    return tables;
}

}  // namespace tapestry::store
