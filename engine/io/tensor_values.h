// Tensor values beside a project: parameters whose `data` names a .npy file are
// loaded from the project's folder; large values are saved the same way. Small
// values may be embedded in the project file itself (docs/formats.md).
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "common/expected.h"
#include "graph/graph.h"
#include "graph/issue.h"

namespace tapestry {

// Where a tensor's `data` may point. A project file from someone else must not
// pull arbitrary files (/proc/self/environ, ../../secrets.npy) into a run or a
// session that gets shared: by default `data` resolves inside the project's
// folder — no absolute path, no '..' that leaves it, no symbolic link out of it.
struct DataPathPolicy {
    bool allow_outside = false;  // the user opted in (--allow-outside-data, the studio's confirmation)
};

// The file `data` names for a project in `project_dir`, or why the policy refuses
// it ("is outside the project's folder …").
Expected<std::filesystem::path, std::string> resolve_data_path(const std::filesystem::path &project_dir,
                                                               const std::string &data, const DataPathPolicy &policy);

// The `data` paths of `g` that resolve outside `project_dir`: what the studio
// asks about before it reads them.
std::vector<std::string> data_paths_outside(const Graph &g, const std::filesystem::path &project_dir);

// Loads the .npy file of every tensor with `data` and no `value`, relative to
// `project_dir` (under `policy`), checking dtype and shape against the tensor.
// Issues name the tensor, the file and the JSON path ($.tensors[i].data); a path
// the policy refuses is the issue "data-outside-project".
std::vector<Issue> load_tensor_values(Graph &g, const std::filesystem::path &project_dir,
                                      const DataPathPolicy &policy = {});

// Saves the project to `path`; values with more than `embed_limit` elements go to
// `<stem>.data/<tensor id>.npy` beside it (their `data` set accordingly), smaller
// ones are embedded. Returns an error message or "".
std::string save_project_with_values(const Graph &g, const std::filesystem::path &path, std::int64_t embed_limit = 64);

// Input values from a directory of .npy files named after the tensors (the run
// I/O convention: one file per tensor, `<name>.npy`); missing inputs are reported.
Expected<std::map<TensorId, TensorData>, std::string> read_inputs_dir(const Graph &g, const std::filesystem::path &dir);
// Writes every tensor of `values` as `<name>.npy` into `dir` (created if needed).
std::string write_outputs_dir(const Graph &g, const std::map<TensorId, TensorData> &values,
                              const std::filesystem::path &dir);

}  // namespace tapestry
