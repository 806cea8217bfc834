// Test projects for the engine suites: a fixture's JSON text parsed into a graph
// (it must parse: a failure stops the suite with the first issue), and the source
// tree the suite runs from (TAPESTRY_SOURCE_DIR, set by CTest).
#pragma once

#include <QtGlobal>
#include <filesystem>
#include <string>

#include "cost/target.h"
#include "graph/graph.h"
#include "io/project_file.h"

namespace tapestry::test {

inline Graph parse(const std::string &json) {
    LoadResult r = parse_project(json);
    if (!r.ok()) qFatal("test project does not parse: %s", format_issue(r.issues.front()).c_str());
    return r.graph;
}

// A four-layer MLP (linear, gelu, linear, relu, linear, gelu, linear) of width 6 → 12
// → 6 with `batch` rows: x [batch, 6] → y [batch, 6].
inline std::string mlp_project_text(int batch) {
    std::string t = R"({"format": "tapestry-project", "version": 1, "name": "small mlp", "tensors": [
      {"id": "x", "dtype": "f32", "shape": [B, 6], "role": "input"},
      {"id": "w1", "dtype": "f32", "shape": [6, 12], "role": "parameter"},
      {"id": "b1", "dtype": "f32", "shape": [12], "role": "parameter"},
      {"id": "h1", "dtype": "f32", "shape": [B, 12], "role": "intermediate"}, {"id": "a1", "dtype": "f32", "shape": [B, 12], "role": "intermediate"},
      {"id": "w2", "dtype": "f32", "shape": [12, 12], "role": "parameter"},
      {"id": "b2", "dtype": "f32", "shape": [12], "role": "parameter"},
      {"id": "h2", "dtype": "f32", "shape": [B, 12], "role": "intermediate"}, {"id": "a2", "dtype": "f32", "shape": [B, 12], "role": "intermediate"},
      {"id": "w3", "dtype": "f32", "shape": [12, 12], "role": "parameter"},
      {"id": "b3", "dtype": "f32", "shape": [12], "role": "parameter"},
      {"id": "h3", "dtype": "f32", "shape": [B, 12], "role": "intermediate"}, {"id": "a3", "dtype": "f32", "shape": [B, 12], "role": "intermediate"},
      {"id": "w4", "dtype": "f32", "shape": [12, 6], "role": "parameter"},
      {"id": "b4", "dtype": "f32", "shape": [6], "role": "parameter"},
      {"id": "y", "dtype": "f32", "shape": [B, 6], "role": "output"}],
     "operations": [
      {"id": "fc1", "kind": "linear", "inputs": {"x": "x", "w": "w1", "bias": "b1"}, "outputs": {"y": "h1"}},
      {"id": "gelu1", "kind": "gelu", "inputs": {"x": "h1"}, "outputs": {"y": "a1"}},
      {"id": "fc2", "kind": "linear", "inputs": {"x": "a1", "w": "w2", "bias": "b2"}, "outputs": {"y": "h2"}},
      {"id": "relu2", "kind": "relu", "inputs": {"x": "h2"}, "outputs": {"y": "a2"}},
      {"id": "fc3", "kind": "linear", "inputs": {"x": "a2", "w": "w3", "bias": "b3"}, "outputs": {"y": "h3"}},
      {"id": "gelu3", "kind": "gelu", "inputs": {"x": "h3"}, "outputs": {"y": "a3"}},
      {"id": "fc4", "kind": "linear", "inputs": {"x": "a3", "w": "w4", "bias": "b4"}, "outputs": {"y": "y"}}]})";
    for (size_t p = t.find("[B,"); p != std::string::npos; p = t.find("[B,")) t.replace(p + 1, 1, std::to_string(batch));
    return t;
}

inline std::filesystem::path source_dir() {
    return std::filesystem::path(qgetenv("TAPESTRY_SOURCE_DIR").toStdString());
}

// An example of projects/ by name ("mlp"); stops the suite when it does not load.
inline Graph example_graph(const std::string &name) {
    LoadResult r = load_project(source_dir() / "projects" / (name + ".tapestry.json"));
    if (!r.ok()) qFatal("projects/%s.tapestry.json does not load", name.c_str());
    return r.graph;
}

// A built-in hardware target by name ("h100-sxm"); stops the suite when it is missing.
inline cost::Target builtin_target_or_stop(const std::string &name) {
    auto t = cost::builtin_target(name);
    if (!t) qFatal("%s", t.error().c_str());
    return *t;
}

}  // namespace tapestry::test
