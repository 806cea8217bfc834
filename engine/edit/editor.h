// Editor: the graph edits a user makes on the canvas — add tensors and
// operations, connect and disconnect ports, delete, rename, retype, set
// parameters, paste — each checked against the op library and recorded as a
// reversible GraphDelta that the studio's undo stack replays (DESIGN.md §9).
// Shape inference runs after every edit: the outputs of every operation
// downstream of the change are re-derived, so shapes follow and errors show up
// on the nodes that have them (validate()).
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "common/expected.h"
#include "graph/delta.h"
#include "graph/graph.h"
#include "ops/library.h"

namespace tapestry::edit {

// Why an edit was refused. `code`: "unknown-node", "unknown-kind", "bad-port",
// "cycle", "incompatible", "inferred", "bad-name", "bad-shape", "bad-param",
// "no-output". `message` is the sentence the studio shows.
struct EditError {
    std::string code;
    std::string message;
};

struct Done {};
using EditResult = Expected<Done, EditError>;

// A tensor the user creates (the palette's "Tensor" entries, a paste).
struct TensorSpec {
    std::string id;    // empty: derived from the name
    std::string name;  // empty: the id
    DType dtype = DType::f32;
    ZPoint shape;
    TensorRole role = TensorRole::input;  // input or parameter
};

// Id not used in `g`, made from `base` ("fc1" → "fc1", then "fc1_2", …);
// characters outside [A-Za-z0-9_.:/-] become '_'.
std::string fresh_id(const Graph &g, std::string_view base);

// The selected nodes as a self-contained graph (for the clipboard): the tensors
// and operations named, plus the outputs of the selected operations; bindings to
// tensors outside the selection are dropped.
Graph extract(const Graph &g, const std::vector<std::string> &ids);

// Two graphs with the same content up to ids: tensors (name, dtype, shape, role,
// values) and operations (kind, name, params, which tensors — by name — they read
// and write, per port). Shards and stated signatures are compared only when
// `with_shards`. On a difference, returns a line saying where.
std::optional<std::string> content_difference(const Graph &a, const Graph &b, bool with_shards = false);

class Editor {
public:
    explicit Editor(Graph &g, const OpLibrary &lib = OpLibrary::standard());

    const Graph &graph() const { return rw_.graph(); }

    // Each edit either succeeds, or leaves the graph exactly as it was and says why.
    Expected<TensorId, EditError> add_tensor(const TensorSpec &spec);
    Expected<OpId, EditError> add_operation(const std::string &kind, const std::string &name = {},
                                            const Params &params = {});
    // Binds the whole tensor to an input port (replacing what the port had; a
    // variadic port gets one more operand). Refused when it would make a cycle, or
    // when the operation, fully connected, cannot take these operand types.
    EditResult connect(const TensorId &tensor, const OpId &op, const std::string &port);
    // Connects `from`'s output on `out_port` (the tensor inference made) to `to`.
    EditResult connect_output(const OpId &from, const std::string &out_port, const OpId &to,
                              const std::string &in_port);
    // Unbinds operand `operand` of an input port (-1: all of them).
    EditResult disconnect(const OpId &op, const std::string &port, int operand = -1);
    // Deletes nodes; an operation takes its output tensors with it and its
    // consumers lose those inputs. An operation's output alone cannot be deleted.
    EditResult remove(const std::vector<std::string> &ids);
    EditResult rename(const std::string &id, const std::string &name);
    // Type of an input or parameter (an output's type is inferred). Values that no
    // longer fit are dropped, with a note.
    EditResult set_tensor_type(const TensorId &id, DType dtype, const ZPoint &shape);
    EditResult set_role(const TensorId &id, TensorRole role);
    // Replaces the operation's parameters. Refused when a parameter is unknown or
    // has the wrong type, or when the connected operation cannot take them.
    EditResult set_params(const OpId &op, const Params &params);
    // Adds a fragment (extract()) with fresh ids; returns old id → new id.
    Expected<std::map<std::string, std::string>, EditError> paste(const Graph &fragment);

    // Lines worth telling the user about the edits so far ("w1: values dropped…").
    const std::vector<std::string> &notes() const { return notes_; }
    // Everything done since construction (or the last take()).
    GraphDelta take();

private:
    template <typename F>
    EditResult transact(F &&body);
    EditResult check_op(const Operation &op) const;
    void infer_from(std::set<std::string> seeds);
    void retarget_selections(const TensorId &id, const ZRange &old_range, const ZRange &new_range);
    bool reaches(const OpId &from, const TensorId &target) const;

    const OpLibrary &lib_;
    RecordingRewriter rw_;
    std::vector<std::string> notes_;
};

}  // namespace tapestry::edit
