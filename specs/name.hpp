#pragma once
// PEP 503 project names (packaging.md R1.1, R1.2).
#include <string>
#include <string_view>

namespace envfix::specs {

// lowercase(re.sub(r"[-_.]+", "-", name)): "Foo.Bar_baz" → "foo-bar-baz".
std::string normalize_name(std::string_view name);

// ^([A-Z0-9]|[A-Z0-9][A-Z0-9._-]*[A-Z0-9])$, case-insensitive.
bool is_valid_project_name(std::string_view name);

} // namespace envfix::specs
