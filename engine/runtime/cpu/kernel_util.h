// Small helpers the CPU kernel files share (runtime/cpu/kernels_<family>.cpp):
// the check that a run's views have the strides a kernel was made for, the
// kernel of an empty index range, the factory of kernels that take no epilogue,
// and the copy of one element.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "common/check.h"
#include "common/expected.h"
#include "runtime/cpu/kernel.h"

namespace tapestry::cpu {

using Strides = std::vector<std::int64_t>;

// Strides with those of size-1 dims zeroed: two views of one shape address the
// same elements exactly when their canonical strides are equal.
inline Strides canonical_strides(const ZPoint &shape, Strides s) {
    for (int d = 0; d < shape.rank(); ++d)
        if (shape[d] == 1) s[static_cast<size_t>(d)] = 0;
    return s;
}

// Stops the program with `what` when a run's view has other strides than those
// the kernel was made for (an executor bug, not a user error).
inline void check_view(const View &v, const Strides &expected, const char *what) {
    TAPESTRY_CHECK(canonical_strides(v.shape, v.strides) == canonical_strides(v.shape, expected), what);
}

// The kernel of an empty index range: it touches nothing.
class NoopKernel final : public Kernel {
public:
    void run(std::span<const View>, std::span<const View>) override {}
};
inline Expected<std::unique_ptr<Kernel>, std::string> noop_kernel() {
    return std::unique_ptr<Kernel>(new NoopKernel());
}

// KernelFactory::can_fuse of kernels that take no epilogue.
inline bool never_fuse(const KernelSpec &, const Epilogue &) {
    return false;
}

// The factory of a kind whose kernels take no epilogue: `make` for a non-empty
// index range, the no-op kernel for an empty one.
inline KernelFactory unfused_factory(
    std::string kind, std::function<Expected<std::unique_ptr<Kernel>, std::string>(const KernelSpec &)> make) {
    KernelFactory f;
    f.kind = std::move(kind);
    f.can_fuse = never_fuse;
    f.make = [make = std::move(make)](const KernelSpec &spec) -> Expected<std::unique_ptr<Kernel>, std::string> {
        if (spec.index_range.empty()) return noop_kernel();
        return make(spec);
    };
    return f;
}

// Copies one element of `size` bytes.
inline void copy_element(std::byte *dst, const std::byte *src, int size) {
    switch (size) {
        case 1: *dst = *src; break;
        case 2: std::memcpy(dst, src, 2); break;
        case 4: std::memcpy(dst, src, 4); break;
        case 8: std::memcpy(dst, src, 8); break;
        default: std::memcpy(dst, src, static_cast<size_t>(size));
    }
}

}  // namespace tapestry::cpu
