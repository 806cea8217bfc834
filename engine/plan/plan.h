// The compiled plan (DESIGN.md §6, docs/plans.md): a placed stage scheduled on a
// target's devices. Per device: buffers (a box of a tensor each) with sizes,
// lifetimes and arena offsets, and an ordered list of steps — kernels, local
// copies, point-to-point transfers and collectives — with the exact regions each
// reads and writes, the stream it runs on, and its dependencies across devices.
// A plan is not a stage: scheduling changes no graph. It embeds the graph it runs
// and remembers the project, stage and certificate it came from.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cost/target.h"
#include "graph/graph.h"

namespace tapestry::plan {

inline constexpr int kPlanFormatVersion = 1;

enum class BufferKind {
    parameter,   // a weight: loaded before the plan starts, resident throughout
    input,       // a graph input's box: loaded before the plan starts, resident
    output,      // a graph output's box: resident, read back after the plan ends
    activation,  // an intermediate a kernel writes: in the arena while alive
    received,    // what a transfer or collective delivers: in the arena while alive
    workspace    // kernel workspace (cuBLASLt, cuDNN): one per device that needs it, bytes
                 // [0, n) of no tensor (dtype bool, one byte each), in the arena from the
                 // device's first step to its last
};
const char *buffer_kind_name(BufferKind k);

// A box of one tensor held by one device.
struct Buffer {
    int device = 0;
    TensorId tensor;  // "" for workspace
    ZRange region;  // tensor coordinates (workspace: bytes)
    DType dtype = DType::f32;
    std::int64_t bytes = 0;
    BufferKind kind = BufferKind::activation;
    bool in_arena() const { return kind == BufferKind::activation || kind == BufferKind::received || kind == BufferKind::workspace; }
    std::int64_t offset = 0;        // in the device's arena (arena buffers only)
    int first = -1, last = -1;      // lifetime: the first and last step (plan order) touching it
};

// A box of a buffer (tensor coordinates, inside the buffer's region).
struct Region {
    int buffer = -1;
    ZRange box;
    // A read that stands for another tensor's selection: a slice forwarded as a view
    // (plan/compile.cpp, "slices as views") reads the box of the slice's input that
    // holds the selection `view_box` of its output `view_of`. Empty otherwise.
    TensorId view_of;
    ZRange view_box;
    friend bool operator==(const Region &, const Region &) = default;
};

enum class StepKind { kernel, copy, send_recv, collective };
const char *step_kind_name(StepKind k);
enum class Stream { compute, communication };

struct Step {
    StepKind kind = StepKind::kernel;
    Stream stream = Stream::compute;
    int device = 0;                 // kernel, copy: where it runs; send_recv: the sender
    int peer = -1;                  // send_recv: the receiver
    std::vector<int> participants;  // collective: the devices taking part, ascending
    std::string op;                 // the graph operation it comes from (a move's id for transfers)
    std::string shard;              // the shard id ("" for none)
    std::string op_kind;            // kernel: the op's kind ("fused" for fused ops)
    std::vector<std::string> fused; // kernel of a fused op: its members, in chain order
    std::string collective;         // all_reduce, all_gather, reduce_scatter, broadcast
    std::string algorithm;          // collective: ring or tree
    bool crosses_nodes = false;     // collective or transfer spanning nodes
    std::vector<Region> reads, writes;
    std::vector<int> deps;          // earlier steps (plan order) it waits for
    // Work, for the cost model.
    std::string kernel_class;       // gemm, convolution, elementwise, reduction, copy
    DType dtype = DType::f32;
    double flops = 0;
    double bytes = 0;               // kernel, copy: bytes read + written; transfers: bytes moved
    double predicted = 0;           // seconds (a prediction)
};

// The streams a step holds, as f(device, stream): a kernel or copy its device's
// compute stream; a send_recv the communication streams of both ends; a collective
// those of every participant. The simulation and the compiler's readiness order
// both keep to it.
template <class F>
void for_each_stream(const Step &s, F &&f) {
    if (s.kind == StepKind::collective) {
        for (int d : s.participants) f(d, Stream::communication);
    } else if (s.kind == StepKind::send_recv) {
        f(s.device, Stream::communication);
        if (s.peer != s.device) f(s.peer, Stream::communication);
    } else {
        f(s.device, Stream::compute);
    }
}

// A kernel, copy or transfer step's exact shape, as calibration keys it
// (cost::KernelWork::shape): the extents of the boxes it reads, then of those it
// writes — "2048x768 768x3072 3072 > 2048x3072". "" for other steps.
std::string step_shape(const Step &s);

struct Device {
    std::string name;          // "node:index"
    int node = 0;
    std::vector<int> steps;    // every step it takes part in, plan order
    std::int64_t arena_bytes = 0;     // the arena holding its activation and received buffers
    std::int64_t resident_bytes = 0;  // parameters, inputs and outputs it holds
};

// Where a graph output's elements end up: the boxes that assemble it.
struct OutputPiece {
    TensorId tensor;
    int buffer = -1;
    ZRange box;
};

// How the compiler orders the steps (docs/plans.md, "Step order"):
//  * dependency — the graph's operations in dependency order, each op's pieces
//    together (a device runs every micro-batch of an op before the next op);
//  * ready — by when each step can start: a list schedule of the devices' streams
//    over the data dependencies, each stream taking the ready step that can start
//    first, the deepest on a tie (so a chain goes on before another begins: a
//    pipeline stage passes micro-batch 0 on before it starts micro-batch 1).
//    Lifetimes, arena offsets and dependencies follow the order.
enum class StepOrder { dependency, ready };
const char *step_order_name(StepOrder o);  // "dependency", "ready"
std::optional<StepOrder> parse_step_order(std::string_view name);

struct PlanSource {
    std::string project;      // the project file, as given
    int stage = 0;            // the stage's number in its pipeline
    std::string pass;         // the stage's pass
    std::string options;      // the pass's options
    std::string certificate;  // the stage certificate's summary
    StepOrder order = StepOrder::dependency;  // how the steps were ordered
};

struct Plan {
    PlanSource source;
    Graph graph;  // the placed stage's graph
    std::string target;  // the target's name
    cost::ClusterShape cluster;
    std::vector<Device> devices;
    std::vector<Buffer> buffers;
    std::vector<Step> steps;  // plan order: every dependency comes earlier
    std::vector<OutputPiece> outputs;
};

}  // namespace tapestry::plan
