// Private to engine/index: RAII handles over ISL objects and the per-thread ISL
// context. Only index_set.cpp includes this; no ISL type appears in a public header.
#pragma once

#include <isl/aff.h>
#include <isl/constraint.h>
#include <isl/ctx.h>
#include <isl/ilp.h>
#include <isl/local_space.h>
#include <isl/map.h>
#include <isl/options.h>
#include <isl/point.h>
#include <isl/set.h>
#include <isl/space.h>
#include <isl/val.h>

#include <memory>

#include "index/zpoint.h"

namespace tapestry::isl {

// Owns one isl_ctx. Every IndexSet keeps a shared reference to the context of the
// thread that made it, so the context outlives the last set even when that set is
// destroyed after the thread's thread_local objects (a static IndexSet, say).
class Context {
public:
    Context();
    ~Context();
    Context(const Context &) = delete;
    Context &operator=(const Context &) = delete;
    isl_ctx *get() const { return ctx_; }

private:
    isl_ctx *ctx_;
};

// The calling thread's context, created on first use.
const std::shared_ptr<Context> &thread_context();

// A failed ISL call is an internal error (our sets are always well formed): report
// ISL's own message and stop.
[[noreturn]] void fail(isl_ctx *ctx, const char *what);

template <typename T>
T *must(isl_ctx *ctx, T *p, const char *what) {
    if (!p) fail(ctx, what);
    return p;
}
bool must(isl_ctx *ctx, isl_bool b, const char *what);

template <auto Free>
struct Deleter {
    template <typename T>
    void operator()(T *p) const {
        Free(p);
    }
};
using Set = std::unique_ptr<isl_set, Deleter<&isl_set_free>>;
using BasicSet = std::unique_ptr<isl_basic_set, Deleter<&isl_basic_set_free>>;
using Map = std::unique_ptr<isl_map, Deleter<&isl_map_free>>;
using Val = std::unique_ptr<isl_val, Deleter<&isl_val_free>>;
using Point = std::unique_ptr<isl_point, Deleter<&isl_point_free>>;

inline isl_set *copy(const Set &s) {
    return isl_set_copy(s.get());
}
inline isl_map *copy(const Map &m) {
    return isl_map_copy(m.get());
}

// An ISL integer value as a Coord; stops on infinity, NaN or a rational.
Coord to_coord(isl_ctx *ctx, const Val &v, const char *what);

}  // namespace tapestry::isl
