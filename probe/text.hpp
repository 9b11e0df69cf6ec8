#pragma once
// Small string helpers shared by the probe parsers (string_views into the caller's text); trim and
// lower are util/strings.hpp's.
#include <string>
#include <string_view>
#include <vector>

#include "util/strings.hpp"

namespace envfix::probe {

using util::trim;
// Lines without their terminator ("\n" or "\r\n"); a final line without a newline is kept.
[[nodiscard]] std::vector<std::string_view> split_lines(std::string_view text);
// Every part, empty ones too ("a,,b" → "a", "", "b"); util::split drops them.
[[nodiscard]] std::vector<std::string_view> split(std::string_view s, char sep);
[[nodiscard]] std::vector<std::string_view> split_ws(std::string_view s);

} // namespace envfix::probe
