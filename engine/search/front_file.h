// A front as a file (docs/search.md, "Output"): the JSON form ("format":
// "tapestry-front", version 1) and the CSV form, written alike by `tapestry
// optimize --export-front` and the studio's Optimize dock. Every figure is a
// prediction of the cost model, and the files say so.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "search/evaluate.h"

namespace tapestry::search {

struct FrontRow {
    std::string plan;  // Space::describe
    std::string key;   // Candidate::key
    Figures figures;
};

struct FrontHeader {
    std::string project;
    std::string target;
    int devices = 0;
    std::uint64_t seed = 0;
};

// {"format": "tapestry-front", "version": 1, "label", project, target, devices,
// seed, "front": [{index, plan, key, figures}]}, two-space indent, a final newline.
std::string front_json(const FrontHeader &header, const std::vector<FrontRow> &rows);
// "index,makespan_seconds,peak_bytes,devices,communication_bytes,energy_joules,feasible,plan"
// and a row per plan (commas inside a plan's description become ';').
std::string front_csv(const std::vector<FrontRow> &rows);
// A plan's figures as the JSON of the front file and of `optimize --json`.
std::string figures_json_text(const Figures &f);

}  // namespace tapestry::search
