#pragma once
// Small string helpers every module needs, once (instead of a copy per file).
#include <string>
#include <string_view>
#include <vector>

namespace envfix::util {

// ASCII lower case ("Name" → "name"); other bytes unchanged (names, tags, header keys are ASCII).
[[nodiscard]] std::string lower(std::string_view s);
// ASCII case-insensitive equality.
[[nodiscard]] bool iequals(std::string_view a, std::string_view b);
// ASCII whitespace: space, \t, \r, \n, \f, \v (PEP 508's, and Python's str.isspace() on ASCII).
[[nodiscard]] bool is_space(char c);
// Without leading and trailing ASCII whitespace.
[[nodiscard]] std::string_view trim(std::string_view s);

// "a,,b," split at ',' → {"a", "b"}: empty parts are dropped.
[[nodiscard]] std::vector<std::string> split(std::string_view s, char sep);
// {"a", "b"} joined with ", " → "a, b".
[[nodiscard]] std::string join(const std::vector<std::string>& parts, std::string_view sep);

// A word as a POSIX shell reads it back: unchanged when it holds nothing the shell would expand or
// split, else in single quotes (a ' inside becomes '\'').
[[nodiscard]] std::string shell_quote(std::string_view word);

// Numeric comparison of dotted versions ("570.26" < "570.124.06"; driver versions); missing parts
// count as 0, non-digits are skipped. -1, 0 or 1.
[[nodiscard]] int compare_dotted_numbers(std::string_view a, std::string_view b);

} // namespace envfix::util
