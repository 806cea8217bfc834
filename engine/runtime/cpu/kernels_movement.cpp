// CPU kernel of the data-movement kind `move`: on one machine every collective is
// a copy of the shard's box of x into the same box of y (strided views, any dtype).
#include <cstring>

#include "common/check.h"
#include "runtime/cpu/kernel.h"
#include "runtime/cpu/kernel_util.h"

namespace tapestry::cpu {
namespace {

class MoveKernel final : public Kernel {
public:
    void run(std::span<const View> inputs, std::span<const View> outputs) override {
        TAPESTRY_CHECK(inputs.size() == 1 && outputs.size() == 1, "move kernel: expects one input and one output");
        const View &x = inputs[0];
        const View &y = outputs[0];
        TAPESTRY_CHECK(x.shape == y.shape && x.dtype == y.dtype, "move kernel: x and y views differ");
        if (x.elements() == 0) return;
        const int rank = x.shape.rank();
        const std::int64_t esize = dtype_bytes(x.dtype);
        if (rank == 0) {
            std::memcpy(y.data, x.data, static_cast<size_t>(esize));
            return;
        }
        // Row by row along the last dim; a dense row is one memcpy.
        const int last = rank - 1;
        const std::int64_t row = x.shape[last];
        const bool dense_rows = x.strides[static_cast<size_t>(last)] == 1 && y.strides[static_cast<size_t>(last)] == 1;
        std::vector<std::int64_t> at(static_cast<size_t>(rank), 0);
        while (true) {
            std::int64_t xo = 0, yo = 0;
            for (int d = 0; d < last; ++d) {
                xo += at[static_cast<size_t>(d)] * x.strides[static_cast<size_t>(d)];
                yo += at[static_cast<size_t>(d)] * y.strides[static_cast<size_t>(d)];
            }
            const std::byte *src = x.data + xo * esize;
            std::byte *dst = y.data + yo * esize;
            if (dense_rows) {
                std::memcpy(dst, src, static_cast<size_t>(row * esize));
            } else {
                const std::int64_t xs = x.strides[static_cast<size_t>(last)] * esize;
                const std::int64_t ys = y.strides[static_cast<size_t>(last)] * esize;
                for (std::int64_t j = 0; j < row; ++j)
                    std::memcpy(dst + j * ys, src + j * xs, static_cast<size_t>(esize));
            }
            int d = last - 1;
            while (d >= 0) {
                if (++at[static_cast<size_t>(d)] < x.shape[d]) break;
                at[static_cast<size_t>(d)] = 0;
                --d;
            }
            if (d < 0) return;
        }
    }
};

}  // namespace

void register_kernels_movement(std::vector<KernelFactory> &out) {
    KernelFactory f;
    f.kind = "move";
    f.can_fuse = never_fuse;
    f.make = [](const KernelSpec &) -> Expected<std::unique_ptr<Kernel>, std::string> {
        return std::unique_ptr<Kernel>(new MoveKernel());
    };
    out.push_back(std::move(f));
}

}  // namespace tapestry::cpu
