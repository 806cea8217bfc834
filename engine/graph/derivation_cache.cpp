// The derivation memo (see derivation_cache.h).
#include "graph/derivation_cache.h"

#include <mutex>
#include <type_traits>

namespace tapestry {
namespace {

// FNV-1a over the bytes of a value, folded into `h`.
void mix(std::uint64_t &h, const void *data, std::size_t n) {
    const auto *p = static_cast<const unsigned char *>(data);
    for (std::size_t i = 0; i < n; ++i) {
        h ^= p[i];
        h *= 1099511628211ull;
    }
}
void mix(std::uint64_t &h, const std::string &s) {
    mix(h, s.data(), s.size());
    const std::size_t n = s.size();
    mix(h, &n, sizeof n);
}
void mix(std::uint64_t &h, std::int64_t v) { mix(h, &v, sizeof v); }

std::uint64_t key_of(const std::string &kind, const Params &params, const std::vector<PortTypes> &inputs) {
    std::uint64_t h = 14695981039346656037ull;
    mix(h, kind);
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
    for (const PortTypes &p : inputs) {
        mix(h, p.port);
        for (const OperandType &o : p.operands) {
            mix(h, static_cast<std::int64_t>(o.dtype));
            for (Coord c : o.shape) mix(h, c);
            mix(h, static_cast<std::int64_t>(o.shape.rank()));
        }
        mix(h, static_cast<std::int64_t>(p.operands.size()));
    }
    return h;
}

bool same_inputs(const std::vector<PortTypes> &a, const std::vector<PortTypes> &b) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i)
        if (a[i].port != b[i].port || a[i].operands != b[i].operands) return false;
    return true;
}

}  // namespace

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
