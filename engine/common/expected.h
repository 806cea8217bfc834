// A minimal std::expected stand-in (GCC 12 has no <expected>): either a value or
// an error value. Used wherever bad user input is reported as a value.
#pragma once

#include <utility>
#include <variant>

#include "common/check.h"

namespace tapestry {

template <typename E> struct Unexpected {
    E error;
};
template <typename E> Unexpected<std::decay_t<E>> unexpected(E &&e) { return {std::forward<E>(e)}; }

template <typename T, typename E> class Expected {
public:
    Expected(T value) : v_(std::in_place_index<0>, std::move(value)) {}
    template <typename G> Expected(Unexpected<G> u) : v_(std::in_place_index<1>, E(std::move(u.error))) {}

    bool has_value() const { return v_.index() == 0; }
    explicit operator bool() const { return has_value(); }
    T &value() & {
        TAPESTRY_CHECK(has_value(), "Expected::value() on an error");
        return std::get<0>(v_);
    }
    const T &value() const & {
        TAPESTRY_CHECK(has_value(), "Expected::value() on an error");
        return std::get<0>(v_);
    }
    T &&value() && {
        TAPESTRY_CHECK(has_value(), "Expected::value() on an error");
        return std::get<0>(std::move(v_));
    }
    const E &error() const {
        TAPESTRY_CHECK(!has_value(), "Expected::error() on a value");
        return std::get<1>(v_);
    }
    T *operator->() { return &value(); }
    const T *operator->() const { return &value(); }
    T &operator*() & { return value(); }
    const T &operator*() const & { return value(); }

private:
    std::variant<T, E> v_;
};

}  // namespace tapestry
