// The table of CPU kernel factories, and View helpers.
#include <algorithm>
#include <map>

#include "runtime/cpu/kernel.h"

namespace tapestry::cpu {

bool View::dense() const {
    std::int64_t expect = 1;
    for (int d = shape.rank() - 1; d >= 0; --d) {
        if (shape[d] != 1 && strides[static_cast<size_t>(d)] != expect) return false;
        expect *= shape[d];
    }
    return true;
}

namespace {
const std::map<std::string, KernelFactory> &table() {
    static const std::map<std::string, KernelFactory> t = [] {
        std::vector<KernelFactory> all;
        register_kernels_matmul(all);
        register_kernels_elementwise(all);
        register_kernels_normalization(all);
        register_kernels_convolution(all);
        register_kernels_reduction(all);
        register_kernels_shape(all);
        register_kernels_gather(all);
        register_kernels_attention(all);
        register_kernels_movement(all);
        register_kernels_fused(all);
        std::map<std::string, KernelFactory> m;
        for (KernelFactory &f : all) {
            TAPESTRY_CHECK(m.count(f.kind) == 0, "CPU kernel registered twice");
            std::string k = f.kind;
            m.emplace(std::move(k), std::move(f));
        }
        return m;
    }();
    return t;
}
}  // namespace

const KernelFactory *find_kernel(const std::string &kind) {
    auto it = table().find(kind);
    return it == table().end() ? nullptr : &it->second;
}

std::vector<std::string> kernel_kinds() {
    std::vector<std::string> out;
    for (const auto &[k, f] : table()) out.push_back(k);
    return out;
}

}  // namespace tapestry::cpu
