// The stages a search's candidates share (docs/search.md, "How a candidate is
// evaluated"): candidates that differ only in placement, device maps or fusion
// split their operations the same way, so the shard pass's stage of one serves
// the others (and the fuse pass's, where they fuse alike) — a mutation re-runs
// only the passes after the choice it changed. A least-recently-used memo by the
// choices that made the stage, bounded by entries and by the pieces (operations
// and their shards) its graphs hold. Thread-safe: a stage holds no ISL object.
#pragma once

#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "passes/stage.h"

namespace tapestry::search {

class StageMemo {
public:
    explicit StageMemo(std::size_t entries = 64, std::size_t pieces = 1'000'000);

    // The stage kept under `key`, or null (then counted as a miss).
    std::shared_ptr<const Stage> find(const std::string &key) const;
    // Keeps `stage` under `key` (as the newest), dropping the oldest past the bounds;
    // a stage larger than the whole piece bound is not kept.
    void keep(const std::string &key, std::shared_ptr<const Stage> stage) const;

    std::int64_t hits() const;
    std::int64_t misses() const;
    std::size_t size() const;

private:
    struct Entry {
        std::string key;
        std::shared_ptr<const Stage> stage;
        std::size_t pieces;  // pieces_of(*stage)
    };
    static std::size_t pieces_of(const Stage &s);
    std::size_t entries_, pieces_;
    mutable std::mutex mutex_;
    mutable std::list<Entry> order_;  // newest first
    mutable std::unordered_map<std::string, std::list<Entry>::iterator> at_;
    mutable std::size_t held_ = 0;  // pieces held
    mutable std::int64_t hits_ = 0, misses_ = 0;
};

}  // namespace tapestry::search
