// Pipelines by name (docs/passes.md): the one place that turns "substitute,shard,fuse"
// plus the user's settings into a Pipeline, shared by `tapestry passes` and the
// studio's Stages dock so both accept exactly the same passes and report the same errors.
#pragma once

#include <string>
#include <vector>

#include "common/expected.h"
#include "passes/fuse.h"
#include "passes/place.h"
#include "passes/shard.h"
#include "passes/stage.h"
#include "passes/substitute.h"

namespace tapestry {

struct PipelineSettings {
    std::vector<std::string> shard_specs;  // "fc1:0=4", … (the shard pass needs at least one)
    bool propagate = true;                 // shard: extend shardings to neighbours
    bool movement = true;                  // shard: insert data-movement nodes
    std::vector<std::string> rules;        // substitute: rule names; empty = the default set
    std::string goal = "expand";           // substitute: "expand" or "fuse"
    std::vector<std::string> fuse_exclude; // fuse: op ids never fused
    // fuse: the backends every fused op must run on (FuseOptions::backends); the
    // CLI and the studio give cpu::fusion_backend().
    std::vector<const FusionBackend *> fusion_backends;
    // place: the rule ("shard", "round-robin", "pipeline[:S]"), explicit maps
    // ("op=0:0,0:1") and the devices ("0:0", … from a target's cluster).
    std::string placement = "shard";
    std::vector<std::string> placement_maps;
    std::vector<std::string> devices;
};

// The passes a pipeline may name, in their usual order.
const std::vector<std::string> &known_passes();

// Splits "substitute, shard,fuse" into names (spaces ignored, empty parts dropped).
std::vector<std::string> pipeline_names(const std::string &text);

// One pass by name, its options parsed and checked now (the same errors as
// build_pipeline gives for it). The studio's worker runs passes one at a time
// through this, so that it can stop between them.
Expected<PassFunction, std::string> make_pass(const std::string &name, const PipelineSettings &settings);

// The pipeline for `names`. Errors, for the user: "unknown pass 'shrad' (known:
// substitute, shard, fuse)", "--pipeline names no pass", the first bad shard spec,
// "the shard pass needs at least one shard spec (op:dim=parts)", an unknown rule.
Expected<Pipeline, std::string> build_pipeline(const std::vector<std::string> &names, const PipelineSettings &settings);

}  // namespace tapestry
