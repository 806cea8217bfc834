// The `fused` kind (issue 5, fusion): one operation standing for a chain — a head
// (matmul, linear, conv2d or an elementwise op) followed by elementwise epilogues,
// optionally ending in a normalization tail (softmax, layernorm, rmsnorm) — and the
// chain's encoding in its params, shared by the op, the fusion pass and the CPU
// kernel (docs/ops.md, "fused").
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/expected.h"
#include "graph/params.h"
#include "graph/signature.h"

namespace tapestry {

class OpDef;
class OpLibrary;

// One member of a chain. For an epilogue (every member after the head),
// `chain_port` says where the value flowing down the chain enters: -1 a unary
// member's `x`; 0 a binary member's `a` (its extra operand is `b`); 1 its `b`
// (the extra operand is `a`).
struct FusedMember {
    std::string kind;
    Params params;
    int chain_port = -1;
    friend bool operator==(const FusedMember &, const FusedMember &) = default;
};

struct FusedChain {
    std::vector<FusedMember> members;  // the head first; at least two members
    // Per input port of the head (declared order): how many of the fused op's
    // operands it takes (1, or 0 for an absent optional port). The head's operands
    // come first in the fused op's `x`, then one extra operand per binary epilogue.
    std::vector<std::int64_t> head_operands;
    std::vector<std::string> member_ids;  // the original operations' ids (display only)
    // With a normalization tail (the last member is softmax, layernorm or rmsnorm;
    // its chain port is -1, the value enters its `x`): per tail input port after
    // `x` (gamma, beta), 1 or 0; these operands come last in the fused op's `x`.
    std::vector<std::int64_t> tail_operands;

    bool has_tail() const;
    int head_operand_count() const;
    int extra_count() const;  // binary epilogues' operands, then the tail's
    friend bool operator==(const FusedChain &, const FusedChain &) = default;
};

// params of a fused op: `chain` (string: members joined by ';', each `kind` or
// `kind{name=value,…}` — values true/false, 3, 0.5, "tanh", [1,2]), `head_operands`
// (int list), `chain_ports` (int list, one per epilogue), `tail_operands` (int
// list, only with a tail), `members` (string, ids joined by ','). nullopt when a
// member's string param cannot be written (it
// holds a quote, backslash or one of ;,{}[]).
std::optional<Params> fused_params(const FusedChain &chain);
// The chain a fused op's params describe; errors are "bad-param" at params.<name>.
Expected<FusedChain, DerivationError> parse_fused_chain(const Params &params);

// May `def` head a chain / be an epilogue? Heads: matmul, linear, conv2d and the
// elementwise kinds; epilogues: the elementwise kinds with one or two inputs.
// Tails: softmax, layernorm and rmsnorm (the last member only; the head must write
// its index space one-to-one, as matmul, linear and the elementwise kinds do).
bool fusable_head(const OpDef &def);
bool fusable_epilogue(const OpDef &def);
bool fusable_tail(const OpDef &def);

// Every member's derivation for the fused op's operand types (zero-origin, in `x`
// order): the head's, then each epilogue's (index space = the value's shape),
// and the fused op's own. Errors name the member: "fused member 1 (relu): …".
// With a tail, the fused op's index space and output projection are the tail's,
// and every operand of the head and the epilogues is read through the tail's `x`
// projection (whole normalized slices: windows along the normalized axes).
struct FusedDerivation {
    std::vector<Derivation> members;
    // Per epilogue: the index of its extra operand in the fused op's `x`, or -1
    // (-1 for the tail).
    std::vector<int> extra_operand;
    // With a tail: per tail input port after `x`, its operand's index in `x`, or -1.
    std::vector<int> tail_operand;
    Derivation fused;
};
Expected<FusedDerivation, DerivationError> derive_fused(const OpLibrary &lib, const FusedChain &chain,
                                                        const std::vector<OperandType> &operands);

}  // namespace tapestry
