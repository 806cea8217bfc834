// Double-precision reference kernels: the numeric oracle (DESIGN.md §7, issue 2).
// A kernel computes the outputs of the index points of a sub-range of its op's
// index space. Its naive loop reads and writes through RefContext, which can
// record every element touched — the test that a projection is right. The heavy
// kinds also have a fast path (RefContext::fast()) over the arrays' data: blocked
// loops, no ZPoint per element, same values (see RefContext::fast).
#pragma once

#include <cstdint>
#include <vector>

#include "graph/params.h"
#include "graph/signature.h"
#include "index/zrange.h"

namespace tapestry {

// A dense array of doubles over a range, row-major (last dim fastest).
struct RefArray {
    ZRange range;
    std::vector<double> data;

    RefArray() = default;
    explicit RefArray(ZRange r, double fill = 0.0) : range(std::move(r)), data(static_cast<size_t>(range.size()), fill) {}
    double at(const ZPoint &p) const { return data[static_cast<size_t>(range.linear_index(p))]; }
    double &at(const ZPoint &p) { return data[static_cast<size_t>(range.linear_index(p))]; }
};

// Receives every element access of a reference kernel. Ports and operands are
// numbered in the op's port order (OpDef::input_ports / output_ports).
class AccessRecorder {
public:
    virtual ~AccessRecorder() = default;
    virtual void on_read(int port, int operand, const ZPoint &element) = 0;
    virtual void on_write(int port, int operand, const ZPoint &element) = 0;
};

struct RefContext {
    const Params &params;
    const Derivation &derivation;  // relative (zero-origin operands)
    // Per input port in OpDef::input_ports() order, per operand; empty vector for an
    // absent optional port. Arrays are zero-origin, shaped like the operand.
    std::vector<std::vector<const RefArray *>> inputs;
    std::vector<std::vector<RefArray *>> outputs;
    ZRange index_range;  // the points to compute, inside the index space
    AccessRecorder *recorder = nullptr;
    // Whether kernels may take their fast path (false: every kernel runs its naive
    // loop, as evaluate_reference does with EvaluationOptions::fast_kernels off).
    bool fast_kernels = true;

    // Whether a kernel takes its fast path: allowed and nobody records accesses
    // (the fast paths read arrays directly, so they cannot report elements). A
    // fast path computes every element it writes with the same operations as the
    // naive loop — at most the order of double additions differs — and an
    // element's value never depends on the sub-range it is computed in, so any
    // split of the index space gives the same outputs bit for bit.
    bool fast() const { return fast_kernels && recorder == nullptr; }

    bool has_input(int port) const { return port < static_cast<int>(inputs.size()) && !inputs[static_cast<size_t>(port)].empty(); }
    int operand_count(int port) const { return static_cast<int>(inputs[static_cast<size_t>(port)].size()); }
    const ZPoint &input_shape(int port, int operand = 0) const {
        return inputs[static_cast<size_t>(port)][static_cast<size_t>(operand)]->range.end();
    }
    // The arrays themselves, for fast paths (nothing is recorded).
    const RefArray &input(int port, int operand = 0) const {
        return *inputs[static_cast<size_t>(port)][static_cast<size_t>(operand)];
    }
    RefArray &output(int port, int operand = 0) const {
        return *outputs[static_cast<size_t>(port)][static_cast<size_t>(operand)];
    }
    double read(int port, int operand, const ZPoint &element) const {
        if (recorder) recorder->on_read(port, operand, element);
        return inputs[static_cast<size_t>(port)][static_cast<size_t>(operand)]->at(element);
    }
    double read(int port, const ZPoint &element) const { return read(port, 0, element); }
    void write(int port, int operand, const ZPoint &element, double value) const {
        if (recorder) recorder->on_write(port, operand, element);
        outputs[static_cast<size_t>(port)][static_cast<size_t>(operand)]->at(element) = value;
    }
    void write(int port, const ZPoint &element, double value) const { write(port, 0, element, value); }
};

}  // namespace tapestry
