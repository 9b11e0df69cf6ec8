#pragma once
// Small string helpers shared by the probe parsers (string_views into the caller's text).
#include <string>
#include <string_view>
#include <vector>

namespace envfix::probe {

[[nodiscard]] std::string_view trim(std::string_view s);
// Lines without their terminator ("\n" or "\r\n"); a final line without a newline is kept.
[[nodiscard]] std::vector<std::string_view> split_lines(std::string_view text);
[[nodiscard]] std::vector<std::string_view> split(std::string_view s, char sep);
[[nodiscard]] std::vector<std::string_view> split_ws(std::string_view s);
[[nodiscard]] std::string to_lower(std::string_view s);

} // namespace envfix::probe
