// Seeded random inputs. The numbers depend only on the seed, the tensor's id and
// its shape — not on the platform, the standard library or the other tensors of
// the graph: each tensor draws from its own std::mt19937_64 (whose output the
// standard fixes), and the mapping from 64-bit words to values is written out
// here rather than left to std::uniform_*_distribution (whose algorithms differ
// between standard libraries).
#include "io/random_inputs.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <random>
#include <set>
#include <string_view>

namespace tapestry {
namespace {

std::uint64_t splitmix64(std::uint64_t x) {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

std::uint64_t fnv1a(std::string_view s) {
    std::uint64_t h = 0xcbf29ce484222325ull;
    for (char c : s) {
        h ^= static_cast<unsigned char>(c);
        h *= 0x100000001b3ull;
    }
    return h;
}

// Uniform in [0, n) without modulo bias (rejection of the incomplete last block).
std::uint64_t uniform_below(std::mt19937_64 &rng, std::uint64_t n) {
    const std::uint64_t threshold = (0 - n) % n;  // 2^64 mod n
    for (;;) {
        const std::uint64_t x = rng();
        if (x >= threshold) return x % n;
    }
}

// Kinds that pass their input's values through (rearranged at most; `cast`
// between integer types keeps ids in range): ids may be reshaped, sliced,
// concatenated or cast on the way to an embedding (docs/ops.md).
bool passes_values_through(const std::string &kind) {
    static const std::set<std::string, std::less<>> kinds = {"reshape", "transpose", "slice", "concat", "cast"};
    return kinds.count(kind) != 0;
}

// The exclusive upper bound that the consumers of integer tensor `id` accept as
// indices: the rows of an embedding table, or the extent of a gather's axis
// (followed through value-preserving ops); nullopt when no consumer indexes with it.
std::optional<std::int64_t> index_bound(const Graph &g, const TensorId &id) {
    std::optional<std::int64_t> bound;
    auto tighten = [&](std::int64_t b) { bound = bound ? std::min(*bound, b) : b; };
    std::set<TensorId> seen{id};
    std::vector<TensorId> pending{id};
    while (!pending.empty()) {
        const TensorId current = pending.back();
        pending.pop_back();
        for (const OpId &op_id : g.consumers(current)) {
            const Operation *op = g.find_op(op_id);
            if (op == nullptr) continue;
            auto reads_through = [&](const std::string &port) {
                const PortBinding *b = op->input(port);
                if (b == nullptr) return false;
                for (const TensorSelection &s : b->selections)
                    if (s.tensor == current) return true;
                return false;
            };
            if (op->kind == "embedding" && reads_through("ids")) {
                if (const PortBinding *table = op->input("table"); table && !table->selections.empty()) {
                    const ZPoint shape = table->selections[0].range.shape();
                    if (shape.rank() >= 1) tighten(shape[0]);
                }
            } else if (op->kind == "gather" && reads_through("indices")) {
                for (const PortBinding &b : op->inputs) {
                    if (b.name == "indices" || b.selections.empty()) continue;
                    const ZPoint shape = b.selections[0].range.shape();
                    std::int64_t axis = op->params.get_int("axis", 0);
                    if (axis < 0) axis += shape.rank();
                    if (axis >= 0 && axis < shape.rank()) tighten(shape[static_cast<int>(axis)]);
                    break;
                }
            } else if (passes_values_through(op->kind)) {
                for (const TensorId &out : op->output_tensors())
                    if (seen.insert(out).second) pending.push_back(out);
            }
        }
    }
    return bound;
}

TensorData random_values(const Graph &g, const Tensor &t, std::uint64_t seed) {
    std::mt19937_64 rng(splitmix64(splitmix64(seed) ^ fnv1a(t.id.value)));
    TensorData data(t.dtype, t.shape());
    const std::int64_t count = data.element_count();
    if (dtype_is_float(t.dtype)) {
        for (std::int64_t i = 0; i < count; ++i) {
            // 2·u − 1 with u = k·2^-53 is exact; a value that rounds up to 1 in
            // the dtype (1 − 2^-52 in f32, say) is drawn again, keeping [-1, 1).
            do {
                const double v = static_cast<double>(rng() >> 11) * 0x1.0p-52 - 1.0;
                data.set(i, v);
            } while (data.get(i) >= 1.0);
        }
    } else if (t.dtype == DType::boolean) {
        for (std::int64_t i = 0; i < count; ++i) data.set(i, static_cast<double>(rng() >> 63));
    } else {
        const std::int64_t bound = index_bound(g, t.id).value_or(8);
        for (std::int64_t i = 0; i < count; ++i) {
            const auto v =
                bound > 0 ? static_cast<std::int64_t>(uniform_below(rng, static_cast<std::uint64_t>(bound))) : 0;
            if (t.dtype == DType::i64)
                data.as<std::int64_t>()[static_cast<size_t>(i)] = v;
            else
                data.as<std::int32_t>()[static_cast<size_t>(i)] =
                    static_cast<std::int32_t>(std::min<std::int64_t>(v, INT32_MAX));
        }
    }
    return data;
}

}  // namespace

std::map<TensorId, TensorData> make_random_inputs(const Graph &g, std::uint64_t seed) {
    std::map<TensorId, TensorData> values;
    for (const TensorPtr &t : g.tensors()) {
        const bool wanted = t->role == TensorRole::input || (t->role == TensorRole::parameter && !t->value);
        if (wanted) values.emplace(t->id, random_values(g, *t, seed));
    }
    return values;
}

}  // namespace tapestry
