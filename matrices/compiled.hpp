#pragma once
// The knowledge in a form read without a YAML parser. The build loads and validates
// matrices/data/*.yaml once (matrices/compile.cpp) and embeds the result as JSON;
// Knowledge::load_embedded() reads that back. yaml-cpp's scanner took ~70% of the instructions of
// loading the knowledge, ~20 ms of every run on the GPU machine (docs/performance-real.md). An
// override directory (--matrices) still goes through the YAML loader, with its line numbers.
#include <string>
#include <string_view>

#include "matrices/knowledge.hpp"
#include "util/error.hpp"

namespace envfix::matrices {

[[nodiscard]] std::string knowledge_to_json(const Knowledge& k);
// Error names the input and what broke; the data is not validated again (the build did that).
[[nodiscard]] Expected<Knowledge> knowledge_from_json(std::string_view json);

} // namespace envfix::matrices
