// The SQLite session store (DESIGN.md §8, docs/sessions.md): one file per session
// holding projects, every saved graph version (values deduplicated by content),
// node placements, studio state and pass stages. Errors are values (StoreError).
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/expected.h"
#include "graph/graph.h"

namespace tapestry::store {

// Why a session could not be opened or an operation failed. `code` is one of
// "damaged", "locked", "read-only", "newer-version", "not-found", "io", "invalid";
// `message` is a sentence for the user that names the file.
struct StoreError {
    std::string code;
    std::string message;
};

// Success without a value.
struct Done {};
using Status = Expected<Done, StoreError>;

enum class OpenMode {
    read_write,  // creates the file if missing; holds the session's exclusive lock while open
    read_only,   // never creates, never writes; works beside a writer in another process
};

using ProjectId = std::int64_t;
using VersionId = std::int64_t;

struct ProjectInfo {
    ProjectId id = 0;
    std::string name;
    int version_count = 0;            // editor versions (save, autosave, import); stage graphs not counted
    VersionId latest_version_id = 0;  // 0 when the project has no version yet
    std::string updated_at;           // ISO 8601 UTC, "2026-11-21T11:57:45.123Z"
};

struct VersionInfo {
    VersionId id = 0;
    ProjectId project_id = 0;
    int number = 0;        // 1, 2, 3 … per project, in save order
    std::string kind;      // "save", "autosave", "import", "stage"
    std::string saved_at;  // ISO 8601 UTC
    int node_count = 0;
};

struct NodePlacement {
    double x = 0, y = 0;
    bool pinned = false;
    friend bool operator==(const NodePlacement &, const NodePlacement &) = default;
};
// Node id (tensor or operation) → position on the canvas.
using Placements = std::map<std::string, NodePlacement>;

// A pass stage (schema v2): what a pass did to a graph version.
struct StageRecord {
    std::int64_t id = 0;       // assigned by add_stage
    VersionId version_id = 0;  // the version the pass ran on
    int ordinal = 0;           // position in that version's pass pipeline, 0, 1, …
    std::string pass_name;
    std::string options_json = "{}";
    std::string summary;  // the human sentence of what the pass did
    std::string diff_json = "{}";
    std::string certificate_json = "{}";  // the verification result
    VersionId graph_version_id = 0;       // the stage's graph, saved as a version of kind "stage"
};

// Scope of a studio state entry: the whole session, or one project.
using StateScope = std::optional<ProjectId>;
inline constexpr StateScope kSessionScope = std::nullopt;

// An open session. All member functions are safe to call from several threads at
// once: one mutex serialises them over the one connection (a save from a worker
// thread makes a GUI-thread read wait for that save's transaction, no longer).
class Session {
public:
    // Opens or creates (read_write) the session file at `path`. A file that is not
    // a session or is damaged (including a regular-file check: a FIFO or device
    // is refused), is locked by another session, is read-only on disk
    // (read_write), or has a newer schema is refused and left exactly as it was:
    // it is examined read-only before any connection that could write exists.
    // `lock_wait`: how long a read_write open waits for another process's session
    // lock before refusing with "locked" (a session held elsewhere in this
    // process is refused at once). The studio opens on its GUI thread with 0; the
    // CLI waits a few seconds so that scripted imports in a row succeed.
    static Expected<std::unique_ptr<Session>, StoreError> open(
        const std::filesystem::path &path, OpenMode mode = OpenMode::read_write,
        std::chrono::milliseconds lock_wait = std::chrono::milliseconds(0));
    ~Session();
    Session(const Session &) = delete;
    Session &operator=(const Session &) = delete;

    const std::filesystem::path &path() const { return path_; }
    OpenMode mode() const { return mode_; }
    int schema_version() const;

    // ---- projects
    Expected<std::vector<ProjectInfo>, StoreError> projects() const;
    Expected<ProjectInfo, StoreError> project(ProjectId id) const;
    Expected<ProjectId, StoreError> create_project(std::string_view name);
    Status rename_project(ProjectId id, std::string_view name);
    // Removes the project with its versions, placements, state and stages; values
    // no longer referenced by any version are removed too.
    Status delete_project(ProjectId id);

    // ---- graph versions
    // Saves `g` as the project's next version in one transaction: the graph, its
    // tensor values (stored once per content) and, when given, the placements
    // (replacing the project's). `kind` is "save", "autosave" or "import".
    Expected<VersionInfo, StoreError> save_version(ProjectId project, const Graph &g, std::string_view kind,
                                                   const Placements *placements = nullptr);
    // Editor versions of a project, oldest first (stage graphs only when asked).
    Expected<std::vector<VersionInfo>, StoreError> versions(ProjectId project, bool include_stages = false) const;
    Expected<VersionInfo, StoreError> version_by_number(ProjectId project, int number) const;
    // The graph of a version, values restored (shared TensorData).
    Expected<Graph, StoreError> load_version(VersionId version) const;
    // The newest editor version of a project ("not-found" when it has none).
    Expected<Graph, StoreError> load_latest(ProjectId project) const;
    Expected<Placements, StoreError> placements(ProjectId project) const;

    // ---- studio state: key → JSON text, per session or per project
    Status set_state(StateScope scope, std::string_view key, std::string_view json);
    // The JSON text, or std::nullopt when the key is not set.
    Expected<std::optional<std::string>, StoreError> state(StateScope scope, std::string_view key) const;

    // ---- stages (schema v2)
    // Saves `stage_graph` as a version of kind "stage" of the same project and the
    // stage record pointing at it, in one transaction. Returns the stored record.
    Expected<StageRecord, StoreError> add_stage(const StageRecord &stage, const Graph &stage_graph);
    // The stages recorded on a version, by ordinal.
    Expected<std::vector<StageRecord>, StoreError> stages(VersionId version) const;

    // Number of rows in the deduplicated value table (for tests and `session list`).
    Expected<std::int64_t, StoreError> value_count() const;

    struct Impl;

private:
    friend Expected<std::unique_ptr<Session>, StoreError> create_session_at_version(const std::filesystem::path &, int);
    explicit Session(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
    std::filesystem::path path_;
    OpenMode mode_;
};

// Creates a NEW session file at an older schema version (store/schema.h).
Expected<std::unique_ptr<Session>, StoreError> create_session_at_version(const std::filesystem::path &path,
                                                                         int version);

// The default file name extension of a session.
inline constexpr std::string_view kSessionExtension = ".tapestry-session";

}  // namespace tapestry::store
