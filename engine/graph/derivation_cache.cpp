// The derivation memo (see derivation_cache.h).
#include "graph/derivation_cache.h"

#include <mutex>
#include <type_traits>
#include <variant>

#include "graph/value_hash.h"

namespace tapestry {
namespace {

std::uint64_t key_of(const std::string &kind, const Params &params, const std::vector<PortTypes> &inputs) {
    std::uint64_t h = value_hash::kSeed;
    value_hash::mix(h, kind);
    value_hash::mix(h, params);
    value_hash::mix(h, inputs);
    return h;
}

bool same_inputs(const std::vector<PortTypes> &a, const std::vector<PortTypes> &b) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i)
        if (a[i].port != b[i].port || a[i].operands != b[i].operands) return false;
    return true;
}

}  // namespace

namespace value_hash {

void mix(std::uint64_t &h, const Params &params) {
    for (const auto &[name, value] : params.values()) {
        mix(h, name);
        mix(h, static_cast<std::int64_t>(value.index()));
        std::visit(
            [&](const auto &v) {
                using V = std::decay_t<decltype(v)>;
                if constexpr (std::is_same_v<V, std::string>) mix(h, v);
                else if constexpr (std::is_same_v<V, std::vector<std::int64_t>>) {
                    for (std::int64_t x : v) mix(h, x);
                    mix(h, static_cast<std::int64_t>(v.size()));
                } else if constexpr (std::is_same_v<V, bool>) mix(h, static_cast<std::int64_t>(v));
                else mix(h, &v, sizeof v);
            },
            value);
    }
}

void mix(std::uint64_t &h, const std::vector<PortTypes> &ports) {
    for (const PortTypes &p : ports) {
        mix(h, p.port);
        for (const OperandType &o : p.operands) {
            mix(h, static_cast<std::int64_t>(o.dtype));
            for (Coord c : o.shape) mix(h, c);
            mix(h, static_cast<std::int64_t>(o.shape.rank()));
        }
        mix(h, static_cast<std::int64_t>(p.operands.size()));
    }
}

}  // namespace value_hash

DerivationCache::DerivationCache(const SignatureSource &inner, std::size_t capacity) : inner_(inner), capacity_(capacity) {}

Expected<Derivation, DerivationError> DerivationCache::derive(const std::string &kind, const Params &params,
                                                              const std::vector<PortTypes> &inputs) const {
    const std::uint64_t key = key_of(kind, params, inputs);
    {
        std::shared_lock lock(mutex_);
        const auto [lo, hi] = memo_.equal_range(key);
        for (auto it = lo; it != hi; ++it) {
            const Entry &e = *it->second;
            if (e.kind == kind && e.params == params && same_inputs(e.inputs, inputs)) {
                hits_.fetch_add(1, std::memory_order_relaxed);
                return e.derivation;
            }
        }
    }
    misses_.fetch_add(1, std::memory_order_relaxed);
    auto d = inner_.derive(kind, params, inputs);
    if (!d) return d;
    std::unique_lock lock(mutex_);
    if (memo_.size() < capacity_)
        memo_.emplace(key, std::make_shared<const Entry>(Entry{kind, params, inputs, *d}));
    return d;
}

std::int64_t DerivationCache::hits() const { return hits_.load(std::memory_order_relaxed); }
std::int64_t DerivationCache::misses() const { return misses_.load(std::memory_order_relaxed); }

}  // namespace tapestry
