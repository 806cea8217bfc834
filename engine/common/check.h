// Internal invariants (STYLE.md "two error channels"): a broken invariant is a
// programming error and stops the program with a message. Bad user input is
// never reported through here — it travels as a value (see graph/issue.h).
#pragma once

#include <cstdio>
#include <cstdlib>

namespace tapestry::detail {
[[noreturn]] inline void check_failed(const char *expr, const char *file, int line, const char *msg) {
    std::fprintf(stderr, "tapestry: internal error: %s (%s) at %s:%d\n", msg, expr, file, line);
    std::abort();
}
}  // namespace tapestry::detail

#define TAPESTRY_CHECK(cond, msg)                                                    \
    do {                                                                             \
        if (!(cond)) ::tapestry::detail::check_failed(#cond, __FILE__, __LINE__, msg); \
    } while (false)
