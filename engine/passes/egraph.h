// The e-graph of the substitution pass (issue 5, DESIGN.md §5): e-classes of e-nodes
// over the op library with hash-consing, union-find and egg-style deferred rebuild,
// a tensor-type analysis per class, a rule runner with limits, greedy extraction by
// cost, and the encoding of a Graph into an e-graph and of an extraction back.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/expected.h"
#include "graph/delta.h"
#include "graph/graph.h"
#include "graph/signature.h"
#include "ops/library.h"

namespace tapestry {

using ClassId = std::uint32_t;

// One e-node: an op kind with its parameters (defaults filled in) applied to child
// e-classes, one per operand, each bound to a port. Two leaf kinds: "@tensor" (a
// tensor of the encoded graph that no rewritable op writes: an input, a parameter,
// the output of an op left as it is; params {"id": tensor id}) and "@const" (a
// constant a rule made: epsilon, an attention scale, a causal mask; params
// {"const": index into EGraph::constant(), "value": the exact scalar when it is one}).
struct ENode {
    std::string kind;
    Params params;
    std::vector<std::string> ports;  // port of each child, in the op's port order
    std::vector<ClassId> children;
    double flops = 0;  // flops_per_point × index points, from the op library (0 for leaves)
    double bytes = 0;  // bytes of the value it writes (0 for leaves)

    bool leaf() const { return !kind.empty() && kind.front() == '@'; }
    // The child bound to `port` (the first one), or nullptr.
    const ClassId *child(const std::string &port) const;
};

// An e-class: equivalent e-nodes and the analysis every one of them agrees on, the
// tensor type (dtype + shape) of the value. `parents` are the e-nodes that use it.
struct EClass {
    ClassId id = 0;
    OperandType type;
    std::vector<ENode> nodes;
    std::vector<std::pair<ENode, ClassId>> parents;
};

class EGraph {
public:
    explicit EGraph(const OpLibrary &library = OpLibrary::standard());

    const OpLibrary &library() const { return *library_; }

    // A leaf for a graph tensor (hash-consed by id). `scalar`: the value of a one-element
    // parameter with embedded data (an epsilon of an imported graph), for the fuse rules;
    // encode_graph passes the shortest decimal that rounds to it (1e-5, not its f32 value).
    ClassId add_tensor(const TensorId &id, const OperandType &type, std::optional<double> scalar = std::nullopt);
    // A constant tensor (hash-consed by content). `exact` is the scalar the rule meant
    // (the stored value is rounded to the dtype), kept so that fused inverses read it back.
    ClassId add_constant(std::shared_ptr<const TensorData> value, std::optional<double> exact = std::nullopt);
    // An op node over child classes; the library derives its type. Refused (as a value)
    // when the library refuses the kind, params or operand types.
    Expected<ClassId, std::string> add_op(const std::string &kind, const Params &params,
                                          const std::vector<std::pair<std::string, ClassId>> &inputs);

    ClassId find(ClassId id) const;
    // Unions two classes; false when they already were one. Classes of different types
    // are an internal error (a rule that did so is broken).
    bool merge(ClassId a, ClassId b);
    // Restores the invariants after merges (egg's rebuild): congruence closure, a
    // canonical hash-cons, canonical and duplicate-free class node lists.
    void rebuild();
    bool clean() const { return pending_.empty(); }

    const EClass &eclass(ClassId id) const;
    const OperandType &type(ClassId id) const { return eclass(id).type; }
    std::vector<ClassId> class_ids() const;  // canonical ids, ascending
    size_t class_count() const { return class_count_; }
    size_t node_count() const { return node_count_; }
    std::shared_ptr<const TensorData> constant(size_t index) const { return constants_.at(index); }
    // The exact scalar of a class holding a scalar constant or a scalar tensor leaf, if any.
    std::optional<double> scalar_constant(ClassId id) const;
    // The canonical form of a node (children through find()).
    ENode canonical(const ENode &n) const;
    // The class holding exactly this node, if the e-graph has it.
    std::optional<ClassId> lookup(const ENode &n) const;

private:
    std::string key(const ENode &n) const;  // of a canonical node
    ClassId add_node(ENode n, const OperandType &type);

    const OpLibrary *library_;
    mutable std::vector<ClassId> parent_;          // union-find (find() halves paths)
    std::vector<std::unique_ptr<EClass>> classes_;  // by id; null once merged away
    std::unordered_map<std::string, ClassId> memo_;  // hash-cons
    std::vector<ClassId> pending_;
    std::vector<std::shared_ptr<const TensorData>> constants_;
    std::map<std::string, size_t> constant_index_;
    size_t class_count_ = 0;
    size_t node_count_ = 0;
};

// A named rewrite (egg's rewrite!, MLIR's named pattern): `pattern` ⇒ `replacement` as a
// person reads them, what it does to the cost, and its direction. `root_kind` is the kind
// of the pattern's root; `apply` is called for each e-node of that kind and returns the
// classes of the replacements it built (each equal to the node's class), none when the
// node does not match (shapes, params and sub-patterns are checked there).
struct Rewrite {
    enum class Direction { expand, fuse, neutral };
    std::string name;
    std::string pattern;
    std::string replacement;
    std::string cost_effect;
    Direction direction = Direction::neutral;
    std::string root_kind;
    std::function<std::vector<ClassId>(EGraph &, ClassId root, const ENode &node)> apply;
};
std::string direction_name(Rewrite::Direction d);  // "expand", "fuse", "neutral"

struct RunnerLimits {
    int iterations = 30;
    size_t nodes = 20000;
    double seconds = 10.0;
};

enum class StopReason { saturated, iteration_limit, node_limit, time_limit };
std::string stop_reason_name(StopReason r);  // "saturated", "iteration limit", "node limit", "time limit"

struct RunReport {
    StopReason stop = StopReason::saturated;
    int iterations = 0;  // iterations run (the last one found nothing new when saturated)
    size_t classes = 0, nodes = 0;
    double seconds = 0;
    std::map<std::string, int> fired;  // rule → applications that added a new equality
};

// Equality saturation: each iteration matches every rule against the e-graph as it
// stands, applies the matches, then rebuilds. Stops when an iteration adds nothing
// (saturated) or at the first limit reached; the node and time limits are also
// checked between applications, so a limit stops within one iteration.
RunReport run_rewrites(EGraph &g, const std::vector<Rewrite> &rules, const RunnerLimits &limits);

// The extraction cost of one e-node: FLOPs (flops_per_point × index points) plus
// `bytes_weight` × the bytes of the value it writes (each byte of an intermediate is
// written and read back once: it costs like `bytes_weight` FLOPs) plus `per_op` for
// launching it. Leaves
// cost 0. Kinds in `penalized` (the composites an "expand" goal wants gone) cost
// `penalty` times more, so they are extracted only where no expansion exists.
struct CostModel {
    double bytes_weight = 8.0;
    double per_op = 1.0;
    std::set<std::string> penalized;
    double penalty = 1e6;
};
double node_cost(const EGraph &g, const ENode &n, const CostModel &model);

// Greedy bottom-up extraction: per class the node minimising its own cost plus its
// children's best (a fixed point). `choice[c]` indexes eclass(c).nodes (-1: nothing
// extractable, for non-canonical ids as well).
struct Extraction {
    std::vector<int> choice;
    std::vector<double> cost;
};
Extraction extract_greedy(const EGraph &g, const CostModel &model);

// A graph as an e-graph. Rewritable ops are the unsharded ones of a known kind whose
// single output and whose inputs are whole tensors, each output written by that op
// only; every other op is kept as it is, its outputs are leaves and its inputs roots.
struct GraphEncoding {
    EGraph egraph;
    std::map<TensorId, ClassId> class_of;  // every tensor that is a leaf or a rewritable op's output
    std::map<TensorId, OpId> producer;     // rewritable ops by the tensor they write
    std::map<OpId, ENode> node_of;         // the e-node of each rewritable op as encoded
    std::vector<TensorId> roots;           // tensors the result must still compute, graph order
    std::set<OpId> kept;                   // ops left as they are
    explicit GraphEncoding(const OpLibrary &library) : egraph(library) {}
};
GraphEncoding encode_graph(const Graph &g, const OpLibrary &library = OpLibrary::standard());

// Writes the extracted program into the rewriter's graph (the encoded one): each root
// tensor is computed by the extraction of class_of[root]. An op whose chosen node and
// operands are the original's keeps its pointer; other chosen nodes become new ops
// named after the op they replace ("fc2.matmul"), writing the original tensor of their
// class when there is one, else a new intermediate ("fc2.matmul.out"); constants
// become parameter tensors with embedded values. Original ops and intermediates left
// unused are removed. A root whose class extracts to another tensor gets an identity
// copy (reshape to its own shape). Returns the number of new ops.
int decode_graph(const GraphEncoding &encoding, const Extraction &extraction, RecordingRewriter &rewriter);

// The cost of a whole graph under `model` (each op once, shared values counted once).
double graph_cost(const Graph &g, const OpLibrary &library, const CostModel &model);

}  // namespace tapestry
