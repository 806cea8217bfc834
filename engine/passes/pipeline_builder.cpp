// Pipelines by name: each name checked and its options parsed before anything runs.
#include "passes/pipeline_builder.h"

#include "passes/rules.h"

namespace tapestry {

const std::vector<std::string> &known_passes() {
    static const std::vector<std::string> names{"substitute", "shard", "fuse", "place"};
    return names;
}

std::vector<std::string> pipeline_names(const std::string &text) {
    std::vector<std::string> out;
    std::string current;
    auto flush = [&] {
        if (!current.empty()) out.push_back(current);
        current.clear();
    };
    for (char c : text) {
        if (c == ',') flush();
        else if (c != ' ' && c != '\t') current += c;
    }
    flush();
    return out;
}

Expected<PassFunction, std::string> make_pass(const std::string &name, const PipelineSettings &settings) {
    if (name == "shard") {
        auto parsed = parse_shard_options(settings.shard_specs);
        if (!parsed) return unexpected(parsed.error());
        if (parsed->specs.empty())
            return unexpected(std::string("the shard pass needs at least one shard spec (op:dim=parts, e.g. fc1:0=4)"));
        parsed->propagate = settings.propagate;
        parsed->movement = settings.movement;
        return PassFunction([opts = *parsed](const Graph &g) { return shard(g, opts); });
    }
    if (name == "substitute") {
        SubstituteOptions opts;
        opts.rules = settings.rules;
        opts.goal = settings.goal;
        if (opts.goal != "expand" && opts.goal != "fuse")
            return unexpected("unknown substitution goal '" + opts.goal + "' (expand or fuse)");
        // An unknown rule is a usage error now, not a failed pass later.
        if (!opts.rules.empty()) {
            auto known = rewrites_by_name(opts.rules);
            if (!known) return unexpected(known.error());
        }
        return PassFunction([opts](const Graph &g) { return substitute(g, opts); });
    }
    if (name == "fuse") {
        FuseOptions opts;
        for (const std::string &id : settings.fuse_exclude) opts.exclude.push_back(OpId(id));
        opts.backends = settings.fusion_backends;
        return PassFunction([opts](const Graph &g) { return fuse(g, opts); });
    }
    if (name == "place") {
        if (settings.devices.empty())
            return unexpected(std::string("the place pass needs devices (a target and --devices)"));
        auto opts = parse_placement(settings.placement, settings.placement_maps, settings.devices);
        if (!opts) return unexpected(opts.error());
        opts->movement = settings.movement;
        return PassFunction([opts = *opts](const Graph &g) { return place(g, opts); });
    }
    return unexpected("unknown pass '" + name + "' (known: substitute, shard, fuse, place)");
}

Expected<Pipeline, std::string> build_pipeline(const std::vector<std::string> &names, const PipelineSettings &settings) {
    if (names.empty()) return unexpected(std::string("the pipeline names no pass (known: substitute, shard, fuse, place)"));
    Pipeline pipeline;
    for (const std::string &name : names) {
        auto pass = make_pass(name, settings);
        if (!pass) return unexpected(pass.error());
        pipeline.add(name, std::move(pass).value());
    }
    return pipeline;
}

}  // namespace tapestry
