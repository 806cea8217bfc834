// The per-thread ISL context and the checks around ISL calls.
#include "index/isl_handles.h"

#include <climits>
#include <cstdio>

#include "common/check.h"

namespace tapestry::isl {

Context::Context() : ctx_(isl_ctx_alloc()) {
    TAPESTRY_CHECK(ctx_ != nullptr, "could not allocate an ISL context");
    // Errors come back as null results or isl_bool_error, which `must` turns into
    // an internal error with ISL's message, instead of ISL printing and aborting
    // on its own.
    isl_options_set_on_error(ctx_, ISL_ON_ERROR_CONTINUE);
}

Context::~Context() {
    isl_ctx_free(ctx_);
}

const std::shared_ptr<Context> &thread_context() {
    thread_local const std::shared_ptr<Context> context = std::make_shared<Context>();
    return context;
}

void fail(isl_ctx *ctx, const char *what) {
    const char *msg = ctx ? isl_ctx_last_error_msg(ctx) : nullptr;
    const char *file = ctx ? isl_ctx_last_error_file(ctx) : nullptr;
    std::fprintf(stderr, "tapestry: ISL error in %s: %s (%s:%d)\n", what, msg ? msg : "no message", file ? file : "?",
                 ctx ? isl_ctx_last_error_line(ctx) : 0);
    detail::check_failed("ISL call failed", __FILE__, __LINE__, what);
}

bool must(isl_ctx *ctx, isl_bool b, const char *what) {
    if (b == isl_bool_error) fail(ctx, what);
    return b == isl_bool_true;
}

Coord to_coord(isl_ctx *ctx, const Val &v, const char *what) {
    if (!v) fail(ctx, what);
    if (!must(ctx, isl_val_is_int(v.get()), what)) fail(ctx, what);
    if (isl_val_cmp_si(v.get(), LONG_MAX) > 0 || isl_val_cmp_si(v.get(), LONG_MIN) < 0) fail(ctx, what);
    return static_cast<Coord>(isl_val_get_num_si(v.get()));
}

}  // namespace tapestry::isl
