#include "util/strings.hpp"

#include <cctype>

namespace envfix::util {

std::vector<std::string> split(std::string_view s, char sep) {
  std::vector<std::string> out;
  for (std::size_t i = 0, j; i <= s.size(); i = j + 1) {
    j = s.find(sep, i);
    if (j == std::string_view::npos) j = s.size();
    if (j > i) out.emplace_back(s.substr(i, j - i));
  }
  return out;
}

std::string join(const std::vector<std::string>& parts, std::string_view sep) {
  std::string out;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (i) out += sep;
    out += parts[i];
  }
  return out;
}

int compare_dotted_numbers(std::string_view a, std::string_view b) {
  auto next = [](std::string_view& s) -> unsigned long long {
    unsigned long long v = 0;
    while (!s.empty() && s.front() != '.') {
      if (std::isdigit(static_cast<unsigned char>(s.front()))) v = v * 10 + static_cast<unsigned>(s.front() - '0');
      s.remove_prefix(1);
      if (v > 1'000'000'000ULL) v = 1'000'000'000ULL; // saturate absurd inputs
    }
    if (!s.empty()) s.remove_prefix(1);
    return v;
  };
  while (!a.empty() || !b.empty()) {
    auto x = next(a), y = next(b);
    if (x != y) return x < y ? -1 : 1;
  }
  return 0;
}

} // namespace envfix::util
