// The shape the search's memos share (passes/movement.h MovementMemo, passes/fuse.h
// FuseMemo, passes/place.h PlacementMemo, plan/compile.h PieceMemo): tables that
// the pass keeping them defines in its own .cpp, keyed by graph nodes; a bound on
// what they hold, past which they start over; and counts of the lookups answered
// and missed. A memo changes no result, only the time. Not thread-safe: one per
// thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

namespace tapestry {

template <class Tables>
class NodeMemo {
public:
    NodeMemo(const NodeMemo &) = delete;
    NodeMemo &operator=(const NodeMemo &) = delete;

    std::int64_t hits() const { return hits_; }
    std::int64_t misses() const { return misses_; }

    // The pass's own.
    Tables &tables() { return *tables_; }
    const Tables &tables() const { return *tables_; }
    std::size_t bound() const { return bound_; }
    void note(bool hit) { ++(hit ? hits_ : misses_); }
    // Drops every entry (the pass makes the fresh tables: only it sees their type).
    void start_over(std::shared_ptr<Tables> fresh) { tables_ = std::move(fresh); }

protected:
    // `tables` made where Tables is complete (a shared_ptr keeps its deleter).
    NodeMemo(std::size_t bound, std::shared_ptr<Tables> tables) : bound_(bound), tables_(std::move(tables)) {}
    ~NodeMemo() = default;

private:
    std::size_t bound_;
    std::shared_ptr<Tables> tables_;
    std::int64_t hits_ = 0, misses_ = 0;
};

// Hash and equality of a memo's keys through views of them, so that a key is
// looked up without a copy of its lists: `Views::view(k)` gives a View (with
// `hash()` and `==`) of a key or of a view.
template <class Views>
struct ViewHash {
    using is_transparent = void;
    template <class K>
    std::size_t operator()(const K &k) const {
        return Views::view(k).hash();
    }
};
template <class Views>
struct ViewEqual {
    using is_transparent = void;
    template <class A, class B>
    bool operator()(const A &a, const B &b) const {
        return Views::view(a) == Views::view(b);
    }
};

}  // namespace tapestry
