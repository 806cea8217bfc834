// The CPU attention kernel: per batch·head pair, a oneDNN matmul q·kᵀ with the
// scale and the masks as post-ops, softmax, and a matmul with v written in place
// into y's head columns; pairs run in parallel, one thread each.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <unordered_map>

#include "common/checked_size.h"
#include "runtime/cpu/dnnl_util.h"
#include "runtime/cpu/kernel_util.h"
#include "runtime/cpu/memory_budget.h"

namespace tapestry::cpu {

namespace {

using dims = dnnl::memory::dims;

class AttentionKernel final : public Kernel {
public:
    static Expected<std::unique_ptr<Kernel>, std::string> make(const KernelSpec &spec) {
        return dnnl_guard("attention", [&]() -> Expected<std::unique_ptr<Kernel>, std::string> {
            auto k = std::unique_ptr<AttentionKernel>(new AttentionKernel());
            if (auto e = k->build(spec); !e) return unexpected(e.error());
            return std::unique_ptr<Kernel>(std::move(k));
        });
    }

    void run(std::span<const View> inputs, std::span<const View> outputs) override {
        for (size_t i = 0; i < in_strides_.size(); ++i)
            check_view(inputs[i], in_strides_[i], "attention: input view strides differ from the spec");
        check_view(outputs[0], y_strides_, "attention: output view strides differ from the spec");
        const std::int64_t pairs = b_ * h_;
        const int workers = static_cast<int>(std::min<std::int64_t>(workers_.size(), pairs));
        if (workers <= 1) {
            set_omp_threads(threads_);
            for (std::int64_t p = 0; p < pairs; ++p) pair(workers_[0], p, inputs, outputs);
            thread_stream().wait();
            return;
        }
        // One (batch, head) pair per worker at a time, each with its own scores
        // and memory objects; oneDNN runs single-threaded inside.
#pragma omp parallel num_threads(workers)
        {
            omp_set_num_threads(1);
            const int w = omp_get_thread_num();
#pragma omp for schedule(dynamic, 1)
            for (std::int64_t p = 0; p < pairs; ++p) pair(workers_[static_cast<size_t>(w)], p, inputs, outputs);
            thread_stream().wait();
        }
    }
    std::size_t scratch_bytes() const override {
        std::size_t n = causal_.size() * sizeof(float);
        for (const Worker &w : workers_) n += w.scores.size() * sizeof(float) + w.scratchpad.size();
        return n;
    }

private:
    struct Worker {
        std::vector<float> scores;
        std::vector<std::uint8_t> scratchpad;
        std::unordered_map<int, dnnl::memory> mm1, soft, mm2;
    };

    void pair(Worker &w, std::int64_t p, std::span<const View> inputs, std::span<const View> outputs) {
        const std::int64_t b = p / h_, h = p % h_;
        const size_t es = sizeof(float);
        auto at = [&](const View &v, std::int64_t off) {
            return static_cast<void *>(v.data + off * static_cast<std::int64_t>(es));
        };
        w.mm1.at(DNNL_ARG_SRC).set_data_handle(at(inputs[0], b * q_[0] + h * e_ * q_[2]));
        w.mm1.at(DNNL_ARG_WEIGHTS).set_data_handle(at(inputs[1], b * k_[0] + h * e_ * k_[2]));
        if (has_mask_) w.mm1.at(post_op_arg(0)).set_data_handle(inputs[3].data);
        w.mm2.at(DNNL_ARG_WEIGHTS).set_data_handle(at(inputs[2], b * v_[0] + h * ev_ * v_[2]));
        w.mm2.at(DNNL_ARG_DST).set_data_handle(at(outputs[0], b * y_[0] + h * ev_ * y_[2]));
        dnnl::stream &s = thread_stream();
        mm1_.execute(s, w.mm1);
        softmax_.execute(s, w.soft);
        mm2_.execute(s, w.mm2);
    }

    Expected<bool, std::string> build(const KernelSpec &spec) {
        if (spec.operands.at(0).operands.at(0).dtype != DType::f32)
            return unexpected(std::string("the CPU attention kernel supports f32 only"));
        const ZRange &r = spec.index_range;
        const ZPoint &qshape = spec.operands.at(0).operands.at(0).shape;
        const ZPoint &kshape = spec.operands.at(1).operands.at(0).shape;
        const std::int64_t heads = spec.params.get_int("heads", 1);
        e_ = qshape[2] / heads;
        const std::int64_t sk = kshape[1];
        const std::int64_t ev_full = spec.operands.at(2).operands.at(0).shape[2] / heads;
        ev_ = ev_full;
        b_ = r.extent(0);
        h_ = r.extent(1);
        const std::int64_t sq = r.extent(2), evl = r.extent(3);
        has_mask_ = spec.derivation.signature.input("mask", 0) != nullptr;
        const bool causal = spec.params.get_bool("causal", false);
        double scale = spec.params.get_float("scale", 0.0);
        if (scale == 0.0) scale = 1.0 / std::sqrt(static_cast<double>(e_));
        threads_ = spec.threads;
        for (size_t i = 0; i < spec.input_shapes.size(); ++i) in_strides_.push_back(spec_input_strides(spec, i));
        y_strides_ = spec_output_strides(spec, 0);
        q_ = in_strides_[0];
        k_ = in_strides_[1];
        v_ = in_strides_[2];
        y_ = y_strides_;
        const auto f32 = dnnl::memory::data_type::f32;
        const auto &eng = cpu_engine();
        const dnnl::memory::desc q_md(dims{sq, e_}, f32, dims{q_[1], q_[2]});
        const dnnl::memory::desc k_md(dims{e_, sk}, f32, dims{k_[2], k_[1]});
        const dnnl::memory::desc s_md(dims{sq, sk}, f32, dims{sk, 1});
        const dnnl::memory::desc v_md(dims{sk, evl}, f32, dims{v_[1], v_[2]});
        const dnnl::memory::desc y_md(dims{sq, evl}, f32, dims{y_[1], y_[2]});
        if (auto big = matmul_size_refusal(q_md, k_md)) return unexpected(*big);
        if (auto big = matmul_size_refusal(s_md, v_md)) return unexpected(*big);
        // The causal mask (sq × sk floats) is made now: its bytes, overflow-checked,
        // against what this process may still allocate first.
        if (causal)
            if (auto fits = check_allocation(size_mul(size_mul(sq, sk), 4),
                                             "its causal mask of " + std::to_string(sq) + " × " + std::to_string(sk));
                !fits)
                return unexpected(fits.error());

        dnnl::post_ops ops;
        dnnl::memory::desc mask_md;
        if (has_mask_) {
            const Strides &m = in_strides_[3];
            mask_md = dnnl::memory::desc(dims{sq, sk}, f32, dims{m[0], m[1]});
            ops.append_binary(dnnl::algorithm::binary_add, mask_md);
        }
        if (causal) {
            // Query s (global) sees keys j <= s: an additive mask of 0 / −∞, built once.
            causal_.assign(static_cast<size_t>(sq * sk), 0.f);
            for (std::int64_t s = 0; s < sq; ++s)
                for (std::int64_t j = 0; j < sk; ++j)
                    if (j > s + r.start()[2])
                        causal_[static_cast<size_t>(s * sk + j)] = -std::numeric_limits<float>::infinity();
            ops.append_binary(dnnl::algorithm::binary_add, s_md);
        }
        dnnl::primitive_attr a1 = make_attr();
        a1.set_output_scales(0, {static_cast<float>(scale)});
        a1.set_post_ops(ops);
        const dnnl::matmul::primitive_desc pd1(dnnl::matmul::desc(q_md, k_md, s_md), a1, eng);
        const dnnl::softmax_v2_forward::primitive_desc pds(
            dnnl::softmax_v2_forward::desc(dnnl::prop_kind::forward_inference, dnnl::algorithm::softmax_accurate, s_md,
                                           s_md, 1),
            make_attr(), eng);
        const dnnl::matmul::primitive_desc pd2(dnnl::matmul::desc(s_md, v_md, y_md), make_attr(), eng);
        mm1_ = dnnl::matmul(pd1);
        softmax_ = dnnl::softmax_v2_forward(pds);
        mm2_ = dnnl::matmul(pd2);
        const size_t pad = std::max(
            {pd1.scratchpad_desc().get_size(), pds.scratchpad_desc().get_size(), pd2.scratchpad_desc().get_size()});

        const std::int64_t pairs = b_ * h_;
        const int nworkers = static_cast<int>(std::max<std::int64_t>(1, std::min<std::int64_t>(threads_, pairs)));
        workers_.resize(static_cast<size_t>(nworkers));
        for (Worker &w : workers_) {
            w.scores.assign(static_cast<size_t>(sq * sk), 0.f);
            w.scratchpad.resize(pad);
            void *sp = w.scratchpad.empty() ? DNNL_MEMORY_NONE : w.scratchpad.data();
            const dnnl::memory scores(s_md, eng, w.scores.data());
            w.mm1[DNNL_ARG_SRC] = dnnl::memory(q_md, eng, DNNL_MEMORY_NONE);
            w.mm1[DNNL_ARG_WEIGHTS] = dnnl::memory(k_md, eng, DNNL_MEMORY_NONE);
            w.mm1[DNNL_ARG_DST] = scores;
            w.mm1[DNNL_ARG_SCRATCHPAD] = dnnl::memory(pd1.scratchpad_desc(), eng, sp);
            int post = 0;
            if (has_mask_) w.mm1[post_op_arg(post++)] = dnnl::memory(mask_md, eng, DNNL_MEMORY_NONE);
            if (causal) w.mm1[post_op_arg(post++)] = dnnl::memory(s_md, eng, causal_.data());
            w.soft[DNNL_ARG_SRC] = scores;
            w.soft[DNNL_ARG_DST] = scores;
            w.soft[DNNL_ARG_SCRATCHPAD] = dnnl::memory(pds.scratchpad_desc(), eng, sp);
            w.mm2[DNNL_ARG_SRC] = scores;
            w.mm2[DNNL_ARG_WEIGHTS] = dnnl::memory(v_md, eng, DNNL_MEMORY_NONE);
            w.mm2[DNNL_ARG_DST] = dnnl::memory(y_md, eng, DNNL_MEMORY_NONE);
            w.mm2[DNNL_ARG_SCRATCHPAD] = dnnl::memory(pd2.scratchpad_desc(), eng, sp);
        }
        return true;
    }

    std::int64_t e_ = 1, ev_ = 1, b_ = 1, h_ = 1;
    bool has_mask_ = false;
    int threads_ = 1;
    std::vector<Strides> in_strides_;
    Strides y_strides_, q_, k_, v_, y_;
    std::vector<float> causal_;
    dnnl::primitive mm1_, softmax_, mm2_;
    std::vector<Worker> workers_;
};

}  // namespace

void register_kernels_attention(std::vector<KernelFactory> &out) {
    out.push_back(unfused_factory("attention", AttentionKernel::make));
}

}  // namespace tapestry::cpu
