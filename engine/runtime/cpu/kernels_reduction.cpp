// CPU kernels of the reductions — reduce_sum, reduce_mean, reduce_max — as
// oneDNN reductions (a reorder where every reduced axis has extent 1).
#include <algorithm>
#include <unordered_map>

#include "ops/op_util.h"
#include "runtime/cpu/dnnl_util.h"
#include "runtime/cpu/kernel_util.h"

namespace tapestry::cpu {

namespace {

class ReduceKernel final : public Kernel {
public:
    static Expected<std::unique_ptr<Kernel>, std::string> make(const KernelSpec &spec, dnnl::algorithm alg) {
        return dnnl_guard(std::string(spec.def->kind()), [&]() -> Expected<std::unique_ptr<Kernel>, std::string> {
            auto k = std::unique_ptr<ReduceKernel>(new ReduceKernel());
            k->threads_ = spec.threads;
            k->x_strides_ = spec_input_strides(spec, 0);
            k->y_strides_ = spec_output_strides(spec, 0);
            const ZPoint &xs = spec.input_shapes.at(0), &ys = spec.output_shapes.at(0);
            const DType t = spec.operands.at(0).operands.at(0).dtype;
            const int rank = xs.rank();
            const auto axes = op_util::checked_axes("reduce", "axes", spec.params.get_ints("axes", {}), rank);
            if (!axes) return unexpected(axes.error().message);
            const bool keep = spec.params.get_bool("keepdims", true);
            // y's descriptor in x's rank: reduced dims of extent 1.
            ZPoint dshape = ZPoint::filled(rank, 1);
            Strides dstrides(static_cast<size_t>(rank), 0);
            int j = 0;
            for (int d = 0; d < rank; ++d) {
                const bool reduced = std::find(axes->begin(), axes->end(), d) != axes->end();
                if (reduced) {
                    if (keep) ++j;
                    continue;
                }
                dshape[d] = ys[j];
                dstrides[static_cast<size_t>(d)] = k->y_strides_[static_cast<size_t>(j)];
                ++j;
            }
            auto xmd = make_md(xs, k->x_strides_, t);
            if (!xmd) return unexpected(xmd.error());
            auto ymd = make_md(dshape, dstrides, t);
            if (!ymd) return unexpected(ymd.error());
            if (dshape == xs) {
                // Every reduced axis has extent 1 (e.g. a [1, 1, 1] tensor summed to a
                // scalar): the result is x itself. oneDNN refuses a reduction that
                // reduces nothing, so copy instead (found by the equivalence properties).
                k->primitive_ = dnnl::reorder(dnnl::reorder::primitive_desc(cpu_engine(), *xmd, cpu_engine(), *ymd));
                k->args_[DNNL_ARG_FROM] = dnnl::memory(*xmd, cpu_engine(), DNNL_MEMORY_NONE);
                k->args_[DNNL_ARG_TO] = dnnl::memory(*ymd, cpu_engine(), DNNL_MEMORY_NONE);
                return std::unique_ptr<Kernel>(std::move(k));
            }
            const dnnl::reduction::desc d(alg, *xmd, *ymd, 0.f, 0.f);
            const dnnl::reduction::primitive_desc pd(d, make_attr(), cpu_engine());
            k->primitive_ = dnnl::reduction(pd);
            k->args_[DNNL_ARG_SRC] = dnnl::memory(*xmd, cpu_engine(), DNNL_MEMORY_NONE);
            k->args_[DNNL_ARG_DST] = dnnl::memory(*ymd, cpu_engine(), DNNL_MEMORY_NONE);
            k->scratchpad_.resize(pd.scratchpad_desc().get_size());
            k->args_[DNNL_ARG_SCRATCHPAD] = dnnl::memory(
                pd.scratchpad_desc(), cpu_engine(), k->scratchpad_.empty() ? DNNL_MEMORY_NONE : k->scratchpad_.data());
            return std::unique_ptr<Kernel>(std::move(k));
        });
    }

    void run(std::span<const View> inputs, std::span<const View> outputs) override {
        check_view(inputs[0], x_strides_, "reduce: x strides differ from the spec");
        check_view(outputs[0], y_strides_, "reduce: y strides differ from the spec");
        args_.at(DNNL_ARG_SRC).set_data_handle(inputs[0].data);
        args_.at(DNNL_ARG_DST).set_data_handle(outputs[0].data);
        set_omp_threads(threads_);
        dnnl::stream &s = thread_stream();
        primitive_.execute(s, args_);
        s.wait();
    }
    std::size_t scratch_bytes() const override { return scratchpad_.size(); }

private:
    int threads_ = 1;
    Strides x_strides_, y_strides_;
    dnnl::primitive primitive_;
    std::unordered_map<int, dnnl::memory> args_;
    std::vector<std::uint8_t> scratchpad_;
};

KernelFactory reduce_factory(const std::string &kind, dnnl::algorithm alg) {
    return unfused_factory(kind, [alg](const KernelSpec &spec) { return ReduceKernel::make(spec, alg); });
}

}  // namespace

void register_kernels_reduction(std::vector<KernelFactory> &out) {
    out.push_back(reduce_factory("reduce_sum", dnnl::algorithm::reduction_sum));
    out.push_back(reduce_factory("reduce_mean", dnnl::algorithm::reduction_mean));
    out.push_back(reduce_factory("reduce_max", dnnl::algorithm::reduction_max));
}

}  // namespace tapestry::cpu
