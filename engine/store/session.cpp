// The session store over the SQLite C API. Three things here are subtle; each is
// explained where it happens:
//  * a refused file must stay byte-identical, so it is examined through an
//    `immutable=1` read-only connection before any read-write connection exists;
//  * the session lock is flock() on our own descriptor of the file, and POSIX
//    record locks (which SQLite uses) are dropped by ANY close() of that file in
//    the process, so descriptors are parked while SQLite connections remain;
//  * tensor values are stored once per content and referenced from versions; a
//    per-session cache keyed by TensorData pointer makes unchanged values free.
#include "store/session.h"

#include <fcntl.h>
#include <sqlite3.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstring>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>
#include <unordered_map>

#include "common/checked_size.h"
#include "io/bounded_file.h"
#include "io/project_file.h"
#include "store/content_hash.h"
#include "store/schema.h"

namespace tapestry::store {
namespace {

namespace fs = std::filesystem;

constexpr int kBusyTimeoutMs = 250;

StoreError make_error(std::string code, std::string message) {
    return {std::move(code), std::move(message)};
}

// ---- the process-wide registry of session files in use ----------------------
//
// Per inode: whether a read-write Session holds it, how many SQLite connections
// of this process are open on it, and descriptors whose close() must wait until
// those connections are gone (closing one would silently drop SQLite's locks).
struct InodeKey {
    dev_t dev = 0;
    ino_t ino = 0;
    friend auto operator<=>(const InodeKey &, const InodeKey &) = default;
};
struct InodeUse {
    int writers = 0;
    int connections = 0;
    std::vector<int> parked;
};
std::mutex g_registry_mutex;
std::map<InodeKey, InodeUse> g_registry;

// Releases our descriptor (and its flock). Caller holds g_registry_mutex.
void release_fd(const InodeKey &key, int fd) {
    if (fd < 0) return;
    ::flock(fd, LOCK_UN);
    auto it = g_registry.find(key);
    if (it != g_registry.end() && it->second.connections > 0) {
        it->second.parked.push_back(fd);
        return;
    }
    ::close(fd);
}

// One SQLite connection of this process on `key` is gone. Caller holds the mutex.
void connection_closed(const InodeKey &key) {
    auto it = g_registry.find(key);
    if (it == g_registry.end()) return;
    if (--it->second.connections <= 0 && it->second.writers <= 0) {
        for (int fd : it->second.parked) ::close(fd);
        g_registry.erase(it);
    }
}

std::string uri_of(const fs::path &path, std::string_view query) {
    static const char hex[] = "0123456789ABCDEF";
    std::error_code ec;
    fs::path absolute = fs::absolute(path, ec);
    const std::string p = ec ? path.string() : absolute.string();
    std::string uri = "file:";
    for (unsigned char c : p) {
        const bool plain = std::isalnum(c) || c == '/' || c == '-' || c == '_' || c == '.' || c == '~';
        if (plain) {
            uri += static_cast<char>(c);
        } else {
            uri += '%';
            uri += hex[c >> 4];
            uri += hex[c & 15];
        }
    }
    uri += '?';
    uri += query;
    return uri;
}

// ---- prepared statements ------------------------------------------------------

class Stmt {
public:
    Stmt() = default;
    explicit Stmt(sqlite3_stmt *s) : s_(s) {}
    Stmt(Stmt &&o) noexcept : s_(std::exchange(o.s_, nullptr)), owned_(o.owned_) {}
    Stmt &operator=(Stmt &&) = delete;
    ~Stmt() {
        if (s_ && owned_)
            sqlite3_finalize(s_);
        else if (s_) {
            sqlite3_reset(s_);
            sqlite3_clear_bindings(s_);
        }
    }
    static Stmt borrowed(sqlite3_stmt *s) {
        Stmt st(s);
        st.owned_ = false;
        return st;
    }
    bool ok() const { return s_ != nullptr; }
    Stmt &bind(int i, std::int64_t v) {
        sqlite3_bind_int64(s_, i, v);
        return *this;
    }
    Stmt &bind(int i, int v) { return bind(i, static_cast<std::int64_t>(v)); }
    Stmt &bind(int i, std::optional<std::int64_t> v) {  // none: NULL
        if (v) return bind(i, *v);
        sqlite3_bind_null(s_, i);
        return *this;
    }
    Stmt &bind(int i, double v) {
        sqlite3_bind_double(s_, i, v);
        return *this;
    }
    Stmt &bind(int i, std::string_view v) {
        sqlite3_bind_text64(s_, i, v.data(), v.size(), SQLITE_TRANSIENT, SQLITE_UTF8);
        return *this;
    }
    Stmt &bind_static(int i, std::string_view v) {  // v outlives the statement's execution
        sqlite3_bind_text64(s_, i, v.data(), v.size(), SQLITE_STATIC, SQLITE_UTF8);
        return *this;
    }
    Stmt &bind_blob(int i, std::span<const std::byte> v) {
        sqlite3_bind_blob64(s_, i, v.data(), v.size(), SQLITE_STATIC);
        return *this;
    }
    int step() { return sqlite3_step(s_); }
    std::int64_t i64(int c) const { return sqlite3_column_int64(s_, c); }
    double real(int c) const { return sqlite3_column_double(s_, c); }
    std::string text(int c) const {
        const auto *p = reinterpret_cast<const char *>(sqlite3_column_text(s_, c));
        return p ? std::string(p, static_cast<size_t>(sqlite3_column_bytes(s_, c))) : std::string();
    }
    std::span<const std::byte> blob(int c) const {
        const void *p = sqlite3_column_blob(s_, c);
        return {static_cast<const std::byte *>(p), static_cast<size_t>(sqlite3_column_bytes(s_, c))};
    }
    bool is_null(int c) const { return sqlite3_column_type(s_, c) == SQLITE_NULL; }

private:
    sqlite3_stmt *s_ = nullptr;
    bool owned_ = true;
};

// The user_version and quick_check of a connection, as a refusal or nothing.
std::optional<StoreError> examine(sqlite3 *db, const std::string &file, int &version_out, bool quick_check) {
    auto damaged = [&](const std::string &why) {
        return make_error("damaged", "session " + file + " is damaged or not a Tapestry session (" + why +
                                         "); it was left unchanged");
    };
    sqlite3_stmt *raw = nullptr;
    int rc = sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &raw, nullptr);
    Stmt version(raw);
    if (rc == SQLITE_OK) rc = version.step();
    if (rc == SQLITE_NOTADB || rc == SQLITE_CORRUPT || (rc != SQLITE_ROW && rc != SQLITE_BUSY && rc != SQLITE_LOCKED))
        return damaged(sqlite3_errmsg(db));
    if (rc != SQLITE_ROW)
        return make_error("locked", "session " + file + " is busy in another process: " + sqlite3_errmsg(db));
    version_out = static_cast<int>(version.i64(0));
    if (version_out > current_schema_version())
        return make_error("newer-version", "session " + file + " was written by a newer Tapestry (schema version " +
                                               std::to_string(version_out) + "; this build reads up to " +
                                               std::to_string(current_schema_version()) + "); it was left unchanged");
    if (version_out < 0) return damaged("schema version " + std::to_string(version_out));
    if (!quick_check) return std::nullopt;
    raw = nullptr;
    rc = sqlite3_prepare_v2(db, "PRAGMA quick_check(5)", -1, &raw, nullptr);
    Stmt check(raw);
    if (rc != SQLITE_OK) return damaged(sqlite3_errmsg(db));
    std::string problems;
    while ((rc = check.step()) == SQLITE_ROW) {
        const std::string line = check.text(0);
        if (line != "ok") problems += (problems.empty() ? "" : "; ") + line;
    }
    if (rc != SQLITE_DONE) return damaged(sqlite3_errmsg(db));
    if (!problems.empty()) return damaged("integrity check: " + problems);
    // A file that SQLite reads but that is not ours (another application's
    // database) is refused too: a session has our tables or no tables at all.
    if (version_out == 0) {
        raw = nullptr;
        sqlite3_prepare_v2(db, "SELECT count(*) FROM sqlite_schema", -1, &raw, nullptr);
        Stmt tables(raw);
        if (tables.ok() && tables.step() == SQLITE_ROW && tables.i64(0) > 0)
            return make_error("invalid", "session " + file +
                                             " is an SQLite database but not a Tapestry session (it has tables "
                                             "and no schema version); it was left unchanged");
        return std::nullopt;
    }
    // A schema version is only a number another application may have set too:
    // the file must have every table of that version before anything writes to it
    // (switching to WAL alone changes the header).
    raw = nullptr;
    sqlite3_prepare_v2(db, "SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = ?", -1, &raw, nullptr);
    Stmt has_table(raw);
    if (!has_table.ok()) return damaged(sqlite3_errmsg(db));
    for (const std::string &table : tables_of_schema(version_out)) {
        has_table.bind(1, std::string_view(table));
        const int found = has_table.step();
        sqlite3_reset(raw);
        if (found == SQLITE_DONE)
            return make_error("invalid", "session " + file +
                                             " is an SQLite database but not a Tapestry session (its schema version " +
                                             "is " + std::to_string(version_out) + " but it has no table '" + table +
                                             "'); it was left unchanged");
        if (found != SQLITE_ROW) return damaged(sqlite3_errmsg(db));
    }
    return std::nullopt;
}

std::string shape_text(const ZPoint &shape) {
    std::string s;
    for (size_t i = 0; i < shape.coords().size(); ++i) s += (i ? "," : "") + std::to_string(shape.coords()[i]);
    return s;
}

std::optional<ZPoint> parse_shape(const std::string &text) {
    std::vector<Coord> coords;
    const char *p = text.data(), *end = text.data() + text.size();
    while (p < end) {
        Coord c = 0;
        auto [next, ec] = std::from_chars(p, end, c);
        if (ec != std::errc() || c < 0) return std::nullopt;
        coords.push_back(c);
        p = next;
        if (p < end && *p++ != ',') return std::nullopt;
    }
    return ZPoint(std::move(coords));
}

bool editor_kind(std::string_view kind) {
    return kind == "save" || kind == "autosave" || kind == "import";
}

// Why a plan's own fields cannot be saved, or nothing.
std::optional<StoreError> plan_refusal(const PlanRecord &plan, std::string_view plan_json) {
    const auto invalid = [](const std::string &why) { return make_error("invalid", "a plan " + why); };
    if (plan.target.empty()) return invalid("needs a target name");
    if (plan.devices < 1) return invalid("needs at least one device (got " + std::to_string(plan.devices) + ")");
    if (plan.summary.find('\n') != std::string::npos) return invalid("summary is one line");
    if (!std::isfinite(plan.makespan_seconds) || plan.makespan_seconds < 0)
        return invalid("needs a finite, non-negative predicted makespan");
    if (plan.peak_bytes < 0) return invalid("needs a non-negative predicted peak memory");
    if (!nlohmann::json::accept(plan_json)) return invalid("for target " + plan.target + " is not valid JSON");
    return std::nullopt;
}

bool launch_status(std::string_view status) {
    return status == "ok" || status == "failed" || status == "cancelled";
}

}  // namespace

// ---- Session::Impl ---------------------------------------------------------------

struct Session::Impl {
    sqlite3 *db = nullptr;
    int lock_fd = -1;
    InodeKey key;
    bool writer = false;
    int schema = 0;
    std::string file;  // the path as the user named it, for messages
    mutable std::mutex mutex;
    mutable std::unordered_map<std::string, sqlite3_stmt *> statements;

    struct CachedValue {
        std::weak_ptr<const TensorData> ref;
        std::int64_t value_id = 0;
    };
    // TensorData (immutable, shared) → its row. Entries whose TensorData died are
    // dropped on sight (the address may be reused by another value).
    mutable std::unordered_map<const TensorData *, CachedValue> value_cache;
    // Rows → TensorData loaded by this session, so that two loads share values.
    mutable std::unordered_map<std::int64_t, std::weak_ptr<const TensorData>> loaded;

    ~Impl() {
        std::lock_guard registry(g_registry_mutex);
        for (auto &[sql, s] : statements) sqlite3_finalize(s);
        if (db) {
            sqlite3_close_v2(db);
            if (writer) --g_registry[key].writers;
            connection_closed(key);
        }
        release_fd(key, lock_fd);
    }

    StoreError sql_error(const std::string &what) const {
        const int rc = sqlite3_extended_errcode(db);
        const std::string detail = file + ": " + what + ": " + sqlite3_errmsg(db);
        switch (rc & 0xff) {
            case SQLITE_BUSY:
            case SQLITE_LOCKED: return make_error("locked", "session " + detail);
            case SQLITE_READONLY: return make_error("read-only", "session " + detail);
            case SQLITE_CORRUPT:
            case SQLITE_NOTADB: return make_error("damaged", "session " + detail);
            case SQLITE_CONSTRAINT: return make_error("invalid", "session " + detail);
            default: return make_error("io", "session " + detail);
        }
    }

    // A cached statement, reset on release. Caller holds `mutex`.
    Stmt prepare(const char *sql) const {
        auto it = statements.find(sql);
        if (it == statements.end()) {
            sqlite3_stmt *s = nullptr;
            if (sqlite3_prepare_v3(db, sql, -1, SQLITE_PREPARE_PERSISTENT, &s, nullptr) != SQLITE_OK) return Stmt();
            it = statements.emplace(sql, s).first;
        }
        return Stmt::borrowed(it->second);
    }

    bool exec(const char *sql) const { return sqlite3_exec(db, sql, nullptr, nullptr, nullptr) == SQLITE_OK; }

    std::optional<StoreError> require_writer() const {
        if (writer) return std::nullopt;
        return make_error("read-only", "session " + file + " was opened read-only");
    }

    // Refuses a call that needs tables a file at an older schema lacks (a session
    // made by create_session_at_version, or read_only, is not migrated).
    std::optional<StoreError> require_schema(int version, std::string_view what) const {
        if (schema >= version) return std::nullopt;
        return make_error("invalid", "session " + file + " is at schema " + std::to_string(schema) + "; " +
                                         std::string(what) + " need schema " + std::to_string(version));
    }

    std::optional<StoreError> migrate(int target) {
        for (const Migration &m : migrations()) {
            if (m.version <= schema || m.version > target) continue;
            if (!exec("BEGIN IMMEDIATE"))
                return sql_error("cannot start the migration to schema " + std::to_string(m.version));
            const std::string sql = std::string(m.sql) + "\nPRAGMA user_version = " + std::to_string(m.version) + ";";
            if (!exec(sql.c_str())) {
                StoreError e = sql_error("migration to schema " + std::to_string(m.version) + " failed");
                exec("ROLLBACK");
                return e;
            }
            if (!exec("COMMIT")) {
                StoreError e = sql_error("cannot commit the migration to schema " + std::to_string(m.version));
                exec("ROLLBACK");
                return e;
            }
            schema = m.version;
        }
        return std::nullopt;
    }

    // RAII transaction: BEGIN IMMEDIATE now, ROLLBACK unless committed.
    struct Transaction {
        const Impl &impl;
        bool active = false;
        explicit Transaction(const Impl &i) : impl(i) { active = impl.exec("BEGIN IMMEDIATE"); }
        bool commit() {
            if (!active) return false;
            if (!impl.exec("COMMIT")) return false;
            active = false;
            return true;
        }
        ~Transaction() {
            if (active) impl.exec("ROLLBACK");
        }
    };

    // Does the project exist? Caller holds `mutex`.
    bool has_project(ProjectId id) const {
        Stmt s = prepare("SELECT 1 FROM projects WHERE id = ?");
        return s.ok() && s.bind(1, id).step() == SQLITE_ROW;
    }

    StoreError no_project(ProjectId id) const {
        return make_error("not-found", "session " + file + " has no project with id " + std::to_string(id));
    }

    // Replaces the project's placements. Caller holds `mutex`, in a transaction.
    std::optional<StoreError> write_placements(ProjectId project, const Placements &placements) const {
        Stmt clear = prepare("DELETE FROM placements WHERE project_id = ?");
        if (!clear.ok() || clear.bind(1, project).step() != SQLITE_DONE) return sql_error("cannot save placements");
        for (const auto &[node, p] : placements) {
            Stmt put = prepare("INSERT INTO placements (project_id, node_id, x, y, pinned) VALUES (?, ?, ?, ?, ?)");
            if (!put.ok()) return sql_error("cannot save placements");
            put.bind(1, project).bind_static(2, node).bind(3, p.x).bind(4, p.y).bind(5, p.pinned ? 1 : 0);
            if (put.step() != SQLITE_DONE) return sql_error("cannot save the placement of " + node);
        }
        return std::nullopt;
    }

    // Does row `id` of `table` exist? Caller holds `mutex`.
    bool has_row(std::string_view table, std::int64_t id) const {
        const std::string sql = "SELECT 1 FROM " + std::string(table) + " WHERE id = ?";
        Stmt s = prepare(sql.c_str());
        return s.ok() && s.bind(1, id).step() == SQLITE_ROW;
    }

    StoreError no_row(std::string_view what, std::int64_t id) const {
        return make_error("not-found",
                          "session " + file + " has no " + std::string(what) + " with id " + std::to_string(id));
    }

    // `text` as the store writes times (ISO 8601 UTC with milliseconds), the
    // present when empty; none when SQLite does not read it as a time. Caller
    // holds `mutex`.
    std::optional<std::string> timestamp(std::string_view text) const {
        Stmt s = prepare("SELECT strftime('%Y-%m-%dT%H:%M:%fZ', COALESCE(NULLIF(?, ''), 'now'))");
        if (!s.ok() || s.bind(1, text).step() != SQLITE_ROW || s.is_null(0)) return std::nullopt;
        return s.text(0);
    }

    // Are the stored bytes of row `id` equal to `value`'s? Read in chunks.
    bool same_bytes(std::int64_t id, const TensorData &value) const {
        sqlite3_blob *blob = nullptr;
        if (sqlite3_blob_open(db, "main", "tensor_values", "bytes", id, 0, &blob) != SQLITE_OK) {
            sqlite3_blob_close(blob);
            return false;
        }
        const size_t size = static_cast<size_t>(sqlite3_blob_bytes(blob));
        bool same = size == value.bytes.size();
        std::vector<std::byte> buffer(std::min<size_t>(size, size_t{1} << 20));
        for (size_t at = 0; same && at < size; at += buffer.size()) {
            const size_t n = std::min(buffer.size(), size - at);
            same = sqlite3_blob_read(blob, buffer.data(), static_cast<int>(n), static_cast<int>(at)) == SQLITE_OK &&
                   std::memcmp(buffer.data(), value.bytes.data() + at, n) == 0;
        }
        sqlite3_blob_close(blob);
        return same;
    }

    // The row holding `value`, inserted if no row has its content. New cache
    // entries go to `pending` and become visible only when the transaction commits.
    std::optional<std::int64_t> value_row(const std::shared_ptr<const TensorData> &value,
                                          std::vector<std::pair<const TensorData *, CachedValue>> &pending) const {
        auto cached = value_cache.find(value.get());
        if (cached != value_cache.end()) {
            if (!cached->second.ref.expired()) return cached->second.value_id;
            value_cache.erase(cached);
        }
        const std::string hash = content_hash(*value).hex();
        const std::string dtype(dtype_name(value->dtype));
        const std::string shape = shape_text(value->shape);
        std::optional<std::int64_t> row;
        {
            Stmt find = prepare("SELECT id, dtype, shape, byte_count FROM tensor_values WHERE hash = ?");
            if (!find.ok()) return std::nullopt;
            find.bind_static(1, hash);
            while (!row && find.step() == SQLITE_ROW) {
                if (find.text(1) == dtype && find.text(2) == shape &&
                    find.i64(3) == static_cast<std::int64_t>(value->bytes.size()) && same_bytes(find.i64(0), *value))
                    row = find.i64(0);
            }
        }
        if (!row) {
            Stmt insert =
                prepare("INSERT INTO tensor_values (hash, dtype, shape, byte_count, bytes) VALUES (?, ?, ?, ?, ?)");
            if (!insert.ok()) return std::nullopt;
            insert.bind_static(1, hash).bind_static(2, dtype).bind_static(3, shape);
            insert.bind(4, static_cast<std::int64_t>(value->bytes.size())).bind_blob(5, value->bytes);
            if (insert.step() != SQLITE_DONE) return std::nullopt;
            row = sqlite3_last_insert_rowid(db);
        }
        pending.emplace_back(value.get(), CachedValue{value, *row});
        return row;
    }

    // Inserts `g` as the project's next version (inside the caller's transaction).
    Expected<VersionInfo, StoreError> insert_version(
        ProjectId project, const Graph &g, std::string_view kind,
        std::vector<std::pair<const TensorData *, CachedValue>> &pending) const {
        // The graph JSON without values: they live in tensor_values, once.
        Graph bare = g;
        for (const TensorPtr &t : g.tensors()) {
            if (!t->value) continue;
            Tensor copy = *t;
            copy.value = nullptr;
            bare.put_tensor(std::move(copy));
        }
        std::string json;
        try {
            json = serialize_project(bare);
        } catch (const std::exception &e) {
            return unexpected(make_error("io", "session " + file + ": cannot serialise the graph: " + e.what()));
        }
        Stmt next = prepare("SELECT COALESCE(MAX(number), 0) + 1 FROM graph_versions WHERE project_id = ?");
        if (!next.ok() || next.bind(1, project).step() != SQLITE_ROW)
            return unexpected(sql_error("cannot number the version"));
        VersionInfo info;
        info.project_id = project;
        info.number = static_cast<int>(next.i64(0));
        info.kind = std::string(kind);
        info.node_count = static_cast<int>(g.node_count());
        {
            Stmt insert = prepare(
                "INSERT INTO graph_versions (project_id, number, kind, saved_at, node_count, graph_json) "
                "VALUES (?, ?, ?, strftime('%Y-%m-%dT%H:%M:%fZ','now'), ?, ?) RETURNING id, saved_at");
            if (!insert.ok()) return unexpected(sql_error("cannot save the version"));
            insert.bind(1, project).bind(2, info.number).bind_static(3, info.kind).bind(4, info.node_count);
            insert.bind_static(5, json);
            if (insert.step() != SQLITE_ROW) return unexpected(sql_error("cannot save the version"));
            info.id = insert.i64(0);
            info.saved_at = insert.text(1);
            if (insert.step() != SQLITE_DONE) return unexpected(sql_error("cannot save the version"));
        }
        for (const TensorPtr &t : g.tensors()) {
            if (!t->value) continue;
            const auto row = value_row(t->value, pending);
            if (!row) return unexpected(sql_error("cannot store the value of tensor '" + t->id.value + "'"));
            Stmt link = prepare("INSERT INTO version_values (version_id, tensor_id, value_id) VALUES (?, ?, ?)");
            if (!link.ok()) return unexpected(sql_error("cannot store the value of tensor '" + t->id.value + "'"));
            link.bind(1, info.id).bind_static(2, t->id.value).bind(3, *row);
            if (link.step() != SQLITE_DONE)
                return unexpected(sql_error("cannot store the value of tensor '" + t->id.value + "'"));
        }
        return info;
    }

    void adopt(std::vector<std::pair<const TensorData *, CachedValue>> &pending) const {
        for (auto &[ptr, entry] : pending) value_cache[ptr] = std::move(entry);
        // Keep the cache from growing without bound over a long autosave stream.
        if (value_cache.size() > 4096) std::erase_if(value_cache, [](const auto &e) { return e.second.ref.expired(); });
    }

    VersionInfo version_from(const Stmt &s) const {  // columns: id, project_id, number, kind, saved_at, node_count
        VersionInfo v;
        v.id = s.i64(0);
        v.project_id = s.i64(1);
        v.number = static_cast<int>(s.i64(2));
        v.kind = s.text(3);
        v.saved_at = s.text(4);
        v.node_count = static_cast<int>(s.i64(5));
        return v;
    }

    Expected<Graph, StoreError> load(VersionId version) const {
        std::string json;
        int number = 0;
        {
            Stmt s = prepare("SELECT graph_json, number FROM graph_versions WHERE id = ?");
            if (!s.ok()) return unexpected(sql_error("cannot read version " + std::to_string(version)));
            const int rc = s.bind(1, version).step();
            if (rc == SQLITE_DONE)
                return unexpected(make_error(
                    "not-found", "session " + file + " has no graph version with id " + std::to_string(version)));
            if (rc != SQLITE_ROW) return unexpected(sql_error("cannot read version " + std::to_string(version)));
            json = s.text(0);
            number = static_cast<int>(s.i64(1));
        }
        const std::string source = file + " (version " + std::to_string(number) + ")";
        LoadResult parsed = parse_project(json, source);
        if (!parsed.ok()) {
            std::string why = parsed.issues.empty() ? "unreadable graph" : parsed.issues.front().message;
            return unexpected(make_error("damaged", "session " + file + ": graph version " + std::to_string(number) +
                                                        " cannot be read: " + why));
        }
        Graph g = std::move(parsed.graph);
        Stmt values = prepare(
            "SELECT vv.tensor_id, tv.id, tv.dtype, tv.shape, tv.byte_count, tv.bytes FROM version_values vv "
            "JOIN tensor_values tv ON tv.id = vv.value_id WHERE vv.version_id = ?");
        if (!values.ok()) return unexpected(sql_error("cannot read the values of version " + std::to_string(number)));
        values.bind(1, version);
        int rc = 0;
        while ((rc = values.step()) == SQLITE_ROW) {
            const TensorId id(values.text(0));
            const std::int64_t row = values.i64(1);
            const Tensor *t = g.find_tensor(id);
            auto bad = [&](const std::string &why) {
                return make_error("damaged", "session " + file + ": value of tensor '" + id.value + "' in version " +
                                                 std::to_string(number) + " " + why);
            };
            if (!t) return unexpected(bad("names no tensor of the graph"));
            std::shared_ptr<const TensorData> data;
            if (auto it = loaded.find(row); it != loaded.end()) data = it->second.lock();
            if (!data) {
                const auto dtype = parse_dtype(values.text(2));
                const auto shape = parse_shape(values.text(3));
                if (!dtype || !shape) return unexpected(bad("has a bad dtype or shape"));
                auto fresh = std::make_shared<TensorData>();
                fresh->dtype = *dtype;
                fresh->shape = *shape;
                const auto bytes = values.blob(5);
                const std::int64_t expected = size_mul(shape->product(), dtype_bytes(*dtype));  // saturates
                if (static_cast<std::int64_t>(bytes.size()) != expected || values.i64(4) != expected)
                    return unexpected(
                        bad("holds " + std::to_string(bytes.size()) + " bytes, expected " + std::to_string(expected)));
                fresh->bytes.assign(bytes.begin(), bytes.end());
                data = std::move(fresh);
                loaded[row] = data;
                value_cache[data.get()] = CachedValue{data, row};
            }
            Tensor copy = *t;
            copy.value = std::move(data);
            g.put_tensor(std::move(copy));
        }
        if (rc != SQLITE_DONE)
            return unexpected(sql_error("cannot read the values of version " + std::to_string(number)));
        return g;
    }
};

// ---- opening ---------------------------------------------------------------------

namespace {

struct OpenRequest {
    fs::path path;
    OpenMode mode = OpenMode::read_write;
    int target_version = 0;  // schema to migrate to
    bool must_create = false;
    std::chrono::milliseconds lock_wait{0};  // how long to wait for another process's lock
};

std::string locked_message(const std::string &file, bool readers_only) {
    if (readers_only)
        return "session " + file +
               " is being read by another Tapestry process (session list or export); try again when it has finished";
    return "session " + file + " is open in another Tapestry window or process";
}

// Takes the flock `operation` (LOCK_EX or LOCK_SH) on `fd`, retrying until `wait`
// has passed: another process's import or save usually takes a moment, and a
// script that imports twice in a row should not fail on it. Polls rather than
// blocking so that the wait is bounded.
bool lock_within(int fd, int operation, std::chrono::milliseconds wait) {
    const auto deadline = std::chrono::steady_clock::now() + wait;
    for (;;) {
        if (::flock(fd, operation | LOCK_NB) == 0) return true;
        if (errno != EWOULDBLOCK && errno != EINTR) return false;
        if (std::chrono::steady_clock::now() >= deadline) return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
}

std::string waited_text(std::chrono::milliseconds wait) {
    if (wait.count() <= 0) return "";
    const auto ms = wait.count();
    return " (waited " + (ms % 1000 == 0 ? std::to_string(ms / 1000) + " s" : std::to_string(ms) + " ms") + ")";
}

}  // namespace

Session::Session(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Session::~Session() = default;

namespace {

// Opens `impl` as the request says; returns why not. On failure the caller
// destroys `impl` (after the registry lock taken here is released).
std::optional<StoreError> open_into(const OpenRequest &request, Session::Impl *impl) {
    impl->file = request.path.string();
    const std::string &file = impl->file;
    const bool write = request.mode == OpenMode::read_write;

    std::lock_guard registry(g_registry_mutex);
    std::error_code ec;
    const bool exists = fs::exists(request.path, ec);
    if (ec) return make_error("io", "session " + file + ": " + ec.message());
    if (exists && request.must_create) return make_error("invalid", "session " + file + " already exists");
    if (exists && fs::is_directory(request.path, ec))
        return make_error("invalid", "session " + file + " is a folder, not a session file");
    // A FIFO would block the open below (read-only) and a device would be read
    // or written as if it were an empty session: only regular files are sessions.
    if (exists) {
        if (std::string why = regular_file_refusal(request.path, "a session file"); !why.empty())
            return make_error("invalid", "session " + file + " " + why + "; it was left unchanged");
    }

    // Our descriptor of the file: its flock is the session lock.
    int fd = -1;
    bool writable = write;
    if (!exists) {
        if (!write) return make_error("not-found", "session " + file + " does not exist");
        fd = ::open(request.path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (fd < 0 && errno != EEXIST) {
            const int err = errno;
            if (err == EACCES || err == EROFS || err == EPERM)
                return make_error("read-only", "session " + file + " cannot be created: its folder is read-only");
            return make_error("io", "session " + file + " cannot be created: " + std::strerror(err));
        }
    }
    if (fd < 0) {
        // O_NONBLOCK: should the path have become a FIFO since the check above,
        // the open returns at once and fstat() below refuses it.
        fd = write ? ::open(request.path.c_str(), O_RDWR | O_NONBLOCK | O_NOCTTY | O_CLOEXEC) : -1;
        if (fd < 0 && (!write || errno == EACCES || errno == EROFS || errno == EPERM)) {
            writable = false;
            fd = ::open(request.path.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
        }
        if (fd < 0) {
            const int err = errno;
            if (err == ENOENT) return make_error("not-found", "session " + file + " does not exist");
            return make_error("io", "session " + file + " cannot be opened: " + std::strerror(err));
        }
    }
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
        const int err = errno;
        ::close(fd);
        return make_error("io", "session " + file + ": " + std::strerror(err));
    }
    if (!S_ISREG(st.st_mode)) {
        ::close(fd);
        return make_error("invalid", "session " + file + " is not a regular file; it was left unchanged");
    }
    impl->key = {st.st_dev, st.st_ino};
    InodeUse &use = g_registry[impl->key];
    auto fail = [&](StoreError e) {
        release_fd(impl->key, fd);
        if (use.connections <= 0 && use.writers <= 0) g_registry.erase(impl->key);
        return e;
    };
    const bool in_use_here = use.connections > 0;

    // The lock. A read-write session takes it exclusively. A read-only one reads
    // beside a writer through SQLite (WAL); with no writer, it reads the file as
    // immutable and holds a shared lock meanwhile so that no writer starts under it.
    bool immutable = false;
    if (write) {
        if (use.writers > 0) return fail(make_error("locked", locked_message(file, false)));
        // The registry mutex stays held while waiting: other threads of this
        // process open or close sessions only after it (the studio does not wait).
        if (!lock_within(fd, LOCK_EX, request.lock_wait)) {
            const bool readers_only = ::flock(fd, LOCK_SH | LOCK_NB) == 0;
            return fail(make_error("locked", locked_message(file, readers_only) + waited_text(request.lock_wait)));
        }
    } else if (!in_use_here && use.writers == 0 && ::flock(fd, LOCK_SH | LOCK_NB) == 0) {
        immutable = true;
    }

    // A WAL left by a writer that was killed holds committed transactions that
    // only SQLite's recovery can read; the main file alone may then be mid-checkpoint.
    const fs::path wal = request.path.string() + "-wal";
    const bool pending_wal = fs::exists(wal, ec) && fs::file_size(wal, ec) > 0;
    if (pending_wal) immutable = false;
    // The size now that the lock is ours: a process that created the file a
    // moment ago may have written the schema while we waited for its lock.
    if (::fstat(fd, &st) != 0) return fail(make_error("io", "session " + file + ": " + std::strerror(errno)));
    // Whether we created the file does not matter here: another process may have
    // opened it between our create and our lock, and written the schema first —
    // into its WAL, too, which the main file's size does not show.
    const bool empty_file = st.st_size == 0 && !pending_wal;

    // Examine the file before any read-write connection exists: an immutable
    // connection reads without locks, journal or shared-memory files, and so
    // cannot change anything, even for a file we end up refusing.
    int version = 0;
    bool examined = false;
    if (!empty_file && !pending_wal && !in_use_here) {
        sqlite3 *probe = nullptr;
        const int rc = sqlite3_open_v2(uri_of(request.path, "immutable=1").c_str(), &probe,
                                       SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, nullptr);
        std::optional<StoreError> refused;
        if (rc != SQLITE_OK)
            refused = make_error("io", "session " + file + " cannot be read: " + sqlite3_errmsg(probe));
        else
            refused = examine(probe, file, version, true);
        sqlite3_close_v2(probe);  // no other connection of ours is on the file: closing its descriptor is safe
        if (refused) return fail(*refused);
        examined = true;
    }
    if (write && !writable)
        return fail(make_error("read-only", "session " + file +
                                                " is read-only on disk; Tapestry will not write to it (it was left "
                                                "unchanged)"));
    if (!write && empty_file) return fail(make_error("damaged", "session " + file + " is empty"));

    // The connection the session uses.
    sqlite3 *db = nullptr;
    std::string uri = uri_of(request.path, write ? "mode=rw" : immutable ? "immutable=1" : "mode=ro");
    const int flags = (write ? SQLITE_OPEN_READWRITE : SQLITE_OPEN_READONLY) | SQLITE_OPEN_URI | SQLITE_OPEN_FULLMUTEX;
    const int rc = sqlite3_open_v2(uri.c_str(), &db, flags, nullptr);
    ++use.connections;
    impl->db = db;  // closed by ~Impl from here on
    if (rc != SQLITE_OK) {
        StoreError e = make_error("io", "session " + file + " cannot be opened: " + sqlite3_errmsg(db));
        impl->lock_fd = fd;
        return e;
    }
    // Until the file is accepted, closing must not checkpoint into it.
    sqlite3_db_config(db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, nullptr);
    sqlite3_busy_timeout(db, std::max(kBusyTimeoutMs, static_cast<int>(request.lock_wait.count())));
    impl->lock_fd = fd;
    if (!examined && !empty_file) {
        if (auto refused = examine(db, file, version, true)) return *refused;
    }
    impl->schema = version;
    impl->writer = write;
    if (!write) {
        if (!immutable) impl->exec("PRAGMA query_only = ON");
        return std::nullopt;
    }
    ++use.writers;
    sqlite3_db_config(db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 0, nullptr);
    // WAL: readers never block the writer and a killed writer loses nothing it
    // committed. synchronous=NORMAL: a power cut may lose the last commits, never
    // the file's consistency (docs/sessions.md).
    if (!impl->exec("PRAGMA journal_mode = WAL") || !impl->exec("PRAGMA foreign_keys = ON") ||
        !impl->exec("PRAGMA synchronous = NORMAL"))
        return impl->sql_error("cannot configure the session");
    return impl->migrate(request.target_version);
}

Expected<std::unique_ptr<Session::Impl>, StoreError> open_impl(const OpenRequest &request) {
    auto impl = std::make_unique<Session::Impl>();
    if (auto error = open_into(request, impl.get())) return unexpected(std::move(*error));
    return impl;
}

}  // namespace

Expected<std::unique_ptr<Session>, StoreError> Session::open(const std::filesystem::path &path, OpenMode mode,
                                                             std::chrono::milliseconds lock_wait) {
    OpenRequest request{path, mode, current_schema_version(), false, lock_wait};
    auto impl = open_impl(request);
    if (!impl) return unexpected(impl.error());
    std::unique_ptr<Session> s(new Session(std::move(impl).value()));
    s->path_ = path;
    s->mode_ = mode;
    return s;
}

Expected<std::unique_ptr<Session>, StoreError> create_session_at_version(const std::filesystem::path &path,
                                                                         int version) {
    if (version < 1 || version > current_schema_version())
        return unexpected(make_error("invalid", "no schema version " + std::to_string(version)));
    OpenRequest request{path, OpenMode::read_write, version, true};
    auto impl = open_impl(request);
    if (!impl) return unexpected(impl.error());
    std::unique_ptr<Session> s(new Session(std::move(impl).value()));
    s->path_ = path;
    s->mode_ = OpenMode::read_write;
    return s;
}

int Session::schema_version() const {
    std::lock_guard lock(impl_->mutex);
    return impl_->schema;
}

// ---- projects ----------------------------------------------------------------------

Expected<std::vector<ProjectInfo>, StoreError> Session::projects() const {
    std::lock_guard lock(impl_->mutex);
    Stmt s = impl_->prepare(
        "SELECT p.id, p.name, p.updated_at, "
        "(SELECT count(*) FROM graph_versions v WHERE v.project_id = p.id AND v.kind <> 'stage'), "
        "(SELECT v.id FROM graph_versions v WHERE v.project_id = p.id AND v.kind <> 'stage' "
        " ORDER BY v.number DESC LIMIT 1) "
        "FROM projects p ORDER BY p.id");
    if (!s.ok()) return unexpected(impl_->sql_error("cannot list projects"));
    std::vector<ProjectInfo> out;
    int rc = 0;
    while ((rc = s.step()) == SQLITE_ROW) {
        ProjectInfo p;
        p.id = s.i64(0);
        p.name = s.text(1);
        p.updated_at = s.text(2);
        p.version_count = static_cast<int>(s.i64(3));
        p.latest_version_id = s.is_null(4) ? 0 : s.i64(4);
        out.push_back(std::move(p));
    }
    if (rc != SQLITE_DONE) return unexpected(impl_->sql_error("cannot list projects"));
    return out;
}

Expected<ProjectInfo, StoreError> Session::project(ProjectId id) const {
    auto all = projects();
    if (!all) return unexpected(all.error());
    for (ProjectInfo &p : *all)
        if (p.id == id) return std::move(p);
    return unexpected(impl_->no_project(id));
}

Expected<ProjectId, StoreError> Session::create_project(std::string_view name) {
    std::lock_guard lock(impl_->mutex);
    if (auto e = impl_->require_writer()) return unexpected(*e);
    if (name.empty()) return unexpected(make_error("invalid", "a project needs a name"));
    Stmt s = impl_->prepare(
        "INSERT INTO projects (name, created_at, updated_at) VALUES (?, strftime('%Y-%m-%dT%H:%M:%fZ','now'), "
        "strftime('%Y-%m-%dT%H:%M:%fZ','now'))");
    if (!s.ok() || s.bind(1, name).step() != SQLITE_DONE)
        return unexpected(impl_->sql_error("cannot create project '" + std::string(name) + "'"));
    return static_cast<ProjectId>(sqlite3_last_insert_rowid(impl_->db));
}

Status Session::rename_project(ProjectId id, std::string_view name) {
    std::lock_guard lock(impl_->mutex);
    if (auto e = impl_->require_writer()) return unexpected(*e);
    if (name.empty()) return unexpected(make_error("invalid", "a project needs a name"));
    Stmt s =
        impl_->prepare("UPDATE projects SET name = ?, updated_at = strftime('%Y-%m-%dT%H:%M:%fZ','now') WHERE id = ?");
    if (!s.ok() || s.bind(1, name).bind(2, id).step() != SQLITE_DONE)
        return unexpected(impl_->sql_error("cannot rename project " + std::to_string(id)));
    if (sqlite3_changes(impl_->db) == 0) return unexpected(impl_->no_project(id));
    return Done{};
}

Status Session::delete_project(ProjectId id) {
    std::lock_guard lock(impl_->mutex);
    if (auto e = impl_->require_writer()) return unexpected(*e);
    Impl::Transaction tx(*impl_);
    if (!tx.active) return unexpected(impl_->sql_error("cannot start a transaction"));
    {
        Stmt s = impl_->prepare("DELETE FROM projects WHERE id = ?");
        if (!s.ok() || s.bind(1, id).step() != SQLITE_DONE)
            return unexpected(impl_->sql_error("cannot delete project " + std::to_string(id)));
    }
    if (sqlite3_changes(impl_->db) == 0) return unexpected(impl_->no_project(id));
    // Values only this project's versions referred to.
    if (!impl_->exec("DELETE FROM tensor_values WHERE id NOT IN (SELECT value_id FROM version_values)"))
        return unexpected(impl_->sql_error("cannot remove unused values"));
    if (!tx.commit()) return unexpected(impl_->sql_error("cannot commit the deletion"));
    impl_->value_cache.clear();
    impl_->loaded.clear();
    return Done{};
}

// ---- versions ------------------------------------------------------------------------

Expected<VersionInfo, StoreError> Session::save_version(ProjectId project, const Graph &g, std::string_view kind,
                                                        const Placements *placements) {
    std::lock_guard lock(impl_->mutex);
    if (auto e = impl_->require_writer()) return unexpected(*e);
    if (!editor_kind(kind))
        return unexpected(
            make_error("invalid", "version kind '" + std::string(kind) + "' is not one of save, autosave, import"));
    Impl::Transaction tx(*impl_);
    if (!tx.active) return unexpected(impl_->sql_error("cannot start a transaction"));
    if (!impl_->has_project(project)) return unexpected(impl_->no_project(project));
    std::vector<std::pair<const TensorData *, Impl::CachedValue>> pending;
    auto info = impl_->insert_version(project, g, kind, pending);
    if (!info) return unexpected(info.error());
    if (placements)
        if (auto e = impl_->write_placements(project, *placements)) return unexpected(*e);
    {
        Stmt touch = impl_->prepare("UPDATE projects SET updated_at = ? WHERE id = ?");
        if (!touch.ok() || touch.bind(1, info->saved_at).bind(2, project).step() != SQLITE_DONE)
            return unexpected(impl_->sql_error("cannot update the project"));
    }
    if (!tx.commit()) return unexpected(impl_->sql_error("cannot commit the save"));
    impl_->adopt(pending);
    return info;
}

Status Session::set_placements(ProjectId project, const Placements &placements) {
    std::lock_guard lock(impl_->mutex);
    if (auto e = impl_->require_writer()) return unexpected(*e);
    Impl::Transaction tx(*impl_);
    if (!tx.active) return unexpected(impl_->sql_error("cannot start a transaction"));
    if (!impl_->has_project(project)) return unexpected(impl_->no_project(project));
    if (auto e = impl_->write_placements(project, placements)) return unexpected(*e);
    if (!tx.commit()) return unexpected(impl_->sql_error("cannot commit the placements"));
    return Done{};
}

Expected<std::vector<VersionInfo>, StoreError> Session::versions(ProjectId project, bool include_stages) const {
    std::lock_guard lock(impl_->mutex);
    if (!impl_->has_project(project)) return unexpected(impl_->no_project(project));
    Stmt s = impl_->prepare(
        "SELECT id, project_id, number, kind, saved_at, node_count FROM graph_versions "
        "WHERE project_id = ? AND (? OR kind <> 'stage') ORDER BY number");
    if (!s.ok()) return unexpected(impl_->sql_error("cannot list versions"));
    s.bind(1, project).bind(2, include_stages ? 1 : 0);
    std::vector<VersionInfo> out;
    int rc = 0;
    while ((rc = s.step()) == SQLITE_ROW) out.push_back(impl_->version_from(s));
    if (rc != SQLITE_DONE) return unexpected(impl_->sql_error("cannot list versions"));
    return out;
}

Expected<VersionInfo, StoreError> Session::version_by_number(ProjectId project, int number) const {
    std::lock_guard lock(impl_->mutex);
    Stmt s = impl_->prepare(
        "SELECT id, project_id, number, kind, saved_at, node_count FROM graph_versions WHERE project_id = ? AND "
        "number = ?");
    if (!s.ok()) return unexpected(impl_->sql_error("cannot read versions"));
    const int rc = s.bind(1, project).bind(2, number).step();
    if (rc == SQLITE_ROW) return impl_->version_from(s);
    if (rc != SQLITE_DONE) return unexpected(impl_->sql_error("cannot read versions"));
    return unexpected(make_error("not-found", "session " + impl_->file + ": project " + std::to_string(project) +
                                                  " has no version " + std::to_string(number)));
}

Expected<Graph, StoreError> Session::load_version(VersionId version) const {
    std::lock_guard lock(impl_->mutex);
    return impl_->load(version);
}

Expected<Graph, StoreError> Session::load_latest(ProjectId project) const {
    std::lock_guard lock(impl_->mutex);
    if (!impl_->has_project(project)) return unexpected(impl_->no_project(project));
    Stmt s = impl_->prepare(
        "SELECT id FROM graph_versions WHERE project_id = ? AND kind <> 'stage' ORDER BY number DESC LIMIT 1");
    if (!s.ok()) return unexpected(impl_->sql_error("cannot read versions"));
    const int rc = s.bind(1, project).step();
    if (rc == SQLITE_DONE)
        return unexpected(make_error(
            "not-found", "session " + impl_->file + ": project " + std::to_string(project) + " has no saved version"));
    if (rc != SQLITE_ROW) return unexpected(impl_->sql_error("cannot read versions"));
    const VersionId id = s.i64(0);
    return impl_->load(id);
}

Expected<Placements, StoreError> Session::placements(ProjectId project) const {
    std::lock_guard lock(impl_->mutex);
    if (!impl_->has_project(project)) return unexpected(impl_->no_project(project));
    Stmt s = impl_->prepare("SELECT node_id, x, y, pinned FROM placements WHERE project_id = ?");
    if (!s.ok()) return unexpected(impl_->sql_error("cannot read placements"));
    s.bind(1, project);
    Placements out;
    int rc = 0;
    while ((rc = s.step()) == SQLITE_ROW) out[s.text(0)] = NodePlacement{s.real(1), s.real(2), s.i64(3) != 0};
    if (rc != SQLITE_DONE) return unexpected(impl_->sql_error("cannot read placements"));
    return out;
}

// ---- studio state ----------------------------------------------------------------------

Status Session::set_state(StateScope scope, std::string_view key, std::string_view json) {
    std::lock_guard lock(impl_->mutex);
    if (auto e = impl_->require_writer()) return unexpected(*e);
    if (key.empty()) return unexpected(make_error("invalid", "a state entry needs a key"));
    if (!nlohmann::json::accept(json))
        return unexpected(make_error("invalid", "state '" + std::string(key) + "' is not valid JSON"));
    if (scope && !impl_->has_project(*scope)) return unexpected(impl_->no_project(*scope));
    Stmt s = scope ? impl_->prepare(
                         "INSERT INTO project_state (project_id, key, json, updated_at) VALUES (?, ?, ?, "
                         "strftime('%Y-%m-%dT%H:%M:%fZ','now')) ON CONFLICT (project_id, key) DO UPDATE SET "
                         "json = excluded.json, updated_at = excluded.updated_at")
                   : impl_->prepare(
                         "INSERT INTO session_state (key, json, updated_at) VALUES (?, ?, "
                         "strftime('%Y-%m-%dT%H:%M:%fZ','now')) ON CONFLICT (key) DO UPDATE SET "
                         "json = excluded.json, updated_at = excluded.updated_at");
    if (!s.ok()) return unexpected(impl_->sql_error("cannot save state"));
    int i = 1;
    if (scope) s.bind(i++, *scope);
    s.bind(i, key);
    s.bind(i + 1, json);
    if (s.step() != SQLITE_DONE) return unexpected(impl_->sql_error("cannot save state '" + std::string(key) + "'"));
    return Done{};
}

Expected<std::optional<std::string>, StoreError> Session::state(StateScope scope, std::string_view key) const {
    std::lock_guard lock(impl_->mutex);
    Stmt s = scope ? impl_->prepare("SELECT json FROM project_state WHERE project_id = ? AND key = ?")
                   : impl_->prepare("SELECT json FROM session_state WHERE key = ?");
    if (!s.ok()) return unexpected(impl_->sql_error("cannot read state"));
    int i = 1;
    if (scope) s.bind(i++, *scope);
    s.bind(i, key);
    const int rc = s.step();
    if (rc == SQLITE_ROW) return std::optional<std::string>(s.text(0));
    if (rc != SQLITE_DONE) return unexpected(impl_->sql_error("cannot read state"));
    return std::optional<std::string>();
}

namespace {
constexpr std::string_view kSourceFileKey = "source_file";
}

Expected<std::string, StoreError> Session::source_file(ProjectId project) const {
    auto text = state(project, kSourceFileKey);
    if (!text) return unexpected(text.error());
    if (!text->has_value()) return std::string();
    const nlohmann::json doc = nlohmann::json::parse(**text, nullptr, false);
    if (!doc.is_object() || !doc.contains("path") || !doc["path"].is_string()) return std::string();
    return doc["path"].get<std::string>();
}

Status Session::set_source_file(ProjectId project, std::string_view path) {
    return set_state(project, kSourceFileKey, nlohmann::json{{"path", std::string(path)}}.dump());
}

// ---- stages ------------------------------------------------------------------------------

Expected<StageRecord, StoreError> Session::add_stage(const StageRecord &stage, const Graph &stage_graph) {
    std::lock_guard lock(impl_->mutex);
    if (auto e = impl_->require_writer()) return unexpected(*e);
    if (auto e = impl_->require_schema(2, "stages")) return unexpected(*e);
    if (stage.pass_name.empty()) return unexpected(make_error("invalid", "a stage needs a pass name"));
    for (const auto &[what, text] : {std::pair{"options", &stage.options_json},
                                     {"diff", &stage.diff_json},
                                     {"certificate", &stage.certificate_json}})
        if (!nlohmann::json::accept(*text))
            return unexpected(make_error("invalid", "stage " + stage.pass_name + ": " + what + " is not valid JSON"));
    Impl::Transaction tx(*impl_);
    if (!tx.active) return unexpected(impl_->sql_error("cannot start a transaction"));
    ProjectId project = 0;
    {
        Stmt s = impl_->prepare("SELECT project_id FROM graph_versions WHERE id = ?");
        if (!s.ok()) return unexpected(impl_->sql_error("cannot read versions"));
        if (s.bind(1, stage.version_id).step() != SQLITE_ROW)
            return unexpected(make_error("not-found", "session " + impl_->file + " has no graph version with id " +
                                                          std::to_string(stage.version_id)));
        project = s.i64(0);
    }
    std::vector<std::pair<const TensorData *, Impl::CachedValue>> pending;
    auto graph_version = impl_->insert_version(project, stage_graph, "stage", pending);
    if (!graph_version) return unexpected(graph_version.error());
    StageRecord out = stage;
    out.graph_version_id = graph_version->id;
    {
        Stmt s = impl_->prepare(
            "INSERT INTO stages (version_id, ordinal, pass_name, options_json, summary, diff_json, certificate_json, "
            "graph_version_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?)");
        if (!s.ok()) return unexpected(impl_->sql_error("cannot save stage"));
        s.bind(1, out.version_id).bind(2, out.ordinal).bind_static(3, out.pass_name).bind_static(4, out.options_json);
        s.bind_static(5, out.summary).bind_static(6, out.diff_json).bind_static(7, out.certificate_json);
        s.bind(8, out.graph_version_id);
        if (s.step() != SQLITE_DONE)
            return unexpected(
                impl_->sql_error("cannot save stage " + std::to_string(out.ordinal) + " (" + out.pass_name + ")"));
        out.id = sqlite3_last_insert_rowid(impl_->db);
    }
    if (!tx.commit()) return unexpected(impl_->sql_error("cannot commit the stage"));
    impl_->adopt(pending);
    return out;
}

Expected<std::vector<StageRecord>, StoreError> Session::stages(VersionId version) const {
    std::lock_guard lock(impl_->mutex);
    if (impl_->schema < 2) return std::vector<StageRecord>{};
    Stmt s = impl_->prepare(
        "SELECT id, version_id, ordinal, pass_name, options_json, summary, diff_json, certificate_json, "
        "graph_version_id FROM stages WHERE version_id = ? ORDER BY ordinal");
    if (!s.ok()) return unexpected(impl_->sql_error("cannot read stages"));
    s.bind(1, version);
    std::vector<StageRecord> out;
    int rc = 0;
    while ((rc = s.step()) == SQLITE_ROW) {
        StageRecord r;
        r.id = s.i64(0);
        r.version_id = s.i64(1);
        r.ordinal = static_cast<int>(s.i64(2));
        r.pass_name = s.text(3);
        r.options_json = s.text(4);
        r.summary = s.text(5);
        r.diff_json = s.text(6);
        r.certificate_json = s.text(7);
        r.graph_version_id = s.i64(8);
        out.push_back(std::move(r));
    }
    if (rc != SQLITE_DONE) return unexpected(impl_->sql_error("cannot read stages"));
    return out;
}

// ---- hardware targets --------------------------------------------------------------------

Status Session::save_target(std::string_view name, std::string_view origin, std::string_view target_json) {
    std::lock_guard lock(impl_->mutex);
    if (auto e = impl_->require_writer()) return unexpected(*e);
    if (auto e = impl_->require_schema(3, "targets")) return unexpected(*e);
    if (name.empty()) return unexpected(make_error("invalid", "a target needs a name"));
    if (origin != "user" && origin != "measured")
        return unexpected(
            make_error("invalid", "target origin '" + std::string(origin) + "' is not one of user, measured"));
    if (!nlohmann::json::accept(target_json))
        return unexpected(make_error("invalid", "target '" + std::string(name) + "' is not valid JSON"));
    Stmt s = impl_->prepare(
        "INSERT INTO targets (name, origin, target_json, created_at, updated_at) VALUES (?, ?, ?, "
        "strftime('%Y-%m-%dT%H:%M:%fZ','now'), strftime('%Y-%m-%dT%H:%M:%fZ','now')) ON CONFLICT (name) DO UPDATE "
        "SET origin = excluded.origin, target_json = excluded.target_json, updated_at = excluded.updated_at");
    if (!s.ok() || s.bind(1, name).bind(2, origin).bind(3, target_json).step() != SQLITE_DONE)
        return unexpected(impl_->sql_error("cannot save target '" + std::string(name) + "'"));
    return Done{};
}

Expected<std::vector<TargetRecord>, StoreError> Session::targets() const {
    std::lock_guard lock(impl_->mutex);
    if (impl_->schema < 3) return std::vector<TargetRecord>{};
    Stmt s = impl_->prepare("SELECT name, origin, target_json, updated_at FROM targets ORDER BY name");
    if (!s.ok()) return unexpected(impl_->sql_error("cannot read targets"));
    std::vector<TargetRecord> out;
    int rc = 0;
    while ((rc = s.step()) == SQLITE_ROW) out.push_back({s.text(0), s.text(1), s.text(2), s.text(3)});
    if (rc != SQLITE_DONE) return unexpected(impl_->sql_error("cannot read targets"));
    return out;
}

Status Session::delete_target(std::string_view name) {
    std::lock_guard lock(impl_->mutex);
    if (auto e = impl_->require_writer()) return unexpected(*e);
    if (auto e = impl_->require_schema(3, "targets")) return unexpected(*e);
    Stmt s = impl_->prepare("DELETE FROM targets WHERE name = ?");
    if (!s.ok() || s.bind(1, name).step() != SQLITE_DONE)
        return unexpected(impl_->sql_error("cannot delete target '" + std::string(name) + "'"));
    if (sqlite3_changes(impl_->db) == 0)
        return unexpected(
            make_error("not-found", "session " + impl_->file + " has no target named '" + std::string(name) + "'"));
    return Done{};
}

// ---- compiled plans ------------------------------------------------------------------------

Expected<PlanRecord, StoreError> Session::save_plan(const PlanRecord &plan, std::string_view plan_json) {
    std::lock_guard lock(impl_->mutex);
    if (auto e = impl_->require_writer()) return unexpected(*e);
    if (auto e = impl_->require_schema(3, "plans")) return unexpected(*e);
    if (auto e = plan_refusal(plan, plan_json)) return unexpected(*e);
    Impl::Transaction tx(*impl_);
    if (!tx.active) return unexpected(impl_->sql_error("cannot start a transaction"));
    {
        Stmt s = impl_->prepare("SELECT kind FROM graph_versions WHERE id = ?");
        if (!s.ok()) return unexpected(impl_->sql_error("cannot read versions"));
        if (s.bind(1, plan.version_id).step() != SQLITE_ROW)
            return unexpected(impl_->no_row("graph version", plan.version_id));
        // Listing a version's plans must find the plans of its stages too.
        if (!editor_kind(s.text(0)))
            return unexpected(make_error("invalid", "graph version " + std::to_string(plan.version_id) +
                                                        " is a stage's graph; a plan names the version the "
                                                        "pass ran on and the stage"));
    }
    if (plan.stage_id) {
        Stmt s = impl_->prepare("SELECT version_id FROM stages WHERE id = ?");
        if (!s.ok()) return unexpected(impl_->sql_error("cannot read stages"));
        if (s.bind(1, *plan.stage_id).step() != SQLITE_ROW) return unexpected(impl_->no_row("stage", *plan.stage_id));
        if (s.i64(0) != plan.version_id)
            return unexpected(make_error("invalid", "stage " + std::to_string(*plan.stage_id) +
                                                        " belongs to graph version " + std::to_string(s.i64(0)) +
                                                        ", not " + std::to_string(plan.version_id)));
    }
    PlanRecord out = plan;
    {
        Stmt s = impl_->prepare(
            "INSERT INTO plans (version_id, stage_id, target, devices, plan_json, summary, makespan_seconds, "
            "peak_bytes, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, strftime('%Y-%m-%dT%H:%M:%fZ','now')) "
            "RETURNING id, created_at");
        if (!s.ok()) return unexpected(impl_->sql_error("cannot save the plan"));
        s.bind(1, out.version_id).bind(2, out.stage_id).bind_static(3, out.target).bind(4, out.devices);
        s.bind_static(5, plan_json).bind_static(6, out.summary).bind(7, out.makespan_seconds);
        s.bind(8, out.peak_bytes);
        if (s.step() != SQLITE_ROW) return unexpected(impl_->sql_error("cannot save the plan"));
        out.id = s.i64(0);
        out.created_at = s.text(1);
        if (s.step() != SQLITE_DONE) return unexpected(impl_->sql_error("cannot save the plan"));
    }
    if (!tx.commit()) return unexpected(impl_->sql_error("cannot commit the plan"));
    return out;
}

Expected<std::vector<PlanRecord>, StoreError> Session::plans(ProjectId project,
                                                             std::optional<VersionId> version) const {
    std::lock_guard lock(impl_->mutex);
    if (!impl_->has_project(project)) return unexpected(impl_->no_project(project));
    if (impl_->schema < 3) return std::vector<PlanRecord>{};
    Stmt s = impl_->prepare(
        "SELECT p.id, p.version_id, p.stage_id, p.target, p.devices, p.summary, p.makespan_seconds, p.peak_bytes, "
        "p.created_at FROM plans p JOIN graph_versions v ON v.id = p.version_id "
        "WHERE v.project_id = ?1 AND (?2 IS NULL OR p.version_id = ?2) ORDER BY p.id");
    if (!s.ok()) return unexpected(impl_->sql_error("cannot read plans"));
    s.bind(1, project).bind(2, version);
    std::vector<PlanRecord> out;
    int rc = 0;
    while ((rc = s.step()) == SQLITE_ROW) {
        PlanRecord p;
        p.id = s.i64(0);
        p.version_id = s.i64(1);
        if (!s.is_null(2)) p.stage_id = s.i64(2);
        p.target = s.text(3);
        p.devices = static_cast<int>(s.i64(4));
        p.summary = s.text(5);
        p.makespan_seconds = s.real(6);
        p.peak_bytes = s.i64(7);
        p.created_at = s.text(8);
        out.push_back(std::move(p));
    }
    if (rc != SQLITE_DONE) return unexpected(impl_->sql_error("cannot read plans"));
    return out;
}

Expected<std::string, StoreError> Session::load_plan_json(PlanId plan) const {
    std::lock_guard lock(impl_->mutex);
    if (impl_->schema < 3) return unexpected(impl_->no_row("plan", plan));
    Stmt s = impl_->prepare("SELECT plan_json FROM plans WHERE id = ?");
    if (!s.ok()) return unexpected(impl_->sql_error("cannot read plan " + std::to_string(plan)));
    const int rc = s.bind(1, plan).step();
    if (rc == SQLITE_ROW) return s.text(0);
    if (rc != SQLITE_DONE) return unexpected(impl_->sql_error("cannot read plan " + std::to_string(plan)));
    return unexpected(impl_->no_row("plan", plan));
}

// ---- launches --------------------------------------------------------------------------------

Expected<LaunchRecord, StoreError> Session::record_launch(const LaunchRecord &launch,
                                                          const std::vector<StepMeasurement> &steps) {
    std::lock_guard lock(impl_->mutex);
    if (auto e = impl_->require_writer()) return unexpected(*e);
    if (auto e = impl_->require_schema(3, "launches")) return unexpected(*e);
    if (launch.backend.empty()) return unexpected(make_error("invalid", "a launch needs a backend"));
    if (!launch_status(launch.status))
        return unexpected(
            make_error("invalid", "launch status '" + launch.status + "' is not one of ok, failed, cancelled"));
    if (!nlohmann::json::accept(launch.measurements_json))
        return unexpected(make_error("invalid", "the launch's measurements are not valid JSON"));
    LaunchRecord out = launch;
    for (std::string *when : {&out.started_at, &out.finished_at}) {
        auto normalised = impl_->timestamp(*when);
        if (!normalised)
            return unexpected(make_error(
                "invalid", "launch time '" + *when + "' is not an ISO 8601 time (2026-11-21T12:31:07.343Z)"));
        *when = std::move(*normalised);
    }
    Impl::Transaction tx(*impl_);
    if (!tx.active) return unexpected(impl_->sql_error("cannot start a transaction"));
    if (!impl_->has_row("plans", out.plan_id)) return unexpected(impl_->no_row("plan", out.plan_id));
    {
        Stmt s = impl_->prepare(
            "INSERT INTO launches (plan_id, backend, started_at, finished_at, status, error, equivalence, "
            "measurements_json) VALUES (?, ?, ?, ?, ?, ?, ?, ?)");
        if (!s.ok()) return unexpected(impl_->sql_error("cannot record the launch"));
        s.bind(1, out.plan_id).bind_static(2, out.backend).bind_static(3, out.started_at);
        s.bind_static(4, out.finished_at).bind_static(5, out.status).bind_static(6, out.error);
        s.bind_static(7, out.equivalence).bind_static(8, out.measurements_json);
        if (s.step() != SQLITE_DONE) return unexpected(impl_->sql_error("cannot record the launch"));
        out.id = sqlite3_last_insert_rowid(impl_->db);
    }
    for (const StepMeasurement &m : steps) {
        Stmt s = impl_->prepare(
            "INSERT INTO step_measurements (launch_id, step, device, start_seconds, end_seconds, predicted_seconds) "
            "VALUES (?, ?, ?, ?, ?, ?)");
        if (!s.ok()) return unexpected(impl_->sql_error("cannot record the launch's steps"));
        s.bind(1, out.id).bind(2, m.step).bind_static(3, m.device).bind(4, m.start_seconds);
        s.bind(5, m.end_seconds).bind(6, m.predicted_seconds);
        if (s.step() != SQLITE_DONE)
            return unexpected(impl_->sql_error("cannot record step " + std::to_string(m.step) + " of the launch"));
    }
    if (!tx.commit()) return unexpected(impl_->sql_error("cannot commit the launch"));
    return out;
}

namespace {

// The launches a statement selects with kLaunchColumns; false on an SQL error.
constexpr const char *kLaunchColumns =
    "SELECT id, plan_id, backend, started_at, finished_at, status, error, equivalence, measurements_json FROM launches ";
bool read_launches(Stmt &s, std::vector<LaunchRecord> &out) {
    int rc = 0;
    while ((rc = s.step()) == SQLITE_ROW)
        out.push_back({s.i64(0), s.i64(1), s.text(2), s.text(3), s.text(4), s.text(5), s.text(6), s.text(7), s.text(8)});
    return rc == SQLITE_DONE;
}

}  // namespace

Expected<std::vector<LaunchRecord>, StoreError> Session::launches(PlanId plan) const {
    std::lock_guard lock(impl_->mutex);
    if (impl_->schema < 3) return std::vector<LaunchRecord>{};
    Stmt s = impl_->prepare((std::string(kLaunchColumns) + "WHERE plan_id = ? ORDER BY id").c_str());
    if (!s.ok()) return unexpected(impl_->sql_error("cannot read launches"));
    s.bind(1, plan);
    std::vector<LaunchRecord> out;
    if (!read_launches(s, out)) return unexpected(impl_->sql_error("cannot read launches"));
    return out;
}

Expected<std::vector<LaunchRecord>, StoreError> Session::calibrating_launches(std::string_view target, int limit) const {
    std::lock_guard lock(impl_->mutex);
    if (impl_->schema < 3) return std::vector<LaunchRecord>{};
    Stmt s = impl_->prepare((std::string(kLaunchColumns) +
                             "WHERE status = 'ok' AND id IN "
                             "(SELECT DISTINCT launch_id FROM calibration WHERE target = ? AND launch_id IS NOT NULL) "
                             "ORDER BY id DESC LIMIT ?")
                                .c_str());
    if (!s.ok()) return unexpected(impl_->sql_error("cannot read launches"));
    s.bind(1, target);
    s.bind(2, static_cast<std::int64_t>(std::max(0, limit)));
    std::vector<LaunchRecord> out;
    if (!read_launches(s, out)) return unexpected(impl_->sql_error("cannot read launches"));
    return out;
}

Expected<std::vector<StepMeasurement>, StoreError> Session::step_measurements(LaunchId launch) const {
    std::lock_guard lock(impl_->mutex);
    if (impl_->schema < 3) return std::vector<StepMeasurement>{};
    Stmt s = impl_->prepare(
        "SELECT step, device, start_seconds, end_seconds, predicted_seconds FROM step_measurements "
        "WHERE launch_id = ? ORDER BY step, id");
    if (!s.ok()) return unexpected(impl_->sql_error("cannot read step measurements"));
    s.bind(1, launch);
    std::vector<StepMeasurement> out;
    int rc = 0;
    while ((rc = s.step()) == SQLITE_ROW)
        out.push_back({static_cast<int>(s.i64(0)), s.text(1), s.real(2), s.real(3), s.real(4)});
    if (rc != SQLITE_DONE) return unexpected(impl_->sql_error("cannot read step measurements"));
    return out;
}

// ---- calibration -------------------------------------------------------------------------------

Status Session::add_calibration(std::string_view target, const std::vector<CalibrationRow> &rows) {
    std::lock_guard lock(impl_->mutex);
    if (auto e = impl_->require_writer()) return unexpected(*e);
    if (auto e = impl_->require_schema(6, "calibration points")) return unexpected(*e);
    if (target.empty()) return unexpected(make_error("invalid", "calibration needs a target name"));
    for (const CalibrationRow &row : rows)
        if (row.kernel_class.empty())
            return unexpected(
                make_error("invalid", "a calibration point of " + std::string(target) + " needs a kernel class"));
    Impl::Transaction tx(*impl_);
    if (!tx.active) return unexpected(impl_->sql_error("cannot start a transaction"));
    for (const CalibrationRow &row : rows) {
        if (row.launch_id && !impl_->has_row("launches", *row.launch_id))
            return unexpected(impl_->no_row("launch", *row.launch_id));
        Stmt s = impl_->prepare(
            "INSERT INTO calibration (target, kernel_class, size, predicted_seconds, measured_seconds, launch_id, "
            "created_at, kernel, threads, dtype, shape) VALUES (?, ?, ?, ?, ?, ?, strftime('%Y-%m-%dT%H:%M:%fZ','now'), ?, ?, "
            "?, ?)");
        if (!s.ok()) return unexpected(impl_->sql_error("cannot save calibration"));
        s.bind(1, target).bind_static(2, row.kernel_class).bind(3, row.size).bind(4, row.predicted_seconds);
        s.bind(5, row.measured_seconds).bind(6, row.launch_id).bind(7, row.kernel).bind(8, row.threads).bind(9, row.dtype);
        s.bind(10, row.shape);
        if (s.step() != SQLITE_DONE)
            return unexpected(impl_->sql_error("cannot save a calibration point of " + std::string(target)));
    }
    if (!tx.commit()) return unexpected(impl_->sql_error("cannot commit the calibration"));
    return Done{};
}

Expected<std::vector<CalibrationRow>, StoreError> Session::calibration(std::string_view target) const {
    std::lock_guard lock(impl_->mutex);
    if (impl_->schema < 3) return std::vector<CalibrationRow>{};
    // A file read at schema 3 (read-only, not migrated) has no kernels; one at 4 no
    // dtypes; one at 5 no shapes.
    const std::string sql = std::string("SELECT kernel_class, size, predicted_seconds, measured_seconds, launch_id, ") +
                            "created_at, " + (impl_->schema >= 4 ? "kernel, threads" : "'', 0") +
                            (impl_->schema >= 5 ? ", dtype" : ", ''") + (impl_->schema >= 6 ? ", shape" : ", ''") +
                            " FROM calibration WHERE target = ? ORDER BY kernel_class, size, id";
    Stmt s = impl_->prepare(sql.c_str());
    if (!s.ok()) return unexpected(impl_->sql_error("cannot read calibration"));
    s.bind(1, target);
    std::vector<CalibrationRow> out;
    int rc = 0;
    while ((rc = s.step()) == SQLITE_ROW) {
        CalibrationRow row{s.text(0), s.real(1), s.real(2), s.real(3), std::nullopt, s.text(5), s.text(6),
                           static_cast<int>(s.i64(7)), s.text(8), s.text(9)};
        if (!s.is_null(4)) row.launch_id = s.i64(4);
        out.push_back(std::move(row));
    }
    if (rc != SQLITE_DONE) return unexpected(impl_->sql_error("cannot read calibration"));
    return out;
}

// ---- search runs ---------------------------------------------------------------------------
// A candidate is two JSON texts in its row (docs/sessions.md, "Search runs"):
//   objectives_json  {"objectives": [..], "figures": {"makespan_seconds", "peak_bytes", "devices",
//                     "communication_bytes", "energy_joules", "violation", "violated"}} (energy_joules
//                     may be absent: rows written before it read as 0)
//   plan_json        {"candidate": {"dim": [..], "parts": [..], "rule", "stages", ["dim2", "parts2"],
//                     ["fused", "unfused"], ["at"], ["cuts"], ["substitution"]}, "key",
//                     "description", "index", "mutator"} — the choices, not a plan: a plan
//                     is rebuilt from them (search::Evaluator::materialize).

namespace {

using nlohmann::json;

bool search_outcome(std::string_view status) {
    return status == "finished" || status == "stopped" || status == "failed";
}

// A candidate's substitution: none, or a goal of the substitution pass.
bool known_substitution(const std::string &goal) { return goal.empty() || goal == "expand" || goal == "fuse"; }

// Why a candidate cannot be stored, or nothing.
std::optional<StoreError> candidate_refusal(SearchRunId run, const SearchCandidateRecord &c) {
    const auto invalid = [&](const std::string &why) {
        return make_error("invalid", "a candidate of search run " + std::to_string(run) + " " + why);
    };
    if (c.key.empty()) return invalid("needs its key");
    if (c.dim.size() != c.parts.size())
        return invalid("'" + c.key + "' has " + std::to_string(c.dim.size()) + " split dims but " +
                       std::to_string(c.parts.size()) + " part counts");
    if (c.dim2.size() != c.parts2.size() || (!c.dim2.empty() && c.dim2.size() != c.dim.size()))
        return invalid("'" + c.key + "' has a second split of " + std::to_string(c.dim2.size()) + " dims and " +
                       std::to_string(c.parts2.size()) + " part counts for " + std::to_string(c.dim.size()) +
                       " operations");
    if (c.rule.empty()) return invalid("'" + c.key + "' needs its placement rule");
    if (!c.fused && !c.unfused.empty()) return invalid("'" + c.key + "' keeps operations out of a fusion it does not have");
    for (size_t i = 0; i < c.unfused.size(); ++i)
        if (c.unfused[i] < 0 || static_cast<size_t>(c.unfused[i]) >= c.dim.size() || (i && c.unfused[i] <= c.unfused[i - 1]))
            return invalid("'" + c.key + "' keeps an operation out of fusion that is not one of its " +
                           std::to_string(c.dim.size()) + " (or not in ascending order)");
    if (!c.at.empty() && c.at.size() != c.dim.size())
        return invalid("'" + c.key + "' maps " + std::to_string(c.at.size()) + " operations of " +
                       std::to_string(c.dim.size()));
    for (int d : c.at)
        if (d < -1) return invalid("'" + c.key + "' maps an operation to device " + std::to_string(d));
    if (!c.cuts.empty() && (c.rule != "pipeline" || static_cast<int>(c.cuts.size()) != c.stages - 1))
        return invalid("'" + c.key + "' has " + std::to_string(c.cuts.size()) + " pipeline cuts for " +
                       (c.rule == "pipeline" ? std::to_string(c.stages) + " stages" : "the rule '" + c.rule + "'"));
    for (size_t i = 0; i < c.cuts.size(); ++i)
        if (c.cuts[i] < 1 || static_cast<size_t>(c.cuts[i]) >= c.dim.size() || (i && c.cuts[i] <= c.cuts[i - 1]))
            return invalid("'" + c.key + "' cuts its pipeline at operation " + std::to_string(c.cuts[i]) + " of " +
                           std::to_string(c.dim.size()) + " (cuts ascend from operation 1)");
    if (!known_substitution(c.substitution))
        return invalid("'" + c.key + "' starts from substitution '" + c.substitution + "' (known: expand, fuse)");
    bool finite = std::isfinite(c.makespan_seconds) && std::isfinite(c.peak_bytes) &&
                  std::isfinite(c.communication_bytes) && std::isfinite(c.energy_joules) && std::isfinite(c.violation);
    for (double v : c.objectives) finite = finite && std::isfinite(v);
    if (!finite) return invalid("'" + c.key + "' has a figure that is not a finite number");
    return std::nullopt;
}

std::string objectives_json(const SearchCandidateRecord &c) {
    return json{{"objectives", c.objectives},
                {"figures",
                 {{"makespan_seconds", c.makespan_seconds},
                  {"peak_bytes", c.peak_bytes},
                  {"devices", c.devices},
                  {"communication_bytes", c.communication_bytes},
                  {"energy_joules", c.energy_joules},
                  {"violation", c.violation},
                  {"violated", c.violated}}}}
        .dump();
}

std::string choices_json(const SearchCandidateRecord &c) {
    json candidate{{"dim", c.dim}, {"parts", c.parts}, {"rule", c.rule}, {"stages", c.stages}};
    if (!c.dim2.empty()) {  // only product splits carry a second split
        candidate["dim2"] = c.dim2;
        candidate["parts2"] = c.parts2;
    }
    if (c.fused) {  // only fused candidates carry fusion
        candidate["fused"] = true;
        candidate["unfused"] = c.unfused;
    }
    if (!c.at.empty()) candidate["at"] = c.at;  // only mapped candidates carry maps
    if (!c.cuts.empty()) candidate["cuts"] = c.cuts;  // only explicitly cut pipelines carry cuts
    if (!c.substitution.empty()) candidate["substitution"] = c.substitution;  // only substituted candidates
    return json{{"candidate", candidate},
                {"key", c.key},
                {"description", c.description},
                {"index", c.index},
                {"mutator", c.mutator}}
        .dump();
}

// A row that does not read: what is wrong with it (internal to read_candidate).
struct BadRow {
    std::string why;
};

// Member `name` of the object `o` in column `column`, as a T.
template <typename T>
T member(const json &o, const char *column, const char *name) {
    if (!o.is_object()) throw BadRow{std::string(column) + " is not a JSON object"};
    const auto it = o.find(name);
    if (it == o.end()) throw BadRow{std::string(column) + " has no '" + name + "'"};
    try {
        return it->get<T>();
    } catch (const json::exception &) {
        throw BadRow{std::string(column) + ": '" + name + "' has the wrong type (" + it->type_name() + ")"};
    }
}

json parse_column(const std::string &text, const char *column) {
    json j = json::parse(text, nullptr, false);
    if (j.is_discarded()) throw BadRow{std::string(column) + " is not valid JSON"};
    return j;
}

// Fills `c` from its row's JSON columns; "" or why they do not read.
std::string read_candidate(const std::string &objectives, const std::string &choices, SearchCandidateRecord &c) {
    try {
        const json o = parse_column(objectives, "objectives_json");
        c.objectives = member<std::vector<double>>(o, "objectives_json", "objectives");
        const json f = member<json>(o, "objectives_json", "figures");
        c.makespan_seconds = member<double>(f, "objectives_json.figures", "makespan_seconds");
        c.peak_bytes = member<double>(f, "objectives_json.figures", "peak_bytes");
        c.devices = member<int>(f, "objectives_json.figures", "devices");
        c.communication_bytes = member<double>(f, "objectives_json.figures", "communication_bytes");
        c.energy_joules = f.contains("energy_joules") ? member<double>(f, "objectives_json.figures", "energy_joules") : 0;
        c.violation = member<double>(f, "objectives_json.figures", "violation");
        c.violated = member<std::string>(f, "objectives_json.figures", "violated");
        const json p = parse_column(choices, "plan_json");
        const json k = member<json>(p, "plan_json", "candidate");
        c.dim = member<std::vector<int>>(k, "plan_json.candidate", "dim");
        c.parts = member<std::vector<int>>(k, "plan_json.candidate", "parts");
        if (k.contains("dim2") || k.contains("parts2")) {
            c.dim2 = member<std::vector<int>>(k, "plan_json.candidate", "dim2");
            c.parts2 = member<std::vector<int>>(k, "plan_json.candidate", "parts2");
        }
        c.rule = member<std::string>(k, "plan_json.candidate", "rule");
        c.stages = member<int>(k, "plan_json.candidate", "stages");
        if (k.contains("fused")) {
            c.fused = member<bool>(k, "plan_json.candidate", "fused");
            if (k.contains("unfused")) c.unfused = member<std::vector<int>>(k, "plan_json.candidate", "unfused");
        }
        if (k.contains("at")) c.at = member<std::vector<int>>(k, "plan_json.candidate", "at");
        if (k.contains("cuts")) c.cuts = member<std::vector<int>>(k, "plan_json.candidate", "cuts");
        if (k.contains("substitution")) c.substitution = member<std::string>(k, "plan_json.candidate", "substitution");
        c.key = member<std::string>(p, "plan_json", "key");
        c.description = member<std::string>(p, "plan_json", "description");
        c.index = member<std::int64_t>(p, "plan_json", "index");
        c.mutator = member<std::string>(p, "plan_json", "mutator");
        if (c.dim.size() != c.parts.size()) throw BadRow{"plan_json.candidate: dim and parts differ in length"};
        if (c.dim2.size() != c.parts2.size() || (!c.dim2.empty() && c.dim2.size() != c.dim.size()))
            throw BadRow{"plan_json.candidate: dim2 and parts2 do not match dim"};
        for (int i : c.unfused)
            if (i < 0 || static_cast<size_t>(i) >= c.dim.size())
                throw BadRow{"plan_json.candidate: unfused names operation " + std::to_string(i) + " of " +
                             std::to_string(c.dim.size())};
        if (!c.at.empty() && c.at.size() != c.dim.size())
            throw BadRow{"plan_json.candidate: at maps " + std::to_string(c.at.size()) + " operations of " +
                         std::to_string(c.dim.size())};
        for (int d : c.at)
            if (d < -1) throw BadRow{"plan_json.candidate: at names device " + std::to_string(d)};
        if (!c.cuts.empty() && (c.rule != "pipeline" || static_cast<int>(c.cuts.size()) != c.stages - 1))
            throw BadRow{"plan_json.candidate: " + std::to_string(c.cuts.size()) + " cuts for rule '" + c.rule +
                         "' of " + std::to_string(c.stages) + " stages"};
        for (size_t i = 0; i < c.cuts.size(); ++i)
            if (c.cuts[i] < 1 || static_cast<size_t>(c.cuts[i]) >= c.dim.size() || (i && c.cuts[i] <= c.cuts[i - 1]))
                throw BadRow{"plan_json.candidate: cuts names operation " + std::to_string(c.cuts[i]) + " of " +
                             std::to_string(c.dim.size()) + " (ascending, from 1)"};
        if (!known_substitution(c.substitution))
            throw BadRow{"plan_json.candidate: substitution '" + c.substitution + "' (known: expand, fuse)"};
    } catch (const BadRow &bad) {
        return bad.why;
    }
    return {};
}

// The columns of a run as listings read them (run_from reads them in this order).
constexpr const char *kRunColumns =
    "SELECT r.id, r.version_id, r.target, r.settings_json, r.seed, r.started_at, r.finished_at, r.status, "
    "(SELECT count(*) FROM search_candidates c WHERE c.run_id = r.id), "
    "(SELECT count(*) FROM search_candidates c WHERE c.run_id = r.id AND c.on_front) FROM search_runs r ";

SearchRunRecord run_from(const Stmt &s) {
    SearchRunRecord r;
    r.id = s.i64(0);
    r.version_id = s.i64(1);
    r.target = s.text(2);
    r.settings_json = s.text(3);
    r.seed = static_cast<std::uint64_t>(s.i64(4));  // stored as its 64-bit pattern
    r.started_at = s.text(5);
    r.finished_at = s.is_null(6) ? std::string() : s.text(6);
    r.status = s.text(7);
    r.candidates = static_cast<int>(s.i64(8));
    r.on_front = static_cast<int>(s.i64(9));
    return r;
}

}  // namespace

Expected<SearchRunRecord, StoreError> Session::start_search_run(const SearchRunRecord &run) {
    std::lock_guard lock(impl_->mutex);
    if (auto e = impl_->require_writer()) return unexpected(*e);
    if (auto e = impl_->require_schema(3, "search runs")) return unexpected(*e);
    if (run.target.empty()) return unexpected(make_error("invalid", "a search run needs a target name"));
    if (!json::accept(run.settings_json))
        return unexpected(
            make_error("invalid", "the settings of a search run on " + run.target + " are not valid JSON"));
    {
        Stmt s = impl_->prepare("SELECT kind FROM graph_versions WHERE id = ?");
        if (!s.ok()) return unexpected(impl_->sql_error("cannot read versions"));
        if (s.bind(1, run.version_id).step() != SQLITE_ROW)
            return unexpected(impl_->no_row("graph version", run.version_id));
        if (!editor_kind(s.text(0)))
            return unexpected(make_error("invalid", "graph version " + std::to_string(run.version_id) +
                                                        " is a stage's graph; a search runs on an editor version"));
    }
    SearchRunRecord out = run;
    Stmt s = impl_->prepare(
        "INSERT INTO search_runs (version_id, target, settings_json, seed, started_at, status) VALUES (?, ?, ?, ?, "
        "strftime('%Y-%m-%dT%H:%M:%fZ','now'), 'running') RETURNING id, started_at");
    if (!s.ok()) return unexpected(impl_->sql_error("cannot start the search run"));
    s.bind(1, out.version_id).bind_static(2, out.target).bind_static(3, out.settings_json);
    s.bind(4, static_cast<std::int64_t>(out.seed));
    if (s.step() != SQLITE_ROW) return unexpected(impl_->sql_error("cannot start the search run"));
    out.id = s.i64(0);
    out.started_at = s.text(1);
    if (s.step() != SQLITE_DONE) return unexpected(impl_->sql_error("cannot start the search run"));
    out.finished_at.clear();
    out.status = "running";
    out.candidates = out.on_front = 0;
    return out;
}

Status Session::append_search_candidates(SearchRunId run, const std::vector<SearchCandidateRecord> &batch) {
    std::lock_guard lock(impl_->mutex);
    if (auto e = impl_->require_writer()) return unexpected(*e);
    if (auto e = impl_->require_schema(3, "search runs")) return unexpected(*e);
    for (const SearchCandidateRecord &c : batch)
        if (auto e = candidate_refusal(run, c)) return unexpected(*e);
    Impl::Transaction tx(*impl_);
    if (!tx.active) return unexpected(impl_->sql_error("cannot start a transaction"));
    {
        Stmt s = impl_->prepare("SELECT status FROM search_runs WHERE id = ?");
        if (!s.ok()) return unexpected(impl_->sql_error("cannot read search runs"));
        if (s.bind(1, run).step() != SQLITE_ROW) return unexpected(impl_->no_row("search run", run));
        if (s.text(0) != "running")
            return unexpected(make_error("invalid", "search run " + std::to_string(run) + " is " + s.text(0) +
                                                        "; candidates are added to a running search"));
    }
    for (const SearchCandidateRecord &c : batch) {
        Stmt s = impl_->prepare(
            "INSERT INTO search_candidates (run_id, generation, objectives_json, plan_json, on_front) "
            "VALUES (?, ?, ?, ?, ?)");
        if (!s.ok()) return unexpected(impl_->sql_error("cannot store the candidates"));
        s.bind(1, run).bind(2, c.generation).bind(3, objectives_json(c)).bind(4, choices_json(c));
        s.bind(5, c.on_front ? 1 : 0);
        if (s.step() != SQLITE_DONE)
            return unexpected(
                impl_->sql_error("cannot store candidate '" + c.key + "' of search run " + std::to_string(run)));
    }
    if (!tx.commit()) return unexpected(impl_->sql_error("cannot commit the candidates"));
    return Done{};
}

Status Session::mark_search_front(SearchRunId run, const std::vector<std::string> &keys) {
    std::lock_guard lock(impl_->mutex);
    if (auto e = impl_->require_writer()) return unexpected(*e);
    if (auto e = impl_->require_schema(3, "search runs")) return unexpected(*e);
    Impl::Transaction tx(*impl_);
    if (!tx.active) return unexpected(impl_->sql_error("cannot start a transaction"));
    if (!impl_->has_row("search_runs", run)) return unexpected(impl_->no_row("search run", run));
    Stmt s = impl_->prepare(
        "UPDATE search_candidates SET on_front = (json_extract(plan_json, '$.key') IN "
        "(SELECT value FROM json_each(?2))) WHERE run_id = ?1");
    if (!s.ok() || s.bind(1, run).bind(2, json(keys).dump()).step() != SQLITE_DONE)
        return unexpected(impl_->sql_error("cannot mark the front of search run " + std::to_string(run)));
    if (!tx.commit())
        return unexpected(impl_->sql_error("cannot commit the front of search run " + std::to_string(run)));
    return Done{};
}

Expected<SearchRunRecord, StoreError> Session::finish_search_run(SearchRunId run, std::string_view status) {
    std::lock_guard lock(impl_->mutex);
    if (auto e = impl_->require_writer()) return unexpected(*e);
    if (auto e = impl_->require_schema(3, "search runs")) return unexpected(*e);
    if (!search_outcome(status))
        return unexpected(make_error(
            "invalid", "search status '" + std::string(status) + "' is not one of finished, stopped, failed"));
    {
        Stmt s = impl_->prepare(
            "UPDATE search_runs SET status = ?2, finished_at = strftime('%Y-%m-%dT%H:%M:%fZ','now') "
            "WHERE id = ?1 AND status = 'running'");
        if (!s.ok() || s.bind(1, run).bind(2, status).step() != SQLITE_DONE)
            return unexpected(impl_->sql_error("cannot finish search run " + std::to_string(run)));
    }
    const bool finished_now = sqlite3_changes(impl_->db) == 1;
    const std::string sql = std::string(kRunColumns) + "WHERE r.id = ?";
    Stmt s = impl_->prepare(sql.c_str());
    if (!s.ok()) return unexpected(impl_->sql_error("cannot read search run " + std::to_string(run)));
    const int rc = s.bind(1, run).step();
    if (rc == SQLITE_DONE) return unexpected(impl_->no_row("search run", run));
    if (rc != SQLITE_ROW) return unexpected(impl_->sql_error("cannot read search run " + std::to_string(run)));
    SearchRunRecord out = run_from(s);
    if (!finished_now)
        return unexpected(make_error("invalid", "search run " + std::to_string(run) + " is already " + out.status));
    return out;
}

Expected<std::vector<SearchRunRecord>, StoreError> Session::search_runs(ProjectId project,
                                                                        std::optional<VersionId> version) const {
    std::lock_guard lock(impl_->mutex);
    if (!impl_->has_project(project)) return unexpected(impl_->no_project(project));
    if (impl_->schema < 3) return std::vector<SearchRunRecord>{};
    const std::string sql = std::string(kRunColumns) +
                            "JOIN graph_versions v ON v.id = r.version_id WHERE v.project_id = ?1 AND "
                            "(?2 IS NULL OR r.version_id = ?2) ORDER BY r.id";
    Stmt s = impl_->prepare(sql.c_str());
    if (!s.ok()) return unexpected(impl_->sql_error("cannot read search runs"));
    s.bind(1, project).bind(2, version);
    std::vector<SearchRunRecord> out;
    int rc = 0;
    while ((rc = s.step()) == SQLITE_ROW) out.push_back(run_from(s));
    if (rc != SQLITE_DONE) return unexpected(impl_->sql_error("cannot read search runs"));
    return out;
}

Expected<SearchRun, StoreError> Session::load_search_run(SearchRunId run) const {
    std::lock_guard lock(impl_->mutex);
    if (impl_->schema < 3) return unexpected(impl_->no_row("search run", run));
    SearchRun out;
    {
        const std::string sql = std::string(kRunColumns) + "WHERE r.id = ?";
        Stmt s = impl_->prepare(sql.c_str());
        if (!s.ok()) return unexpected(impl_->sql_error("cannot read search run " + std::to_string(run)));
        const int rc = s.bind(1, run).step();
        if (rc == SQLITE_DONE) return unexpected(impl_->no_row("search run", run));
        if (rc != SQLITE_ROW) return unexpected(impl_->sql_error("cannot read search run " + std::to_string(run)));
        out.run = run_from(s);
    }
    Stmt s = impl_->prepare(
        "SELECT id, generation, objectives_json, plan_json, on_front FROM search_candidates WHERE run_id = ? "
        "ORDER BY id");
    if (!s.ok()) return unexpected(impl_->sql_error("cannot read the candidates of search run " + std::to_string(run)));
    s.bind(1, run);
    int rc = 0;
    while ((rc = s.step()) == SQLITE_ROW) {
        SearchCandidateRecord c;
        c.row = s.i64(0);
        c.generation = static_cast<int>(s.i64(1));
        c.on_front = s.i64(4) != 0;
        const std::string why = s.is_null(3) ? std::string("plan_json is empty (the candidate's choices)")
                                             : read_candidate(s.text(2), s.text(3), c);
        if (!why.empty())
            return unexpected(make_error("damaged", "session " + impl_->file + ": search run " + std::to_string(run) +
                                                        ", candidate row " + std::to_string(c.row) + ": " + why));
        out.candidates.push_back(std::move(c));
    }
    if (rc != SQLITE_DONE)
        return unexpected(impl_->sql_error("cannot read the candidates of search run " + std::to_string(run)));
    return out;
}

Expected<std::int64_t, StoreError> Session::value_count() const {
    std::lock_guard lock(impl_->mutex);
    Stmt s = impl_->prepare("SELECT count(*) FROM tensor_values");
    if (!s.ok() || s.step() != SQLITE_ROW) return unexpected(impl_->sql_error("cannot count values"));
    return s.i64(0);
}

Expected<ProjectId, StoreError> find_project(const Session &session, std::string_view name) {
    auto projects = session.projects();
    if (!projects) return unexpected(projects.error());
    ProjectId found = 0;
    for (const ProjectInfo &info : *projects)
        if (info.name == name) found = std::max(found, info.id);
    return found;
}

Expected<VersionId, StoreError> version_of_graph(Session &session, ProjectId project, const Graph &g,
                                                 std::string_view kind) {
    auto info = session.project(project);
    if (!info) return unexpected(info.error());
    if (info->latest_version_id != 0)
        if (auto latest = session.load_latest(project); latest && serialize_project(*latest) == serialize_project(g))
            return info->latest_version_id;
    auto saved = session.save_version(project, g, kind);
    if (!saved) return unexpected(saved.error());
    return saved->id;
}

}  // namespace tapestry::store
