// How well predictions match measurements (docs/launch.md, "Accuracy"): the
// median relative error and Kendall's rank correlation, as the launch report,
// the studio's scatter and the accuracy benchmark give them.
#pragma once

#include <span>

namespace tapestry::launch {

// median |predicted − measured| / measured over the pairs with measured > 0; 0 when none.
double median_relative_error(std::span<const double> predicted, std::span<const double> measured);

// Kendall's τ-b between two equally long series (ties counted as τ-b does):
// 1 when they order every pair alike, −1 when oppositely, 0 for fewer than two
// pairs or a constant series.
double kendall_tau(std::span<const double> a, std::span<const double> b);

}  // namespace tapestry::launch
