// Every CUDA kernel factory, by op kind (runtime/cuda/kernel.h).
#include <algorithm>
#include <map>

#include "runtime/cuda/kernel.h"

namespace tapestry::cuda {

namespace {

const std::map<std::string, KernelFactory> &registry() {
    static const std::map<std::string, KernelFactory> all = [] {
        std::map<std::string, KernelFactory> m;
        for (auto family : {elementwise_factories, row_factories, data_factories, gemm_factories, conv_factories,
                            fused_factories})
            for (KernelFactory &f : family()) {
                const std::string kind = f.kind;
                m.emplace(kind, std::move(f));
            }
        return m;
    }();
    return all;
}

}  // namespace

bool View::dense() const {
    std::int64_t expect = 1;
    for (int d = shape.rank() - 1; d >= 0; --d) {
        if (shape[d] > 1 && strides[static_cast<size_t>(d)] != expect) return false;
        expect *= shape[d];
    }
    return true;
}

const KernelFactory *find_kernel(const std::string &kind) {
    const auto &all = registry();
    const auto it = all.find(kind);
    return it == all.end() ? nullptr : &it->second;
}

std::vector<std::string> kernel_kinds() {
    std::vector<std::string> kinds;
    for (const auto &[kind, factory] : registry()) kinds.push_back(kind);
    return kinds;
}

}  // namespace tapestry::cuda
