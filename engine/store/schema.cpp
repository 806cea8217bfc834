// The migration list is the schema's history: v1 is the first released layout,
// v2 adds pass stages. docs/sessions.md describes every table and the path for
// the tables later capabilities add (v3+).
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

constexpr Migration kMigrations[] = {
    {1, kSchemaV1},
    {2, kSchemaV2},
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
