// The named rewrite rules of the substitution pass (issue 5, DESIGN.md §5): each a
// pattern ⇒ replacement over op-library kinds with its cost effect and direction.
// Every rule is proved numerically on random shapes and index rules exactly in
// tests/engine/test_rules_soundness.cpp.
#pragma once

#include <string>
#include <vector>

#include "common/expected.h"
#include "passes/egraph.h"

namespace tapestry {

// Every standard rule, in a fixed order:
//   linear-split        linear(x, w, b)  ⇒ add(matmul(x, w), b)           (without b: matmul(x, w))
//   linear-fuse         add(matmul(x, w), b) ⇒ linear(x, w, b)             (w rank 2, b [out]; either add order)
//   attention-expand    attention(q, k, v, mask?) ⇒ per-head matmul, scale, (+mask, +causal mask), softmax, matmul
//   attention-fuse      the inverse (one additive mask at most; a causal-mask constant becomes the mask)
//   layernorm-expand    layernorm(x, γ, β) ⇒ (x − mean) / sqrt(mean((x − mean)²) + ε) · γ + β
//   layernorm-fuse      the inverse (also without γ or β)
//   rmsnorm-expand      rmsnorm(x, γ) ⇒ x / sqrt(mean(x²) + ε) · γ
//   rmsnorm-fuse        the inverse
//   transpose-transpose transpose(transpose(x, p), q) ⇒ transpose(x, p∘q); identity perm ⇒ x
//   reshape-reshape     reshape(reshape(x, s), t) ⇒ reshape(x, t); reshape to x's shape ⇒ x
//   add-assoc, mul-assoc (a ∘ b) ∘ c ⇔ a ∘ (b ∘ c)
//   add-comm, mul-comm  a ∘ b ⇒ b ∘ a
//   matmul-ksplit       matmul(a, b) ⇒ reduce_sum(partial_matmul(a, b, parts=2), axes [0])
//                       (only when the library has `partial_matmul`; left out otherwise)
//
// Constants (ε, √E for the attention scale, the causal mask) are tensors made by the
// rule: EGraph::add_constant, which the decoder turns into parameter tensors with
// embedded values (Tensor::value) in the operand's dtype.
std::vector<Rewrite> standard_rewrites(const OpLibrary &library = OpLibrary::standard());

// The rules with these names, in the order given; an unknown name is the error
// "unknown rule 'x' (rules: linear-split, …)".
Expected<std::vector<Rewrite>, std::string> rewrites_by_name(const std::vector<std::string> &names,
                                                             const OpLibrary &library = OpLibrary::standard());

// The substitution pass's default rule set: expand the composites so they can be
// sharded (attention-expand, layernorm-expand, rmsnorm-expand) and clean up the
// index ops that expansion makes (transpose-transpose, reshape-reshape).
std::vector<std::string> default_rewrite_names();

}  // namespace tapestry
