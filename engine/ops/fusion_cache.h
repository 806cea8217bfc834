// A memo in front of a fusion backend (ops/fusion.h): the fuse pass asks a
// backend about every piece of every chain it would fuse, and a backend answers
// by building the kernel it would run (the CPU's: a oneDNN primitive) — the same
// pieces come back with every search candidate that fuses alike. Same piece
// (definition, parameters, operand types, index range, views), same answer.
// Thread-safe; answers hold no ISL object.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <shared_mutex>
#include <string>
#include <unordered_map>

#include "ops/fusion.h"

namespace tapestry {

class FusionCache final : public FusionBackend {
public:
    // `inner` must outlive the cache. At most `capacity` answers are kept; past
    // that, the backend is asked and the answer not kept.
    explicit FusionCache(const FusionBackend &inner, std::size_t capacity = 4096);

    std::string name() const override { return inner_.name(); }
    std::string refusal(const FusedPiece &piece) const override;

    // Questions answered from the memo, and asked of the backend (tests, benchmarks).
    std::int64_t hits() const { return hits_.load(std::memory_order_relaxed); }
    std::int64_t misses() const { return misses_.load(std::memory_order_relaxed); }

private:
    struct Entry {
        FusedPiece piece;
        std::string refusal;
    };
    const FusionBackend &inner_;
    std::size_t capacity_;
    mutable std::shared_mutex mutex_;
    mutable std::unordered_multimap<std::uint64_t, std::shared_ptr<const Entry>> memo_;
    mutable std::atomic<std::int64_t> hits_{0}, misses_{0};
};

}  // namespace tapestry
