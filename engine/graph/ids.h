// Stable identifiers for graph nodes. Views, the store and plans refer to nodes by
// these ids, never by pointer (STYLE.md). Ids are the user-visible strings of the
// project file ("x", "fc1"), unique across tensors and operations of a graph.
#pragma once

#include <compare>
#include <functional>
#include <string>

namespace tapestry {

template <typename Tag> struct Id {
    std::string value;

    Id() = default;
    explicit Id(std::string v) : value(std::move(v)) {}
    bool empty() const { return value.empty(); }
    const std::string &str() const { return value; }
    friend bool operator==(const Id &, const Id &) = default;
    friend auto operator<=>(const Id &, const Id &) = default;
};

using TensorId = Id<struct TensorTag>;
using OpId = Id<struct OpTag>;
using ShardId = Id<struct ShardTag>;

}  // namespace tapestry

template <typename Tag> struct std::hash<tapestry::Id<Tag>> {
    size_t operator()(const tapestry::Id<Tag> &id) const noexcept { return std::hash<std::string>{}(id.value); }
};
