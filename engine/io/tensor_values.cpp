// Tensor values beside a project and in run directories (docs/formats.md, "Tensor
// values"). File names come from tensor ids and names, which may hold any
// character: they are mapped to portable file names here, in one place, so that
// what write_outputs_dir writes read_inputs_dir finds.
#include "io/tensor_values.h"

#include <algorithm>
#include <cctype>
#include <set>

#include "io/npy.h"
#include "io/project_file.h"

namespace tapestry {
namespace {

namespace fs = std::filesystem;

constexpr size_t kMaxFileStem = 100;

// A portable file stem: letters, digits, '-', '_' and '.' kept, anything else
// (a '/', a space, a ':') becomes '_'; no leading '.', never empty; at most
// kMaxFileStem characters.
std::string file_stem(std::string_view text) {
    std::string s;
    for (char c : text) {
        const bool keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
                          c == '_' || c == '.';
        s += keep ? c : '_';
    }
    if (s.empty() || s[0] == '.') s.insert(s.begin(), '_');
    if (s.size() > kMaxFileStem) s.resize(kMaxFileStem);
    return s;
}

std::string lower(std::string s) {
    for (char &c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
}

// Stems unique also on case-insensitive file systems: "w", "W" → "w", "W_2".
class UniqueStems {
public:
    std::string claim(const std::string &wanted) {
        std::string stem = wanted;
        for (int n = 2; !used_.insert(lower(stem)).second; ++n) stem = wanted + "_" + std::to_string(n);
        return stem;
    }

private:
    std::set<std::string> used_;
};

std::string describe(DType dtype, const ZPoint &shape) {
    return std::string(dtype_name(dtype)) + " " + shape.to_string();
}

// Makes a value read from a file fit a tensor of `dtype`: equal dtypes, or f32
// data for a bf16 tensor (NumPy has no bfloat16, so bf16 values are saved as f32;
// rounding to nearest even). f64 files were already narrowed to f32 by the
// reader when the tensor is f32. Returns "" or what does not match.
std::string fit_value(TensorData &value, DType dtype, const ZPoint &shape) {
    if (value.shape != shape || !(value.dtype == dtype || (value.dtype == DType::f32 && dtype == DType::bf16)))
        return "the tensor is " + describe(dtype, shape) + " but the file holds " + describe(value.dtype, value.shape);
    if (value.dtype != dtype) {
        TensorData converted(dtype, shape);
        for (std::int64_t i = 0; i < value.element_count(); ++i) converted.set(i, value.get(i));
        value = std::move(converted);
    }
    return "";
}

// Stems of a run directory: a tensor's name when no other tensor of the graph
// has the same file stem from its name, else its id (ids are unique); a clash
// that remains (ids "a/b" and "a_b") gets a numbered suffix, in graph order.
std::map<TensorId, std::string> run_file_stems(const Graph &g) {
    std::map<std::string, int> by_name;
    for (const TensorPtr &t : g.tensors()) ++by_name[lower(file_stem(t->name))];
    UniqueStems unique;
    std::map<TensorId, std::string> stems;
    for (const TensorPtr &t : g.tensors()) {
        const bool name_ok = by_name[lower(file_stem(t->name))] == 1;
        stems[t->id] = unique.claim(file_stem(name_ok ? t->name : t->id.value));
    }
    return stems;
}

}  // namespace

Expected<fs::path, std::string> resolve_data_path(const fs::path &project_dir, const std::string &data,
                                                  const DataPathPolicy &policy) {
    const fs::path named(data);
    const fs::path file = named.is_absolute() ? named : project_dir / named;
    if (policy.allow_outside) return file;
    auto refuse = [&](const std::string &why) {
        return unexpected("'" + data + "' is outside the project's folder (" + why +
                          "); give --allow-outside-data to read it anyway");
    };
    if (named.is_absolute()) return refuse("an absolute path");
    const fs::path lexical = named.lexically_normal();
    if (!lexical.empty() && *lexical.begin() == "..") return refuse("'..' leaves the folder");
    // Symbolic links: the file, resolved, must still lie under the folder, resolved.
    // Both made absolute first: weakly_canonical leaves a relative path whose
    // first component does not exist (a missing file) relative.
    std::error_code ec;
    const fs::path base = fs::weakly_canonical(fs::absolute(project_dir.empty() ? fs::path(".") : project_dir, ec), ec);
    const fs::path real = ec ? fs::path() : fs::weakly_canonical(fs::absolute(file, ec), ec);
    if (!ec) {
        const fs::path rel = real.lexically_relative(base);
        if (rel.empty() || *rel.begin() == "..") return refuse("a symbolic link leads out of it");
    }
    return file;
}

std::vector<std::string> data_paths_outside(const Graph &g, const fs::path &project_dir) {
    std::vector<std::string> out;
    for (const TensorPtr &t : g.tensors())
        if (t->data && !t->value && !resolve_data_path(project_dir, *t->data, DataPathPolicy{}))
            out.push_back(*t->data);
    return out;
}

std::vector<Issue> load_tensor_values(Graph &g, const fs::path &project_dir, const DataPathPolicy &policy) {
    std::vector<Issue> issues;
    const std::vector<TensorPtr> tensors = g.tensors();  // put_tensor replaces entries
    for (size_t i = 0; i < tensors.size(); ++i) {
        const Tensor &t = *tensors[i];
        if (!t.data || t.value) continue;
        const std::string json_path = "$.tensors[" + std::to_string(i) + "].data";
        auto report = [&](const char *code, const std::string &why) {
            Issue issue;
            issue.code = code;
            issue.node = t.id.value;
            issue.json_path = json_path;
            issue.message = json_path + ": tensor \"" + t.id.value + "\": " + why;
            issues.push_back(std::move(issue));
        };
        const auto resolved = resolve_data_path(project_dir, *t.data, policy);
        if (!resolved) {
            report("data-outside-project", resolved.error());
            continue;
        }
        const fs::path &file = *resolved;
        auto value = read_npy(file, t.dtype == DType::f32);
        if (!value) {
            report("tensor-data", value.error());
            continue;
        }
        if (std::string why = fit_value(*value, t.dtype, t.shape()); !why.empty()) {
            report("tensor-data-mismatch", file.string() + ": " + why);
            continue;
        }
        Tensor loaded = t;
        loaded.value = std::make_shared<const TensorData>(std::move(*value));
        g.put_tensor(std::move(loaded));
    }
    return issues;
}

std::string save_project_with_values(const Graph &g, const fs::path &path, std::int64_t embed_limit) {
    try {
        // "mlp.tapestry.json" → "mlp.data"; "net.json" → "net.data".
        std::string stem = path.filename().string();
        for (std::string_view suffix : {".json", ".tapestry"})
            if (stem.size() > suffix.size() && stem.ends_with(suffix)) stem.resize(stem.size() - suffix.size());
        const std::string data_dir_name = stem + ".data";
        const fs::path data_dir = path.parent_path() / data_dir_name;

        Graph out = g;
        UniqueStems unique;
        bool made_dir = false;
        for (const TensorPtr &t : g.tensors()) {
            if (!t->value) continue;
            Tensor changed = *t;
            if (t->value->element_count() > embed_limit) {
                if (!made_dir) {
                    std::error_code ec;
                    fs::create_directories(data_dir, ec);
                    if (ec) return path.string() + ": cannot create " + data_dir.string() + ": " + ec.message();
                    made_dir = true;
                }
                const std::string file = unique.claim(file_stem(t->id.value)) + ".npy";
                if (std::string error = write_npy(*t->value, data_dir / file); !error.empty()) return error;
                changed.data = data_dir_name + "/" + file;
            } else {
                changed.data.reset();  // serialize_project embeds a value that has no file
            }
            if (changed != *t) out.put_tensor(std::move(changed));
        }
        return save_project(out, path);
    } catch (const std::exception &e) {
        return path.string() + ": cannot save: " + e.what();
    }
}

Expected<std::map<TensorId, TensorData>, std::string> read_inputs_dir(const Graph &g, const fs::path &dir) {
    try {
        std::error_code ec;
        if (!fs::is_directory(dir, ec)) return unexpected(dir.string() + ": is not a directory");
        const std::map<TensorId, std::string> stems = run_file_stems(g);
        std::map<TensorId, TensorData> values;
        std::vector<std::string> missing, problems;
        for (const TensorPtr &t : g.tensors()) {
            // Inputs must be there; a parameter without a value may be.
            const bool required = t->role == TensorRole::input;
            if (!required && !(t->role == TensorRole::parameter && !t->value)) continue;
            fs::path file = dir / (stems.at(t->id) + ".npy");
            if (!fs::exists(file, ec)) file = dir / (file_stem(t->id.value) + ".npy");
            if (!fs::exists(file, ec)) {
                if (required) missing.push_back("\"" + t->name + "\" (" + stems.at(t->id) + ".npy)");
                continue;
            }
            auto value = read_npy(file, t->dtype == DType::f32);
            if (!value) {
                problems.push_back(value.error());
                continue;
            }
            if (std::string why = fit_value(*value, t->dtype, t->shape()); !why.empty()) {
                problems.push_back(file.string() + ": tensor \"" + t->name + "\": " + why);
                continue;
            }
            values.emplace(t->id, std::move(*value));
        }
        std::string error;
        if (!missing.empty()) {
            error = dir.string() + ": missing input" + (missing.size() > 1 ? "s " : " ");
            for (size_t i = 0; i < missing.size(); ++i) error += (i ? ", " : "") + missing[i];
        }
        for (const std::string &p : problems) error += (error.empty() ? "" : "\n") + p;
        if (!error.empty()) return unexpected(std::move(error));
        return values;
    } catch (const std::exception &e) {
        return unexpected(dir.string() + ": cannot read inputs: " + e.what());
    }
}

std::string write_outputs_dir(const Graph &g, const std::map<TensorId, TensorData> &values, const fs::path &dir) {
    try {
        std::error_code ec;
        fs::create_directories(dir, ec);
        if (ec) return dir.string() + ": cannot create the directory: " + ec.message();
        std::map<TensorId, std::string> stems = run_file_stems(g);
        // Values of tensors the graph does not have are written under their ids,
        // after every graph tensor has its stem.
        std::set<std::string> used;
        for (const auto &[id, stem] : stems) used.insert(lower(stem));
        for (const auto &[id, value] : values) {
            auto it = stems.find(id);
            std::string stem;
            if (it != stems.end()) {
                stem = it->second;
            } else {
                stem = file_stem(id.value);
                for (int n = 2; !used.insert(lower(stem)).second; ++n)
                    stem = file_stem(id.value) + "_" + std::to_string(n);
            }
            if (std::string error = write_npy(value, dir / (stem + ".npy")); !error.empty()) return error;
        }
        return "";
    } catch (const std::exception &e) {
        return dir.string() + ": cannot write outputs: " + e.what();
    }
}

}  // namespace tapestry
