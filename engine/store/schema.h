// The session schema's history (docs/sessions.md): an ordered list of forward
// migrations, each taking the file from `version - 1` to `version` in one
// transaction. PRAGMA user_version holds the version a file is at.
#pragma once

#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

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
// The tables a file at schema `version` has, in creation order (read from the
// migrations' CREATE TABLE statements): a file whose user_version claims a
// version but lacks one of them is not a Tapestry session.
std::vector<std::string> tables_of_schema(int version);

// Creates a NEW session file at an older schema version `version` (1 ≤ version ≤
// current) — the file a released older Tapestry would have made. For migration
// tests and tools; fails with "invalid" if `path` exists.
Expected<std::unique_ptr<Session>, StoreError> create_session_at_version(const std::filesystem::path &path,
                                                                         int version);

}  // namespace tapestry::store
