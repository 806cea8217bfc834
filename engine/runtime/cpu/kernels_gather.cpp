// CPU kernels of embedding and gather: plain loops copying one block of the
// data's trailing dims per index; bad ids give NaN rows (0 for integers) like
// the reference.
#include <cstring>
#include <limits>

#include "ops/op_util.h"
#include "runtime/cpu/dnnl_util.h"
#include "runtime/cpu/kernel_util.h"

namespace tapestry::cpu {

namespace {

// y = data.shape[:a] + indices.shape + data.shape[a+1:]: per (leading point, index)
// one block of data's trailing dims is copied, or filled with NaN for a bad index.
class TakeKernel final : public Kernel {
public:
    TakeKernel(const KernelSpec &spec, size_t data_view, size_t index_view, int axis, bool negative_ok)
        : data_view_(data_view),
          index_view_(index_view),
          axis_(axis),
          negative_ok_(negative_ok),
          threads_(spec.threads) {
        data_type_ = spec.operands.at(data_view).operands.at(0).dtype;
        index_type_ = spec.operands.at(index_view).operands.at(0).dtype;
        esize_ = dtype_bytes(data_type_);
        n_ = spec.operands.at(data_view).operands.at(0).shape[axis];
        data_strides_ = spec_input_strides(spec, data_view);
        index_strides_ = spec_input_strides(spec, index_view);
        y_strides_ = spec_output_strides(spec, 0);
        const ZPoint &ds = spec.input_shapes.at(data_view), &is = spec.input_shapes.at(index_view);
        const int r = is.rank();
        // Outer loop: leading dims, then index dims.
        for (int d = 0; d < axis; ++d) {
            outer_.push_back(ds[d]);
            outer_data_.push_back(data_strides_[static_cast<size_t>(d)]);
            outer_index_.push_back(0);
            outer_y_.push_back(y_strides_[static_cast<size_t>(d)]);
        }
        for (int d = 0; d < r; ++d) {
            outer_.push_back(is[d]);
            outer_data_.push_back(0);
            outer_index_.push_back(index_strides_[static_cast<size_t>(d)]);
            outer_y_.push_back(y_strides_[static_cast<size_t>(axis + d)]);
        }
        // Trailing block: offsets of its elements in data and y.
        std::vector<std::int64_t> block;
        Strides bd, by;
        for (int d = axis + 1; d < ds.rank(); ++d) {
            block.push_back(ds[d]);
            bd.push_back(data_strides_[static_cast<size_t>(d)]);
            by.push_back(y_strides_[static_cast<size_t>(d - 1 + r)]);
        }
        std::int64_t count = 1;
        for (std::int64_t e : block) count *= e;
        for (std::int64_t l = 0; l < count; ++l) {
            std::int64_t rem = l, od = 0, oy = 0;
            for (size_t d = block.size(); d-- > 0;) {
                const std::int64_t i = rem % block[d];
                rem /= block[d];
                od += i * bd[d];
                oy += i * by[d];
            }
            block_data_.push_back(od);
            block_y_.push_back(oy);
        }
        contiguous_ = true;
        for (size_t l = 0; l < block_data_.size(); ++l)
            contiguous_ = contiguous_ && block_data_[l] == static_cast<std::int64_t>(l) &&
                          block_y_[l] == static_cast<std::int64_t>(l);
    }

    void run(std::span<const View> inputs, std::span<const View> outputs) override {
        check_view(inputs[data_view_], data_strides_, "take: data strides differ from the spec");
        check_view(inputs[index_view_], index_strides_, "take: index strides differ from the spec");
        check_view(outputs[0], y_strides_, "take: y strides differ from the spec");
        const std::byte *data = inputs[data_view_].data;
        const std::byte *idx = inputs[index_view_].data;
        std::byte *y = outputs[0].data;
        std::int64_t rows = 1;
        for (std::int64_t e : outer_) rows *= e;
        const std::int64_t axis_stride = data_strides_[static_cast<size_t>(axis_)];
        const std::int64_t block = static_cast<std::int64_t>(block_data_.size());
        std::byte nan_bytes[8] = {};
        nan_value(nan_bytes);
#pragma omp parallel for num_threads(threads_) if (threads_ > 1 && rows * block > (1 << 15)) schedule(static)
        for (std::int64_t r = 0; r < rows; ++r) {
            std::int64_t rem = r, od = 0, oi = 0, oy = 0;
            for (size_t d = outer_.size(); d-- > 0;) {
                const std::int64_t i = rem % outer_[d];
                rem /= outer_[d];
                od += i * outer_data_[d];
                oi += i * outer_index_[d];
                oy += i * outer_y_[d];
            }
            std::int64_t id = index_type_ == DType::i64 ? reinterpret_cast<const std::int64_t *>(idx)[oi]
                                                        : reinterpret_cast<const std::int32_t *>(idx)[oi];
            if (negative_ok_ && id < 0) id += n_;
            std::byte *dst = y + oy * esize_;
            if (id < 0 || id >= n_) {
                for (std::int64_t l = 0; l < block; ++l)
                    std::memcpy(dst + block_y_[static_cast<size_t>(l)] * esize_, nan_bytes,
                                static_cast<size_t>(esize_));
                continue;
            }
            const std::byte *src = data + (od + id * axis_stride) * esize_;
            if (contiguous_) {
                std::memcpy(dst, src, static_cast<size_t>(block * esize_));
            } else {
                for (std::int64_t l = 0; l < block; ++l)
                    copy_element(dst + block_y_[static_cast<size_t>(l)] * esize_,
                                 src + block_data_[static_cast<size_t>(l)] * esize_, esize_);
            }
        }
    }

private:
    // The "bad index" value in the data's dtype: NaN for floats, 0 for integers
    // (which have no NaN).
    void nan_value(std::byte *out) const {
        switch (data_type_) {
            case DType::f32: {
                const float v = std::numeric_limits<float>::quiet_NaN();
                std::memcpy(out, &v, 4);
                break;
            }
            case DType::f16: {
                const std::uint16_t v = 0x7E00;
                std::memcpy(out, &v, 2);
                break;
            }
            case DType::bf16: {
                const std::uint16_t v = 0x7FC0;
                std::memcpy(out, &v, 2);
                break;
            }
            default: break;
        }
    }

    size_t data_view_, index_view_;
    int axis_;
    bool negative_ok_;
    int threads_;
    DType data_type_ = DType::f32, index_type_ = DType::i64;
    int esize_ = 4;
    std::int64_t n_ = 0;
    Strides data_strides_, index_strides_, y_strides_;
    std::vector<std::int64_t> outer_;
    Strides outer_data_, outer_index_, outer_y_;
    std::vector<std::int64_t> block_data_, block_y_;
    bool contiguous_ = false;
};

// embedding(ids, table): rows of the table (axis 0), ids as they are.
Expected<std::unique_ptr<Kernel>, std::string> make_embedding(const KernelSpec &spec) {
    return std::unique_ptr<Kernel>(new TakeKernel(spec, 1, 0, 0, false));
}

// gather(data, indices): along `axis`, negative indices counting from the end.
Expected<std::unique_ptr<Kernel>, std::string> make_gather(const KernelSpec &spec) {
    const int rank = spec.operands.at(0).operands.at(0).shape.rank();
    const int axis = *op_util::normalize_axis(spec.params.get_int("axis", 0), rank);
    return std::unique_ptr<Kernel>(new TakeKernel(spec, 0, 1, axis, true));
}

}  // namespace

void register_kernels_gather(std::vector<KernelFactory> &out) {
    out.push_back(unfused_factory("embedding", make_embedding));
    out.push_back(unfused_factory("gather", make_gather));
}

}  // namespace tapestry::cpu
