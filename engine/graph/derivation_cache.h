// A memo in front of a signature source: the same kind, parameters and operand
// types always derive the same signature, and the search derives each operation
// of a graph many times per candidate (the shard pass, placement's movement
// check and the plan compiler each resolve every op) and again for every
// candidate. Thread-safe; a derivation holds no ISL object, so one memo serves
// every thread. Errors are not kept (a failing op is derived again, and fails
// again with the same words).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <shared_mutex>
#include <unordered_map>
#include <vector>

#include "graph/signature.h"

namespace tapestry {

class DerivationCache final : public SignatureSource {
public:
    // `inner` must outlive the cache. At most `capacity` derivations are kept; past
    // that, new ones are derived and not kept (a bound, not an eviction policy:
    // the search's graphs have a few hundred distinct operations).
    explicit DerivationCache(const SignatureSource &inner, std::size_t capacity = 4096);

    bool knows(const std::string &kind) const override { return inner_.knows(kind); }
    Expected<Derivation, DerivationError> derive(const std::string &kind, const Params &params,
                                                 const std::vector<PortTypes> &inputs) const override;

    // Lookups answered from the memo and derivations made (for tests and benchmarks).
    std::int64_t hits() const;
    std::int64_t misses() const;

private:
    struct Entry {
        std::string kind;
        Params params;
        std::vector<PortTypes> inputs;
        Derivation derivation;
    };
    const SignatureSource &inner_;
    std::size_t capacity_;
    mutable std::shared_mutex mutex_;
    mutable std::unordered_multimap<std::uint64_t, std::shared_ptr<const Entry>> memo_;
    mutable std::atomic<std::int64_t> hits_{0}, misses_{0};
};

}  // namespace tapestry
