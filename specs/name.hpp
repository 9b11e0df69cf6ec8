#pragma once
// PEP 503 project names (normalization and validity: the name normalization spec,
// https://packaging.python.org/en/latest/specifications/name-normalization/).
#include <string>
#include <string_view>

namespace envfix::specs {

// lowercase(re.sub(r"[-_.]+", "-", name)): "Foo.Bar_baz" → "foo-bar-baz".
std::string normalize_name(std::string_view name);

// ^([A-Z0-9]|[A-Z0-9][A-Z0-9._-]*[A-Z0-9])$, case-insensitive.
bool is_valid_project_name(std::string_view name);

} // namespace envfix::specs
