// The session schema's history (docs/sessions.md): an ordered list of forward
// migrations, each taking the file from `version - 1` to `version` in one
// transaction. PRAGMA user_version holds the version a file is at.
#pragma once

#include <filesystem>
#include <memory>
#include <span>
#include <string_view>

#include "store/session.h"

namespace tapestry::store {

struct Migration {
    int version;           // the schema version this step produces
    std::string_view sql;  // statements, applied in one transaction
};

// Every migration, oldest first; migrations()[i].version == i + 1. Never edit a
// shipped step: add the next one.
std::span<const Migration> migrations();
// The version this code writes (the last migration's).
int current_schema_version();

// Creates a NEW session file at an older schema version `version` (1 ≤ version ≤
// current) — the file a released older Tapestry would have made. For migration
// tests and tools; fails with "invalid" if `path` exists.
Expected<std::unique_ptr<Session>, StoreError> create_session_at_version(const std::filesystem::path &path,
                                                                         int version);

}  // namespace tapestry::store
