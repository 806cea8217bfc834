// Prediction accuracy (launch/accuracy.h).
#include "launch/accuracy.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "common/check.h"

namespace tapestry::launch {

double median_relative_error(std::span<const double> predicted, std::span<const double> measured) {
    TAPESTRY_CHECK(predicted.size() == measured.size(), "median_relative_error: series of different lengths");
    std::vector<double> e;
    for (size_t i = 0; i < measured.size(); ++i)
        if (measured[i] > 0) e.push_back(std::abs(predicted[i] - measured[i]) / measured[i]);
    if (e.empty()) return 0;
    const size_t mid = e.size() / 2;
    std::nth_element(e.begin(), e.begin() + static_cast<std::ptrdiff_t>(mid), e.end());
    if (e.size() % 2) return e[mid];
    const double upper = e[mid];
    return (upper + *std::max_element(e.begin(), e.begin() + static_cast<std::ptrdiff_t>(mid))) / 2;
}

double kendall_tau(std::span<const double> a, std::span<const double> b) {
    TAPESTRY_CHECK(a.size() == b.size(), "kendall_tau: series of different lengths");
    // O(n²): the series are a plan's steps or a handful of plans.
    double concordant = 0, discordant = 0, ties_a = 0, ties_b = 0;
    for (size_t i = 0; i < a.size(); ++i)
        for (size_t j = i + 1; j < a.size(); ++j) {
            const double da = a[i] - a[j], db = b[i] - b[j];
            if (da == 0 && db == 0) continue;
            if (da == 0) ++ties_a;
            else if (db == 0) ++ties_b;
            else if ((da > 0) == (db > 0)) ++concordant;
            else ++discordant;
        }
    const double n1 = concordant + discordant + ties_a, n2 = concordant + discordant + ties_b;
    if (n1 == 0 || n2 == 0) return 0;
    return (concordant - discordant) / std::sqrt(n1 * n2);
}

}  // namespace tapestry::launch
