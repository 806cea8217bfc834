// The SQLite session store (DESIGN.md §8, docs/sessions.md): one file per session
// holding projects, every saved graph version (values deduplicated by content),
// node placements, studio state, pass stages, hardware targets, compiled plans,
// their launches and calibration, and plan searches with their candidates. Errors
// are values (StoreError).
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
using StageId = std::int64_t;
using PlanId = std::int64_t;
using LaunchId = std::int64_t;

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
    StageId id = 0;            // assigned by add_stage
    VersionId version_id = 0;  // the version the pass ran on
    int ordinal = 0;           // position in that version's pass pipeline, 0, 1, …
    std::string pass_name;
    std::string options_json = "{}";
    std::string summary;  // the human sentence of what the pass did
    std::string diff_json = "{}";
    std::string certificate_json = "{}";  // the verification result
    VersionId graph_version_id = 0;       // the stage's graph, saved as a version of kind "stage"
};

// A hardware target kept in the session (schema v3): a copy the user edited, or
// the host CPU as measured. The built-in targets are files, not rows.
struct TargetRecord {
    std::string name;         // unique in the session
    std::string origin;       // "user" or "measured"
    std::string target_json;  // the target file's JSON (docs/formats.md)
    std::string updated_at;   // ISO 8601 UTC
};

// A compiled plan (schema v3), without its file text (load_plan_json reads that).
struct PlanRecord {
    PlanId id = 0;                    // assigned by save_plan
    VersionId version_id = 0;         // the editor version whose graph the plan compiles
    std::optional<StageId> stage_id;  // the stage of that version it was compiled from; none: the version itself
    std::string target;               // the target's name
    int devices = 0;
    std::string summary;          // one line
    double makespan_seconds = 0;  // predicted
    std::int64_t peak_bytes = 0;  // predicted peak memory of the fullest device
    std::string created_at;       // ISO 8601 UTC, assigned by save_plan
};

// One step of a launch as measured, beside the cost model's prediction for it.
struct StepMeasurement {
    int step = 0;              // the step's index in the plan
    std::string device;        // "node:index"
    double start_seconds = 0;  // since the launch started
    double end_seconds = 0;
    double predicted_seconds = 0;
    friend bool operator==(const StepMeasurement &, const StepMeasurement &) = default;
};

// A launch of a plan on a backend (schema v3); its steps are StepMeasurements.
struct LaunchRecord {
    LaunchId id = 0;  // assigned by record_launch
    PlanId plan_id = 0;
    std::string backend;      // "cpu", "cuda", …
    std::string started_at;   // ISO 8601 UTC; empty: the time of recording
    std::string finished_at;  // ISO 8601 UTC; empty: the time of recording
    std::string status;       // "ok", "failed" or "cancelled"
    std::string error;        // why it failed or was cancelled; empty when ok
    std::string equivalence;  // how the outputs compared with the reference's
    std::string measurements_json = "{}";
};

// One calibration point of a target: a kernel's predicted and measured time.
struct CalibrationRow {
    std::string kernel_class;  // "gemm", "convolution", "elementwise", "reduction", "copy"
    double size = 0;           // the problem size in the kernel class's measure
    double predicted_seconds = 0;
    double measured_seconds = 0;
    std::optional<LaunchId> launch_id;  // the launch it came from; none: a probe (measuring the host)
    std::string created_at;             // ISO 8601 UTC, assigned by add_calibration
    std::string kernel = {};            // the op's kind ("layernorm", …); "" none (schema v4)
    int threads = 0;                    // the threads a kernel ran on; 0 a GPU's or not known (schema v4)
    std::string dtype = {};             // the kernel's element type ("bf16", …); "" not known (schema v5)
    std::string shape = {};             // the kernel's exact shape (plan::step_shape); "" not known (schema v6)
};

// ---- search runs (schema v3, docs/sessions.md "Search runs") ----------------------
using SearchRunId = std::int64_t;

// A Pareto-front search of an editor version on a target (docs/search.md). The
// store keeps the search's settings as the caller wrote them; it knows nothing of
// the search itself.
struct SearchRunRecord {
    SearchRunId id = 0;                // assigned by start_search_run
    VersionId version_id = 0;          // the editor version searched
    std::string target;                // the target's name
    std::string settings_json = "{}";  // devices, objectives, constraints, budgets … (JSON)
    std::uint64_t seed = 0;
    std::string started_at;   // ISO 8601 UTC, assigned by start_search_run
    std::string finished_at;  // empty while running — and for ever when the process died mid-run
    std::string status;       // "running", "finished", "stopped" or "failed"
    int candidates = 0;       // rows stored (listings and loads fill it)
    int on_front = 0;         // of them, marked on the front
};

// One evaluated candidate of a run: the choices that make it (search::Candidate's
// fields, so that Evaluator::materialize can build its plan again — no plan is
// stored) and what its plan predicts.
struct SearchCandidateRecord {
    std::int64_t row = 0;  // assigned by append_search_candidates
    int generation = 0;
    std::int64_t index = 0;          // evaluation order within the run
    std::string mutator;             // what made it ("seed", "reshard", …)
    std::vector<int> dim, parts;     // per operation of the search space: split dim (-1: whole), parts
    std::vector<int> dim2, parts2;   // empty, or per operation: a second split of those parts (-1: none)
    std::string rule;                // placement rule: "shard", "round-robin", "pipeline", "spread", …
    int stages = 0;                  // pipeline stages (0 for the other rules)
    bool fused = false;              // the fuse pass runs (rows written before fusion read as false)
    std::vector<int> unfused;        // when fused: the operations kept out of it (indices, ascending)
    std::vector<int> at;             // empty, or per operation: the device its map starts from (-1: the rule)
    std::vector<int> cuts;           // pipeline: empty, or the operations where stages 2, 3, … begin (ascending)
    std::string substitution;        // empty, or the substitution goal its graph comes of ("expand", "fuse")
    std::string key;                 // Candidate::key(), unique within a run
    std::string description;         // Space::describe: "fc1:0=4 … · shard"
    std::vector<double> objectives;  // in the run's objective order (predictions)
    double makespan_seconds = 0;     // predicted
    double peak_bytes = 0;           // predicted, the fullest device's
    int devices = 0;                 // devices that run a step
    double communication_bytes = 0;  // predicted bytes between devices
    double energy_joules = 0;        // predicted joules per step (0: the target gives no power)
    double violation = 0;            // 0: within the constraints
    std::string violated;            // which constraint, in words; empty when feasible
    bool on_front = false;
};

struct SearchRun {
    SearchRunRecord run;
    std::vector<SearchCandidateRecord> candidates;  // in evaluation order
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
    // Removes the project with its versions, placements, state, stages, plans and
    // their launches; values no longer referenced by any version are removed too.
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
    // Replaces the project's placements without a new version (the arrangement of
    // a version another writer saved of the same graph).
    Status set_placements(ProjectId project, const Placements &placements);

    // ---- studio state: key → JSON text, per session or per project
    Status set_state(StateScope scope, std::string_view key, std::string_view json);
    // The JSON text, or std::nullopt when the key is not set.
    Expected<std::optional<std::string>, StoreError> state(StateScope scope, std::string_view key) const;
    // The file a project continues: the studio records it when it makes a project
    // for a file it opened, and when the project is saved as another file; opening
    // that file again goes on with the project. Project state "source_file",
    // {"path": "/absolute/file"}; "" when none is recorded (or it does not parse).
    Expected<std::string, StoreError> source_file(ProjectId project) const;
    Status set_source_file(ProjectId project, std::string_view path);

    // ---- stages (schema v2)
    // Saves `stage_graph` as a version of kind "stage" of the same project and the
    // stage record pointing at it, in one transaction. Returns the stored record.
    Expected<StageRecord, StoreError> add_stage(const StageRecord &stage, const Graph &stage_graph);
    // The stages recorded on a version, by ordinal.
    Expected<std::vector<StageRecord>, StoreError> stages(VersionId version) const;

    // ---- hardware targets (schema v3), by name
    // Saves a target, replacing the one of the same name. `origin` is "user" or
    // "measured"; `target_json` must be JSON.
    Status save_target(std::string_view name, std::string_view origin, std::string_view target_json);
    // Every stored target, by name.
    Expected<std::vector<TargetRecord>, StoreError> targets() const;
    Status delete_target(std::string_view name);

    // ---- compiled plans (schema v3)
    // Saves a plan of `plan.version_id` (an editor version) or of one of its
    // stages, with the plan file's text, in one transaction. Returns the stored
    // record (id and created_at assigned).
    Expected<PlanRecord, StoreError> save_plan(const PlanRecord &plan, std::string_view plan_json);
    // The plans of a project, or of one of its versions, oldest first.
    Expected<std::vector<PlanRecord>, StoreError> plans(ProjectId project,
                                                        std::optional<VersionId> version = std::nullopt) const;
    // The plan file's text, as saved.
    Expected<std::string, StoreError> load_plan_json(PlanId plan) const;

    // ---- launches (schema v3)
    // Records a finished launch of a plan and its measured steps in one
    // transaction. Returns the stored record (id and times assigned).
    Expected<LaunchRecord, StoreError> record_launch(const LaunchRecord &launch,
                                                     const std::vector<StepMeasurement> &steps);
    // The launches of a plan, oldest first.
    Expected<std::vector<LaunchRecord>, StoreError> launches(PlanId plan) const;
    // The launches that ran ("ok") and gave calibration points of `target`, newest
    // first, at most `limit`.
    Expected<std::vector<LaunchRecord>, StoreError> calibrating_launches(std::string_view target, int limit) const;
    // The measured steps of a launch, by step.
    Expected<std::vector<StepMeasurement>, StoreError> step_measurements(LaunchId launch) const;

    // ---- calibration (schema v3), per target name
    // Adds calibration points of `target` in one transaction.
    Status add_calibration(std::string_view target, const std::vector<CalibrationRow> &rows);
    // The points of `target` by kernel class, then size.
    Expected<std::vector<CalibrationRow>, StoreError> calibration(std::string_view target) const;

    // ---- search runs (schema v3) ---------------------------------------------------
    // A run is started before its first candidate ("running"), fed candidates in
    // batches as the search goes, its front marked as it moves, and finished with
    // its outcome. A run whose process died stays "running" with what it had
    // committed. Candidates are kept as their choices and figures in the rows' JSON
    // columns (docs/sessions.md gives the layout).
    //
    // Starts a run of `run.version_id` (an editor version); returns the record with
    // id, started_at and status "running".
    Expected<SearchRunRecord, StoreError> start_search_run(const SearchRunRecord &run);
    // Appends candidates to a running run in one transaction (all or none).
    Status append_search_candidates(SearchRunId run, const std::vector<SearchCandidateRecord> &batch);
    // Marks the run's front: exactly the candidates whose keys are given (keys with
    // no row are ignored; the front may name candidates of an earlier batch).
    Status mark_search_front(SearchRunId run, const std::vector<std::string> &keys);
    // Ends a running run: "finished", "stopped" or "failed"; finished_at is now.
    Expected<SearchRunRecord, StoreError> finish_search_run(SearchRunId run, std::string_view status);
    // The runs of a project, or of one of its versions, oldest first, without candidates.
    Expected<std::vector<SearchRunRecord>, StoreError> search_runs(
        ProjectId project, std::optional<VersionId> version = std::nullopt) const;
    // A run with its candidates. A row whose JSON does not read is "damaged", the
    // message naming the run and the row.
    Expected<SearchRun, StoreError> load_search_run(SearchRunId run) const;

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

// The project named `name` (the newest when several are); 0 when none is.
Expected<ProjectId, StoreError> find_project(const Session &session, std::string_view name);
// The project's latest editor version when that is `g` (the same project-file
// text), else `g` saved as its next version of `kind`: what keeps work on a file
// (a plan launched, a search run from the CLI) on one version while the file is
// unchanged.
Expected<VersionId, StoreError> version_of_graph(Session &session, ProjectId project, const Graph &g,
                                                 std::string_view kind);

// Creates a NEW session file at an older schema version (store/schema.h).
Expected<std::unique_ptr<Session>, StoreError> create_session_at_version(const std::filesystem::path &path,
                                                                         int version);

// The default file name extension of a session.
inline constexpr std::string_view kSessionExtension = ".tapestry-session";

}  // namespace tapestry::store
