// Front files (see front_file.h).
#include "search/front_file.h"

#include <algorithm>
#include <cstdio>

#include <nlohmann/json.hpp>

namespace tapestry::search {
namespace {

using nlohmann::ordered_json;

ordered_json figures_of(const Figures &f) {
    return {{"makespan_seconds", f.makespan}, {"peak_bytes", f.peak},    {"devices", f.devices},
            {"communication_bytes", f.comm_bytes}, {"energy_joules", f.energy}, {"feasible", f.violation <= 0},
            {"violated", f.violated}};
}

std::string number(double v, const char *format) {
    char buf[64];
    std::snprintf(buf, sizeof buf, format, v);
    return buf;
}

}  // namespace

std::string figures_json_text(const Figures &f) {
    return figures_of(f).dump();
}

std::string front_json(const FrontHeader &header, const std::vector<FrontRow> &rows) {
    ordered_json front = ordered_json::array();
    for (size_t i = 0; i < rows.size(); ++i)
        front.push_back({{"index", i}, {"plan", rows[i].plan}, {"key", rows[i].key}, {"figures", figures_of(rows[i].figures)}});
    return ordered_json{{"format", "tapestry-front"},
                        {"version", 1},
                        {"label", "predictions of the cost model (not measurements)"},
                        {"project", header.project},
                        {"target", header.target},
                        {"devices", header.devices},
                        {"seed", header.seed},
                        {"front", front}}
               .dump(2) +
           "\n";
}

std::string front_csv(const std::vector<FrontRow> &rows) {
    std::string out = "index,makespan_seconds,peak_bytes,devices,communication_bytes,energy_joules,feasible,plan\n";
    for (size_t i = 0; i < rows.size(); ++i) {
        const Figures &f = rows[i].figures;
        std::string plan = rows[i].plan;
        std::replace(plan.begin(), plan.end(), ',', ';');
        out += std::to_string(i) + "," + number(f.makespan, "%.9g") + "," + number(f.peak, "%.0f") + "," +
               std::to_string(f.devices) + "," + number(f.comm_bytes, "%.0f") + "," + number(f.energy, "%.9g") + "," +
               (f.violation <= 0 ? "true" : "false") + ",\"" + plan + "\"\n";
    }
    return out;
}

}  // namespace tapestry::search
