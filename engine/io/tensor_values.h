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

// Loads the .npy file of every tensor with `data` and no `value`, relative to
// `project_dir`, checking dtype and shape against the tensor. Issues name the
// tensor, the file and the JSON path ($.tensors[i].data).
std::vector<Issue> load_tensor_values(Graph &g, const std::filesystem::path &project_dir);

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
