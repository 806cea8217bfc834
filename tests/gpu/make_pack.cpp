// tapestry-gpu-pack OUT_DIR [--quick] [--no-cpu-check]: the test pack a lent GPU
// runs (issue 18, docs/gpu.md). The device machine has none of our packages — no
// oneDNN, so no CPU executor — so everything the check needs besides the GPU is
// made here: per case a compiled plan (as `tapestry plan -o` writes it), its
// inputs (as `tapestry launch --inputs` reads them) and the reference values of
// its outputs with their tolerances, both as launch/check.h computes them (the
// plan's graph run unsharded on the CPU executor; CheckOptions raised to the
// dtype's floor, atol in units of the output's scale). tapestry-gpu-check
// launches each plan on the cuda backend there and compares.
//
// Groups: "kernel" — every row of the op table (tests/support/op_cases.h) in every
// float dtype its op accepts, one op on one device, and for the GEMM, convolution,
// attention and normalization kinds also sharded over two devices (strided shard
// views, split-k partial products); "example" — every project of projects/ on 1,
// 2, 4 and 8 devices by placement rule and hand baseline, and fused. "benchmarks":
// plans of the GPU benchmark block without inputs; "sizes": each op of that block
// alone at its own size (timed and fitted, not checked: write_sizes).
//
// Reading a case of manifest.json (paths relative to the pack): load_plan("plan");
// inputs = read_inputs_dir(graph, "inputs") — "inputs" is null where the values
// were too big to pack — then make_random_inputs(graph, "seed") for every input
// or parameter still missing, as `tapestry launch --inputs DIR --seed S` does
// ("inputs_complete" says whether the folder alone has them all); then per output
// id in "outputs": read_npy("reference"/file) (bf16 references are f32 files) and
// verify::compare_values(actual, reference, atol, rtol) — atol already absolute.
// "cpu_check" says how the same launch did on the cpu backend here ("pass").
// Kernel cases also have "oracle" (a folder) and per output "oracle": {file, atol,
// rtol, scale}: the double-precision oracle's values (as f32) and the tolerance
// check.h gives the oracle comparison; the checker compares with both.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "graph/resolve.h"
#include "graph/validate.h"
#include "io/npy.h"
#include "io/project_file.h"
#include "io/random_inputs.h"
#include "io/tensor_values.h"
#include "launch/check.h"
#include "launch/cpu_backend.h"
#include "launch/launch.h"
#include "op_cases.h"
#include "ops/evaluate.h"
#include "ops/library.h"
#include "passes/fuse.h"
#include "passes/pipeline_builder.h"
#include "plan/plan_file.h"
#include "plan/planner.h"
#include "runtime/cpu/executor.h"
#include "runtime/cpu/fusion_backend.h"
#include "verify/verify.h"

#ifndef TAPESTRY_PROJECTS_DIR
#define TAPESTRY_PROJECTS_DIR "projects"
#endif

namespace tapestry {
namespace {

namespace fs = std::filesystem;
using nlohmann::ordered_json;

constexpr std::uint64_t kSeed = 1;
constexpr const char *kTarget = "h200";
// Inputs, parameters or references of a case above this size are not packed one
// by one: the checker draws the values from the seed (make_random_inputs is the
// same on every platform), as `tapestry launch --inputs DIR --seed S` does, and a
// reference that only rounds differently from its project's first is shared.
constexpr std::int64_t kValueBytesInPack = std::int64_t{1} << 20;
constexpr std::int64_t kPackLimitBytes = std::int64_t{40} << 20;
// Projects that are benchmarks, not examples (too big for the pack's references)
// live in projects/benchmarks/.

// How a case's plan is made, as `tapestry plan` would: passes first (shard,
// fuse), then a placement rule or a hand baseline on `devices` devices.
struct PlanRecipe {
    std::vector<std::string> passes;
    std::vector<std::string> shard_specs;
    int devices = 1;
    std::string placement = "shard";
    std::optional<plan::Baseline> baseline;

    std::string text() const {
        std::string t = std::to_string(devices) + (devices == 1 ? " device" : " devices");
        if (!passes.empty()) {
            t += ", passes";
            for (const std::string &p : passes) t += " " + p;
        }
        for (const std::string &s : shard_specs) t += ", shard " + s;
        return t +
               (baseline ? std::string(", baseline ") + plan::baseline_name(*baseline) : ", placement " + placement);
    }
};

struct CaseSpec {
    std::string name;    // "matmul.2d.bf16", "gpt2_block.4dev.tp": also its folder under cases/
    std::string group;   // "kernel" or "example"
    std::string source;  // the project file or the op-table row
    std::shared_ptr<const Graph> graph;
    std::vector<PlanRecipe> recipes;  // tried in order: the first that plans is the case's
    double lo = -1.0, hi = 1.0;       // float inputs uniform in [lo, hi) (log, sqrt want lo > 0)
};

struct Skipped {
    std::string name;
    std::string why;
};

// Says why a case is not in the pack, and counts it.
void skip(std::vector<Skipped> &skipped, const std::string &name, const std::string &why) {
    std::cout << "skipped " << name << ": " << why << "\n";
    skipped.push_back({name, why});
}

std::string dotted(std::string s) {
    std::replace(s.begin(), s.end(), '/', '.');
    return s;
}

// ---- planning: `tapestry plan` (app/cli/cmd_plan.cpp), step for step ------------------

// "FAIL outputs (1 finding): <the first finding>".
std::string failure(const Certificate &c) {
    for (const CertificateCheck &check : c.checks)
        if (!check.pass) return c.badge() + ": " + check.message;
    return c.badge();
}

Expected<plan::PlanResult, std::string> plan_recipe(const Graph &g, const PlanRecipe &recipe,
                                                    const cost::Target &target, const std::string &source) {
    plan::PlanRequest request;
    request.source.project = source;
    Graph placed = g;
    if (!recipe.passes.empty()) {
        PipelineSettings settings;
        settings.shard_specs = recipe.shard_specs;
        settings.fusion_backends = {&cpu::fusion_backend()};
        auto pipeline = build_pipeline(recipe.passes, settings);
        if (!pipeline) return unexpected("pipeline: " + pipeline.error());
        auto stages = pipeline->run(g, CertifyOptions{});
        if (!stages) return unexpected(stages.error());
        const Stage &last = stages->back();
        if (last.certificate.certified() && !last.certificate.pass())
            return unexpected("stage " + last.pass + " failed its certificate: " + failure(last.certificate));
        placed = last.graph;
        request.source.stage = static_cast<int>(stages->size()) - 1;
        request.source.pass = last.pass;
        request.source.options = last.options;
        request.source.certificate = last.certificate.badge();
    }
    request.target = target;
    request.devices = recipe.devices;
    request.placement = recipe.placement;
    request.baseline = recipe.baseline;
    auto result = plan::make_plan(placed, request);
    if (!result) return unexpected(result.error());
    if (!result->certificate.pass()) return unexpected("plan certificate: " + failure(result->certificate));
    return result;
}

// The first recipe that plans, with its text; else every recipe's refusal.
Expected<std::pair<plan::PlanResult, std::string>, std::string> plan_case(const CaseSpec &c,
                                                                          const cost::Target &target) {
    std::string why;
    for (const PlanRecipe &r : c.recipes) {
        auto planned = plan_recipe(*c.graph, r, target, c.source);
        if (planned) return std::make_pair(std::move(planned).value(), r.text());
        why += (why.empty() ? "" : "; ") + r.text() + ": " + planned.error();
    }
    return unexpected(why);
}

// ---- values: inputs, the reference run, tolerances ---------------------------------------

std::map<TensorId, TensorData> case_inputs(const Graph &g, const CaseSpec &c) {
    std::map<TensorId, TensorData> values = make_random_inputs(g, kSeed);
    if (c.lo == -1.0 && c.hi == 1.0) return values;
    for (auto &[id, v] : values)
        if (dtype_is_float(v.dtype))
            for (std::int64_t i = 0; i < v.element_count(); ++i)
                v.set(i, c.lo + (v.get(i) + 1.0) * 0.5 * (c.hi - c.lo));
    return values;
}

// What launch/check.h compares a launch with: the plan's graph run whole on the CPU executor.
Expected<std::map<TensorId, TensorData>, std::string> reference_outputs(const Graph &g,
                                                                        const std::map<TensorId, TensorData> &inputs) {
    cpu::CpuOptions options;
    options.threads = launch::CheckOptions{}.threads;
    options.run_shards = false;
    auto program = cpu::Program::compile(g, OpLibrary::standard(), options);
    if (!program) return unexpected("reference run: " + program.error());
    auto run = (*program)->run(inputs);
    if (!run) return unexpected("reference run: " + run.error());
    return std::move(run->outputs);
}

// The double-precision oracle's outputs of the plan's graph (ops/evaluate.h), as
// `tapestry launch --oracle` computes them, kept as f32 (their rounding, ~6e-8
// relative, is far below any tolerance the checks use): the kernel cases' second
// reference, so the GPU's kernels are held to the oracle and not only to the CPU's.
Expected<std::map<TensorId, TensorData>, std::string> oracle_outputs(const Graph &g,
                                                                     const std::map<TensorId, TensorData> &inputs) {
    auto ref_inputs = verify::oracle_inputs(g, inputs);
    if (!ref_inputs) return unexpected("oracle: " + ref_inputs.error());
    EvaluationOptions eval;
    eval.run_shards = false;
    auto values = evaluate_reference(g, *ref_inputs, OpLibrary::standard(), eval);
    if (!values) return unexpected("oracle: " + values.error());
    std::map<TensorId, TensorData> out;
    for (const TensorPtr &t : g.tensors()) {
        if (t->role != TensorRole::output) continue;
        auto v = values->find(t->id);
        if (v == values->end()) return unexpected("oracle: no value for output '" + t->id.value + "'");
        TensorData d(dtype_is_float(t->dtype) ? DType::f32 : t->dtype, t->shape());
        for (std::int64_t i = 0; i < d.element_count(); ++i) d.set(i, v->second.data[static_cast<size_t>(i)]);
        out.emplace(t->id, std::move(d));
    }
    return out;
}

// The tolerance check.h applies to an output against this reference: its options
// raised to the dtype's floor, atol in units of the reference's scale (given here
// absolute, as verify::compare_values takes it).
ordered_json output_tolerance(const Tensor &t, const TensorData &reference, const std::string &file) {
    const launch::CheckOptions check;
    const verify::Tolerance floor = verify::dtype_tolerance_floor(t.dtype);
    std::vector<double> values(static_cast<size_t>(reference.element_count()));
    for (std::int64_t i = 0; i < reference.element_count(); ++i) values[static_cast<size_t>(i)] = reference.get(i);
    const double scale = verify::output_scale(values);
    return {{"file", file},
            {"atol", std::max(check.atol, floor.atol) * scale},
            {"rtol", std::max(check.rtol, floor.rtol)},
            {"scale", scale}};
}

// ---- the pack's folders ------------------------------------------------------------------

std::string read_bytes(const fs::path &file) {
    std::ifstream in(file, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// A folder's files, name → bytes: two folders with the same are one.
std::map<std::string, std::string> folder_contents(const fs::path &dir) {
    std::map<std::string, std::string> files;
    for (const fs::directory_entry &e : fs::directory_iterator(dir))
        if (e.is_regular_file()) files[e.path().filename().string()] = read_bytes(e.path());
    return files;
}

std::uint64_t fnv1a(const std::map<std::string, std::string> &files) {
    std::uint64_t h = 0xcbf29ce484222325ull;
    auto mix = [&h](const std::string &s) {
        for (char c : s) {
            h ^= static_cast<unsigned char>(c);
            h *= 0x100000001b3ull;
        }
        h ^= 0xff;
        h *= 0x100000001b3ull;
    };
    for (const auto &[name, bytes] : files) {
        mix(name);
        mix(bytes);
    }
    return h;
}

std::set<std::string> file_names(const fs::path &dir) {
    std::set<std::string> names;
    std::error_code ec;
    if (fs::is_directory(dir, ec))
        for (const fs::directory_entry &e : fs::directory_iterator(dir)) names.insert(e.path().filename().string());
    return names;
}

class PackWriter {
public:
    explicit PackWriter(fs::path root) : root_(std::move(root)) {}
    const fs::path &root() const { return root_; }

    // Keeps a folder just written, or — when an earlier folder holds the same
    // files (the plans of one project share their inputs, often their reference) —
    // removes it and names that one. Returns the path relative to the pack.
    std::string keep(const fs::path &dir) {
        const std::map<std::string, std::string> files = folder_contents(dir);
        const std::uint64_t h = fnv1a(files);
        for (const std::string &earlier : by_hash_[h])
            if (folder_contents(root_ / earlier) == files) {
                fs::remove_all(dir);
                ++shared_;
                return earlier;
            }
        const std::string rel = fs::relative(dir, root_).generic_string();
        by_hash_[h].push_back(rel);
        return rel;
    }
    int shared() const { return shared_; }

private:
    fs::path root_;
    std::map<std::uint64_t, std::vector<std::string>> by_hash_;
    int shared_ = 0;
};

// The reference values in `dir` as write_outputs_dir names them; output id → file.
Expected<std::map<TensorId, std::string>, std::string> write_reference(const Graph &g,
                                                                       const std::map<TensorId, TensorData> &values,
                                                                       const fs::path &dir) {
    std::map<TensorId, std::string> files;
    for (const auto &[id, value] : values) {
        const std::set<std::string> before = file_names(dir);
        if (std::string e = write_outputs_dir(g, {{id, value}}, dir); !e.empty()) return unexpected(e);
        std::vector<std::string> added;
        for (const std::string &name : file_names(dir))
            if (!before.count(name)) added.push_back(name);
        if (added.size() != 1)
            return unexpected("reference of '" + id.value + "': expected one new file in " + dir.string());
        files[id] = added.front();
    }
    return files;
}

// What a case's inputs/ folder holds, by the sizes of its values (the plans of
// one project share one folder): every input and every parameter; or, where the
// parameters are too big, the inputs alone ("inputs_complete": false: the seed
// gives the parameters); or, where the inputs are too big too, no folder at all
// ("inputs": null: the seed gives everything). Values drawn within other bounds
// than make_random_inputs' are always packed whole.
enum class Packed { all, inputs_only, none };

Packed what_to_pack(const Graph &g, const CaseSpec &c, const std::map<TensorId, TensorData> &inputs) {
    if (!(c.lo == -1.0 && c.hi == 1.0)) return Packed::all;
    std::int64_t input_bytes = 0, parameter_bytes = 0;
    for (const TensorPtr &t : g.tensors())
        if (inputs.count(t->id)) (t->role == TensorRole::input ? input_bytes : parameter_bytes) += t->bytes();
    if (input_bytes > kValueBytesInPack) return Packed::none;
    return parameter_bytes > kValueBytesInPack ? Packed::inputs_only : Packed::all;
}

// Reads a written inputs folder back as tapestry-gpu-check and `tapestry launch`
// will — read_inputs_dir, then the seed for what it lacks — and compares.
std::string read_back(const Graph &g, const fs::path &dir, const std::map<TensorId, TensorData> &inputs) {
    auto read = read_inputs_dir(g, dir);
    if (!read) return "reading the inputs back: " + read.error();
    for (auto &[id, value] : make_random_inputs(g, kSeed))
        if (!read->count(id)) read->emplace(id, std::move(value));
    if (*read != inputs)
        return "the inputs read back from " + dir.string() + " differ from the ones the reference used";
    return "";
}

// Writes the case's inputs folder (or none); sets "inputs" and "inputs_complete".
std::string write_inputs(PackWriter &pack, const Graph &g, const CaseSpec &c,
                         const std::map<TensorId, TensorData> &inputs, const fs::path &dir, ordered_json &entry) {
    const Packed packed = what_to_pack(g, c, inputs);
    entry["inputs_complete"] = packed == Packed::all;
    if (packed == Packed::none) {
        entry["inputs"] = nullptr;
        return "";
    }
    std::map<TensorId, TensorData> values;
    for (const auto &[id, value] : inputs)
        if (packed == Packed::all || g.find_tensor(id)->role == TensorRole::input) values.emplace(id, value);
    if (std::string e = write_outputs_dir(g, values, dir); !e.empty()) return e;
    if (std::string e = read_back(g, dir, inputs); !e.empty()) return e;
    entry["inputs"] = pack.keep(dir);
    return "";
}

// max |a − b| over the elements, or nullopt when the shapes differ or a NaN sits on one side only.
std::optional<double> max_difference(const TensorData &a, const TensorData &b) {
    if (a.shape != b.shape) return std::nullopt;
    double d = 0;
    for (std::int64_t i = 0; i < a.element_count(); ++i) {
        const double x = a.get(i), y = b.get(i);
        if (std::isnan(x) || std::isnan(y)) {
            if (std::isnan(x) != std::isnan(y)) return std::nullopt;
            continue;
        }
        d = std::max(d, std::fabs(x - y));
    }
    return d;
}

// The first big reference packed for a project (its whole plan on one device).
struct SharedReference {
    std::string case_name;
    std::string path;  // relative to the pack
    std::map<TensorId, TensorData> values;
    std::map<TensorId, std::string> files;
};

// The reference part of a case's entry: "reference" and per output its file and
// tolerance. A big reference (every plan of gpt2_block has 6 MiB of output) that
// differs from its project's first one only in rounding — a plan whose graph sums
// partial products splits the sums differently, so its unsharded run rounds
// differently — is not packed again: the case names the first, and each output's
// atol grows by the largest difference d between the two (kept as
// "reference_difference"). Whatever passes against its own reference then passes
// against the first: |gpu − first| ≤ atol + rtol·|own| + d ≤ (atol + d + rtol·d) + rtol·|first|.
std::string write_reference_part(PackWriter &pack, std::map<std::string, SharedReference> &shared, const Graph &g,
                                 const CaseSpec &c, const std::map<TensorId, TensorData> &reference,
                                 const fs::path &dir, ordered_json &entry) {
    std::int64_t bytes = 0;
    for (const auto &[id, value] : reference) bytes += static_cast<std::int64_t>(value.bytes.size());
    const bool big = bytes > kValueBytesInPack;
    std::map<TensorId, double> difference;
    const SharedReference *first = nullptr;
    if (auto it = shared.find(c.source); big && it != shared.end()) {
        first = &it->second;
        for (const auto &[id, value] : reference) {
            auto other = first->values.find(id);
            const auto d = other == first->values.end() ? std::nullopt : max_difference(value, other->second);
            if (!d) {
                first = nullptr;
                break;
            }
            difference[id] = *d;
        }
    }
    std::map<TensorId, std::string> files;
    if (first) {
        files = first->files;
        entry["reference"] = first->path;
        entry["reference_of"] = first->case_name;
    } else {
        auto written = write_reference(g, reference, dir);
        if (!written) return written.error();
        files = std::move(written).value();
        entry["reference"] = pack.keep(dir);
        if (big && !shared.count(c.source))
            shared[c.source] = {c.name, entry["reference"].get<std::string>(), reference, files};
    }
    ordered_json outputs = ordered_json::object();
    for (const TensorPtr &t : g.tensors()) {
        if (t->role != TensorRole::output) continue;
        auto value = reference.find(t->id);
        if (value == reference.end()) return "the reference run gave no value for output '" + t->id.value + "'";
        ordered_json o = output_tolerance(*t, value->second, files.at(t->id));
        if (first) {
            const double d = difference.at(t->id);
            o["atol"] = o["atol"].get<double>() + d + o["rtol"].get<double>() * d;
            o["reference_difference"] = d;
        }
        outputs[t->id.value] = std::move(o);
    }
    entry["outputs"] = std::move(outputs);
    return "";
}

// The cpu check (unless --no-cpu-check): launches the case on the cpu backend and
// compares what it returns with the packed reference at the packed tolerances —
// what tapestry-gpu-check does on the cuda backend — so that a case the launcher
// itself fails, or a pack the checker would misread, shows here. "pass", or what
// went wrong.
std::string cpu_check(const fs::path &root, const plan::Plan &p, const std::map<TensorId, TensorData> &inputs,
                      const ordered_json &entry) {
    auto backend = launch::make_cpu_backend();
    auto r = launch::launch_plan(p, *backend, inputs);
    if (!r) return "refused: " + r.error();
    if (!r->ok()) return r->status + ": " + r->fault.message;
    for (const auto &[id, o] : entry["outputs"].items()) {
        auto mine = r->outputs.find(TensorId(id));
        if (mine == r->outputs.end()) return "the launch returned no value for output '" + id + "'";
        auto ref = read_npy(root / entry["reference"].get<std::string>() / o["file"].get<std::string>());
        if (!ref) return ref.error();
        if (ref->element_count() != mine->second.element_count()) return "output '" + id + "': element counts differ";
        const verify::OutputComparison c =
            verify::compare_values(mine->second, *ref, o["atol"].get<double>(), o["rtol"].get<double>());
        if (!c.pass) return "output '" + id + "' differs: max |error| " + std::to_string(c.max_abs_error);
        if (o.contains("oracle")) {
            const ordered_json &q = o["oracle"];
            auto oracle = read_npy(root / entry["oracle"].get<std::string>() / q["file"].get<std::string>());
            if (!oracle) return oracle.error();
            const verify::OutputComparison v =
                verify::compare_values(mine->second, *oracle, q["atol"].get<double>(), q["rtol"].get<double>());
            if (!v.pass) return "output '" + id + "' differs from the oracle: max |error| " + std::to_string(v.max_abs_error);
        }
    }
    return "pass";
}

// Plans, runs and writes one case; its manifest entry, or why it was skipped.
Expected<ordered_json, std::string> write_case(PackWriter &pack, std::map<std::string, SharedReference> &shared,
                                               const CaseSpec &c, const cost::Target &target, bool check_on_cpu) {
    auto planned = plan_case(c, target);
    if (!planned) return unexpected(planned.error());
    const plan::Plan &p = planned->first.plan;
    const fs::path dir = pack.root() / "cases" / c.name;
    fs::create_directories(dir);
    if (std::string e = plan::save_plan(p, (dir / "plan.json").string(), &planned->first.prediction); !e.empty())
        return unexpected(e);
    const std::map<TensorId, TensorData> inputs = case_inputs(p.graph, c);
    auto reference = reference_outputs(p.graph, inputs);
    if (!reference) return unexpected(reference.error());

    ordered_json entry;
    entry["name"] = c.name;
    entry["group"] = c.group;
    entry["source"] = c.source;
    entry["recipe"] = planned->second;
    entry["devices"] = static_cast<int>(p.devices.size());
    entry["steps"] = static_cast<int>(p.steps.size());
    entry["plan"] = fs::relative(dir / "plan.json", pack.root()).generic_string();
    entry["seed"] = kSeed;
    if (std::string e = write_inputs(pack, p.graph, c, inputs, dir / "inputs", entry); !e.empty()) return unexpected(e);
    if (std::string e = write_reference_part(pack, shared, p.graph, c, *reference, dir / "reference", entry);
        !e.empty())
        return unexpected(e);
    if (c.group == "kernel") {  // small graphs: the oracle too ("oracle", and per output its file and tolerance)
        auto oracle = oracle_outputs(p.graph, inputs);
        if (!oracle) return unexpected(oracle.error());
        auto files = write_reference(p.graph, *oracle, dir / "oracle");
        if (!files) return unexpected(files.error());
        entry["oracle"] = pack.keep(dir / "oracle");
        for (const TensorPtr &t : p.graph.tensors())
            if (t->role == TensorRole::output)
                entry["outputs"][t->id.value]["oracle"] = output_tolerance(*t, oracle->at(t->id), files->at(t->id));
    }
    if (check_on_cpu) entry["cpu_check"] = cpu_check(pack.root(), p, inputs, entry);
    return entry;
}

// ---- the kernel group --------------------------------------------------------------------

// The row's operands with their floating ones retyped to `dtype` (as
// tests/engine/test_cpu_kernels.cpp runs the table); nullopt where the op refuses it.
std::optional<std::vector<PortTypes>> retyped(const testing::OpCase &row, DType dtype) {
    std::vector<PortTypes> types = row.inputs;
    for (PortTypes &p : types)
        for (OperandType &o : p.operands)
            if (dtype_is_float(o.dtype)) o.dtype = dtype;
    if (!OpLibrary::standard().derive(row.kind, row.params, types)) return std::nullopt;
    return types;
}

// A project of one operation "op" reading one input tensor per operand (named
// after its port; "inputs_0", … for a port of several) and writing its outputs.
Expected<Graph, std::string> single_op_graph(const testing::OpCase &row, const std::vector<PortTypes> &types) {
    const OpLibrary &lib = OpLibrary::standard();
    auto derived = lib.derive(row.kind, row.params, types);
    if (!derived)
        return unexpected(derived.error().code + " at " + derived.error().field + ": " + derived.error().message);
    Graph g;
    g.name = row.name;
    g.description = "op table row " + row.name;
    Operation op;
    op.id = OpId("op");
    op.name = row.kind;
    op.kind = row.kind;
    op.params = row.params;
    auto bind = [&g](const PortTypes &port, TensorRole role) {
        PortBinding b{port.port, {}};
        for (size_t i = 0; i < port.operands.size(); ++i) {
            std::string id = port.operands.size() == 1 ? port.port : port.port + "_" + std::to_string(i);
            if (g.has_id(id)) id = "out_" + id;
            Tensor t;
            t.id = TensorId(id);
            t.name = id;
            t.dtype = port.operands[i].dtype;
            t.range = ZRange::of_shape(port.operands[i].shape);
            t.role = role;
            b.selections.push_back({t.id, t.range});
            g.put_tensor(std::move(t));
        }
        return b;
    };
    for (const PortSpec &spec : lib.find(row.kind)->input_ports())
        for (const PortTypes &p : types)
            if (p.port == spec.name) op.inputs.push_back(bind(p, TensorRole::input));
    for (const PortTypes &p : derived->outputs) op.outputs.push_back(bind(p, TensorRole::output));
    g.put_op(std::move(op));
    const std::vector<Issue> issues = validate(g, lib);
    if (has_errors(issues)) return unexpected("the one-op project does not validate: " + format_issue(issues.front()));
    return g;
}

int index_rank(const Graph &g) {
    const Operation &op = *g.operations().front();
    auto d = resolve(g, op, OpLibrary::standard());
    return d ? d->signature.index_space.rank() : 0;
}

// Two-device forms of a one-op case: split along an index dim (the last one that
// plans first, so that shard views are strided boxes of their buffers) and, for
// GEMMs, along the contraction (partial products and their reduction).
std::vector<CaseSpec> sharded_forms(const CaseSpec &whole, const std::string &kind) {
    std::vector<CaseSpec> forms;
    const int rank = index_rank(*whole.graph);
    CaseSpec split = whole;
    split.name += ".2dev";
    split.recipes.clear();
    for (int d = rank - 1; d >= 0; --d)
        split.recipes.push_back({{"shard"}, {"op:" + std::to_string(d) + "=2"}, 2, "shard", std::nullopt});
    if (!split.recipes.empty()) forms.push_back(split);
    if (kind == "matmul" || kind == "linear") {
        CaseSpec k = whole;
        k.name += ".2dev-k";
        k.recipes = {{{"shard"}, {"op:" + std::to_string(rank) + "=2"}, 2, "shard", std::nullopt}};
        forms.push_back(k);
    }
    return forms;
}

// Rows of the pack alone: shapes that take the GPU's tiled attention kernel (bf16
// and f16 heads of 64 or 128 columns; docs/gpu.md), with row and key counts that are
// not whole tiles, a causal mask on shards that start mid-sequence (the .2dev forms),
// an additive mask and more keys than queries. The op table's attention rows have
// heads of 2–4 columns, which only the simple kernel takes; these are too big for
// the exact projection suites that share the table.
std::vector<testing::OpCase> tiled_attention_rows() {
    using testing::port;
    std::vector<testing::OpCase> rows;
    rows.push_back({"attention/tiled-64-causal",
                    "attention",
                    Params{{"heads", std::int64_t{2}}, {"causal", true}},
                    {port("q", {1, 130, 128}), port("k", {1, 130, 128}), port("v", {1, 130, 128})}});
    rows.push_back({"attention/tiled-128-mask",
                    "attention",
                    Params{{"heads", std::int64_t{1}}},
                    {port("q", {1, 40, 128}), port("k", {1, 90, 128}), port("v", {1, 90, 128}),
                     port("mask", {40, 90})}});
    rows.push_back({"attention/tiled-64-rect",
                    "attention",
                    Params{{"heads", std::int64_t{3}}, {"scale", 0.2}},
                    {port("q", {1, 40, 192}), port("k", {1, 67, 192}), port("v", {1, 67, 192})}});
    rows.push_back({"attention/tiled-64-long-causal",
                    "attention",
                    Params{{"heads", std::int64_t{1}}, {"causal", true}},
                    {port("q", {1, 260, 64}), port("k", {1, 260, 64}), port("v", {1, 260, 64})}});
    return rows;
}

std::vector<CaseSpec> kernel_cases(std::vector<Skipped> &skipped) {
    static const std::set<std::string> kSharded = {"matmul", "linear", "conv2d", "attention", "layernorm", "softmax"};
    std::vector<CaseSpec> cases;
    std::vector<testing::OpCase> table = testing::all_op_cases();
    for (testing::OpCase &row : tiled_attention_rows()) table.push_back(std::move(row));
    for (const testing::OpCase &row : table)
        for (const DType dtype : {DType::f32, DType::bf16, DType::f16}) {
            // A row without float operands (ids, integer casts) is the same in every dtype: once.
            const bool floats = std::any_of(row.inputs.begin(), row.inputs.end(), [](const PortTypes &p) {
                return std::any_of(p.operands.begin(), p.operands.end(),
                                   [](const OperandType &o) { return dtype_is_float(o.dtype); });
            });
            if (!floats && dtype != DType::f32) continue;
            const auto types = retyped(row, dtype);
            if (!types) continue;  // the op does not take this dtype
            const std::string name = dotted(row.name) + (floats ? "." + std::string(dtype_name(dtype)) : "");
            auto g = single_op_graph(row, *types);
            if (!g) {
                skip(skipped, name, g.error());
                continue;
            }
            CaseSpec c{name,
                       "kernel",
                       "op table row " + row.name,
                       std::make_shared<const Graph>(std::move(g).value()),
                       {PlanRecipe{}},
                       row.lo,
                       row.hi};
            cases.push_back(c);
            if (kSharded.count(row.kind))
                for (CaseSpec &s : sharded_forms(c, row.kind)) cases.push_back(std::move(s));
            if (row.name.rfind("attention/tiled", 0) == 0) {
                // Split along the query rows too: the second shard starts mid-sequence.
                CaseSpec rows = c;
                rows.name += ".2dev-rows";
                rows.recipes = {{{"shard"}, {"op:2=2"}, 2, "shard", std::nullopt}};  // (b, h, s, …)
                cases.push_back(std::move(rows));
            }
        }
    return cases;
}

// ---- the example group -------------------------------------------------------------------

std::vector<PlanRecipe> split_first(const Graph &g, int pieces, int n);

bool has_shards(const Graph &g) {
    return std::any_of(g.operations().begin(), g.operations().end(),
                       [](const OpPtr &op) { return !op->shards.empty(); });
}

// Placement `shard` on n devices: a project that states shards keeps them; one
// that states none gets the shard pass on its first operation (dim 1, else dim 0).
std::vector<PlanRecipe> shard_placement(const Graph &g, int n) {
    if (n == 1 || has_shards(g)) return {PlanRecipe{{}, {}, n, "shard", std::nullopt}};
    return split_first(g, n, n);
}

// The shard pass on the first operation (dim 1, else dim 0) into `pieces`, placed on
// n devices: on one device, a plan of the same graph in smaller steps — more
// one-device cases, whose steps measure the target's device alone (plans of more
// devices than the lent GPU run as virtual devices sharing it; calibrate leaves them out).
std::vector<PlanRecipe> split_first(const Graph &g, int pieces, int n) {
    const std::string first = g.operations().front()->id.value;
    std::vector<PlanRecipe> recipes;
    for (int dim : {1, 0})
        recipes.push_back(
            {{"shard"}, {first + ":" + std::to_string(dim) + "=" + std::to_string(pieces)}, n, "shard", std::nullopt});
    return recipes;
}

std::vector<CaseSpec> example_cases(const fs::path &projects, std::vector<Skipped> &skipped,
                                    std::map<std::string, std::shared_ptr<const Graph>> &benchmarks) {
    std::vector<fs::path> files;
    for (const fs::path &dir : {projects, projects / "benchmarks"})
        if (fs::is_directory(dir))
            for (const fs::directory_entry &e : fs::directory_iterator(dir))
                if (e.path().filename().string().ends_with(".tapestry.json")) files.push_back(e.path());
    std::sort(files.begin(), files.end());
    std::vector<CaseSpec> cases;
    for (const fs::path &file : files) {
        std::string stem = file.filename().string();
        stem.resize(stem.size() - std::string(".tapestry.json").size());
        LoadResult loaded = load_project(file);
        if (!loaded.ok()) {
            skip(skipped, stem, format_issue(loaded.issues.front()));
            continue;
        }
        auto g = std::make_shared<const Graph>(std::move(loaded.graph));
        if (file.parent_path().filename() == "benchmarks") {
            benchmarks[stem] = g;
            continue;
        }
        const std::string source = "projects/" + file.filename().string();
        for (int n : {1, 2, 4, 8}) {
            const std::string prefix = stem + "." + std::to_string(n) + "dev.";
            cases.push_back({prefix + "shard", "example", source, g, shard_placement(*g, n)});
            if (n == 1) {
                if (!has_shards(*g))
                    for (int pieces : {2, 4})
                        cases.push_back(
                            {prefix + "split" + std::to_string(pieces), "example", source, g, split_first(*g, pieces, 1)});
                continue;
            }
            cases.push_back(
                {prefix + "round-robin", "example", source, g, {PlanRecipe{{}, {}, n, "round-robin", std::nullopt}}});
            for (plan::Baseline b : {plan::Baseline::dp, plan::Baseline::tp, plan::Baseline::pp, plan::Baseline::dp_tp})
                cases.push_back({prefix + (b == plan::Baseline::dp_tp ? std::string("dp_tp") : plan::baseline_name(b)),
                                 "example",
                                 source,
                                 g,
                                 {PlanRecipe{{}, {}, n, "shard", b}}});
        }
        // Fused: on one device, and on two split by the batch (else as placed).
        cases.push_back(
            {stem + ".1dev.fuse", "example", source, g, {PlanRecipe{{"fuse"}, {}, 1, "shard", std::nullopt}}});
        cases.push_back({stem + ".2dev.fuse",
                         "example",
                         source,
                         g,
                         {PlanRecipe{{"fuse"}, {}, 2, "shard", plan::Baseline::dp},
                          PlanRecipe{{"fuse"}, {}, 2, "shard", std::nullopt}}});
    }
    return cases;
}

// ---- benchmarks --------------------------------------------------------------------------

// The benchmark block on one device: placed whole, fused, and its best hand baseline
// (the least predicted makespan). Plans only: the checker draws inputs from the seed.
ordered_json write_benchmarks(const fs::path &root, const std::map<std::string, std::shared_ptr<const Graph>> &graphs,
                              const cost::Target &target, std::vector<Skipped> &skipped) {
    ordered_json out = ordered_json::array();
    fs::create_directories(root / "bench");
    for (const auto &[stem, g] : graphs) {
        const std::string source = "projects/" + stem + ".tapestry.json";
        std::vector<std::pair<std::string, PlanRecipe>> variants = {
            {stem + ".1dev.shard", PlanRecipe{}},
            {stem + ".1dev.fuse", PlanRecipe{{"fuse"}, {}, 1, "shard", std::nullopt}}};
        std::optional<std::pair<std::string, plan::PlanResult>> best;
        for (plan::Baseline b : {plan::Baseline::dp, plan::Baseline::tp, plan::Baseline::pp, plan::Baseline::dp_tp}) {
            auto r = plan_recipe(*g, PlanRecipe{{}, {}, 1, "shard", b}, target, source);
            if (r && (!best || r->prediction.makespan < best->second.prediction.makespan))
                best = std::make_pair(std::string(b == plan::Baseline::dp_tp ? "dp_tp" : plan::baseline_name(b)), *r);
        }
        for (const auto &[name, recipe] : variants) {
            auto r = plan_recipe(*g, recipe, target, source);
            if (!r) {
                skip(skipped, name, r.error());
                continue;
            }
            const std::string file = "bench/" + name + ".plan.json";
            if (std::string e = plan::save_plan(r->plan, (root / file).string(), &r->prediction); !e.empty())
                skip(skipped, name, e);
            else
                out.push_back({{"name", name},
                               {"plan", file},
                               {"seed", kSeed},
                               {"recipe", recipe.text()},
                               {"predicted_seconds", r->prediction.makespan}});
        }
        if (!best) {
            skip(skipped, stem + " best baseline", "no hand baseline plans on one device");
            continue;
        }
        const std::string name = stem + ".1dev." + best->first, file = "bench/" + name + ".plan.json";
        if (std::string e = plan::save_plan(best->second.plan, (root / file).string(), &best->second.prediction);
            !e.empty())
            skip(skipped, name, e);
        else
            out.push_back({{"name", name},
                           {"plan", file},
                           {"seed", kSeed},
                           {"recipe", "1 device, best baseline " + best->first},
                           {"predicted_seconds", best->second.prediction.makespan}});
    }
    return out;
}

// Each operation of the benchmark block alone, at its own size and dtype, on one
// device — timed on the device like a benchmark (no inputs, no reference), but
// fitted by `tapestry calibrate` (group "size"): the pack's kernel cases are far
// smaller than the block's steps, and a calibration table only scales the size
// bands it has points in. A graph of one op: the op, what it reads (an
// intermediate read becomes an input) and what it writes (outputs).
ordered_json write_sizes(const fs::path &root, const std::map<std::string, std::shared_ptr<const Graph>> &graphs,
                         const cost::Target &target, std::vector<Skipped> &skipped) {
    ordered_json out = ordered_json::array();
    fs::create_directories(root / "bench" / "sizes");
    for (const auto &[stem, whole] : graphs) {
        // The block's ops, and the fused ops of its fused form (the benchmark's
        // fused plan runs those): their steps are calibrated as kernel "fused".
        std::vector<std::pair<std::string, std::shared_ptr<const Graph>>> forms{{"op", whole}};
        FuseOptions fo;
        fo.backends = {&cpu::fusion_backend()};
        if (auto fused = fuse(*whole, fo)) forms.emplace_back("fused", std::make_shared<const Graph>(fused->graph));
        else skip(skipped, stem + " fused", fused.error());
        for (const auto &[form, g] : forms) {
            for (const OpPtr &op : g->operations()) {
                if (op->kind == "move" || (form == "fused" && op->kind != "fused")) continue;
                const std::string name = stem + "." + form + "." + op->id.value;
                Graph one;
                for (const TensorId &t : op->input_tensors())
                    if (const Tensor *tensor = g->find_tensor(t); tensor && !one.find_tensor(t)) {
                        Tensor in = *tensor;
                        if (in.role == TensorRole::intermediate || in.role == TensorRole::output) in.role = TensorRole::input;
                        one.put_tensor(std::move(in));
                    }
                for (const TensorId &t : op->output_tensors())
                    if (const Tensor *tensor = g->find_tensor(t); tensor && !one.find_tensor(t)) {
                        Tensor result = *tensor;
                        result.role = TensorRole::output;
                        one.put_tensor(std::move(result));
                    }
                Operation alone = *op;
                alone.shards.clear();
                one.put_op(std::move(alone));
                auto r = plan_recipe(one, PlanRecipe{}, target, "projects/" + stem + ".tapestry.json#" + op->id.value);
                if (!r) {
                    skip(skipped, name, r.error());
                    continue;
                }
                const std::string file = "bench/sizes/" + name + ".plan.json";
                if (std::string e = plan::save_plan(r->plan, (root / file).string(), &r->prediction); !e.empty()) {
                    skip(skipped, name, e);
                    continue;
                }
                out.push_back({{"name", name},
                               {"plan", file},
                               {"seed", kSeed},
                               {"recipe", "1 device, " + form + " '" + op->id.value + "' alone"},
                               {"predicted_seconds", r->prediction.makespan}});
            }
        }
    }
    return out;
}

// ---- the command -------------------------------------------------------------------------

// The dozen cases of --quick, every one required: a GEMM in each dtype, sharded
// and split-k forms, the normalizations, attention (the simple kernel and both
// tiled ones), a convolution, a broadcast, a fused chain, and examples sharded, by a
// baseline and fused.
const std::set<std::string> &quick_cases() {
    static const std::set<std::string> names = {
        "matmul.2d.f32",          "matmul.batched.bf16",        "linear.bias.f16",
        "linear.bias.f32.2dev-k", "matmul.2d.f32.2dev",         "softmax.last.f32",
        "layernorm.last.bf16",    "attention.causal-mask.f32",  "conv2d.pad.f32",
        "add.broadcast-row.f32",  "fused.matmul-bias-gelu.f32", "mlp_bf16.2dev.dp",
        "attention.2dev.tp",      "convnet.1dev.fuse",          "attention.tiled-64-causal.bf16.2dev-rows",
        "attention.tiled-128-mask.f16"};
    return names;
}

// An empty folder to write the pack into: a new one, or an earlier pack's, emptied.
std::string prepare_root(const fs::path &root) {
    std::error_code ec;
    if (fs::exists(root, ec) && !fs::is_empty(root, ec)) {
        const std::string manifest = read_bytes(root / "manifest.json");
        if (manifest.find("\"tapestry-gpu-pack\"") == std::string::npos)
            return root.string() + ": exists and holds no pack; give an empty or new folder";
        for (const char *part : {"manifest.json", "cases", "bench"}) fs::remove_all(root / part, ec);
    }
    fs::create_directories(root, ec);
    return ec ? root.string() + ": " + ec.message() : "";
}

std::int64_t folder_bytes(const fs::path &root, int &files) {
    std::int64_t bytes = 0;
    files = 0;
    for (const fs::directory_entry &e : fs::recursive_directory_iterator(root))
        if (e.is_regular_file()) {
            bytes += static_cast<std::int64_t>(e.file_size());
            ++files;
        }
    return bytes;
}

int make_pack(const fs::path &root, const fs::path &projects, bool quick, bool check_on_cpu) {
    std::error_code ec;
    if (!fs::is_directory(projects, ec)) {
        std::cerr << "tapestry-gpu-pack: " << projects.string()
                  << ": no such folder of example projects (--projects DIR)\n";
        return 1;
    }
    if (std::string e = prepare_root(root); !e.empty()) {
        std::cerr << "tapestry-gpu-pack: " << e << "\n";
        return 1;
    }
    auto target = cost::builtin_target(kTarget);
    if (!target) {
        std::cerr << "tapestry-gpu-pack: " << target.error() << "\n";
        return 1;
    }
    std::vector<Skipped> skipped;
    std::map<std::string, std::shared_ptr<const Graph>> benchmark_graphs;
    std::vector<CaseSpec> cases = kernel_cases(skipped);
    for (CaseSpec &c : example_cases(projects, skipped, benchmark_graphs)) cases.push_back(std::move(c));
    if (quick) std::erase_if(cases, [](const CaseSpec &c) { return !quick_cases().count(c.name); });

    PackWriter pack(root);
    std::map<std::string, SharedReference> shared;
    ordered_json manifest{{"format", "tapestry-gpu-pack"}, {"version", 1}, {"target", kTarget}, {"seed", kSeed}};
    manifest["cases"] = ordered_json::array();
    std::map<std::string, int> per_group;
    int cpu_failures = 0;
    for (const CaseSpec &c : cases) {
        auto entry = write_case(pack, shared, c, *target, check_on_cpu);
        if (!entry) {
            skip(skipped, c.name, entry.error());
            fs::remove_all(root / "cases" / c.name);
            continue;
        }
        ++per_group[c.group];
        if (check_on_cpu && (*entry)["cpu_check"] != "pass") {
            ++cpu_failures;
            std::cout << "cpu check " << c.name << ": " << (*entry)["cpu_check"].get<std::string>() << "\n";
        }
        (*entry)["quick"] = quick_cases().count(c.name) != 0;  // the subset a sanitizer run takes
        manifest["cases"].push_back(std::move(entry).value());
    }
    manifest["benchmarks"] = write_benchmarks(root, benchmark_graphs, *target, skipped);
    manifest["sizes"] = write_sizes(root, benchmark_graphs, *target, skipped);
    std::ofstream(root / "manifest.json") << manifest.dump(2) << "\n";

    int files = 0;
    const std::int64_t bytes = folder_bytes(root, files);
    std::printf(
        "pack %s: %zu cases (%d kernel, %d example), %zu benchmarks, %zu single ops of their sizes, %zu skipped; "
        "%d folders shared; %.1f MiB in %d files\n",
        root.string().c_str(), manifest["cases"].size(), per_group["kernel"], per_group["example"],
        manifest["benchmarks"].size(), manifest["sizes"].size(), skipped.size(), pack.shared(),
        static_cast<double>(bytes) / (1 << 20), files);
    if (check_on_cpu)
        std::printf("cpu check: %zu of %zu cases launched on the cpu backend equal their packed reference\n",
                    manifest["cases"].size() - static_cast<size_t>(cpu_failures), manifest["cases"].size());
    if (quick && (manifest["cases"].size() != quick_cases().size() || cpu_failures > 0)) {
        std::cerr << "tapestry-gpu-pack: --quick packs " << manifest["cases"].size() << " of its "
                  << quick_cases().size() << " cases, " << cpu_failures
                  << " failing the cpu check: each must plan, run and pass\n";
        return 1;
    }
    if (bytes > kPackLimitBytes) {
        std::cerr << "tapestry-gpu-pack: the pack exceeds " << (kPackLimitBytes >> 20) << " MiB\n";
        return 1;
    }
    return 0;
}

}  // namespace
}  // namespace tapestry

int main(int argc, char **argv) {
    std::string out, projects = TAPESTRY_PROJECTS_DIR;
    bool quick = false, check_on_cpu = true, usage = argc < 2;
    for (int i = 1; i < argc && !usage; ++i) {
        const std::string a = argv[i];
        if (a == "--quick")
            quick = true;
        else if (a == "--no-cpu-check")
            check_on_cpu = false;
        else if (a == "--projects" && i + 1 < argc)
            projects = argv[++i];
        else if (!a.empty() && a[0] != '-' && out.empty())
            out = a;
        else
            usage = true;
    }
    if (usage || out.empty()) {
        std::cerr << "usage: tapestry-gpu-pack OUT_DIR [--quick] [--no-cpu-check] [--projects DIR]\n"
                     "Writes the GPU test pack (manifest.json, cases/, bench/) that tapestry-gpu-check runs.\n"
                     "  --quick         a dozen cases, each required to plan and pass the cpu check\n"
                     "  --no-cpu-check  do not launch each case on the cpu backend against its packed reference\n";
        return 2;
    }
    try {
        return tapestry::make_pack(out, projects, quick, check_on_cpu);
    } catch (const std::exception &e) {  // a file system error: a full disk, a folder we may not write
        std::cerr << "tapestry-gpu-pack: " << e.what() << "\n";
        return 1;
    }
}
