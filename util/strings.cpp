#include "util/strings.hpp"

#include <cctype>

namespace envfix::util {

namespace {
char lower_ascii(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }
} // namespace

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f' || c == '\v'; }

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = lower_ascii(c);
  return out;
}

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (lower_ascii(a[i]) != lower_ascii(b[i])) return false;
  return true;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

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

std::string shell_quote(std::string_view word) {
  if (!word.empty() && word.find_first_of(" \t\n'\"$`\\[]*?;&|<>(){}#~!") == std::string_view::npos) return std::string(word);
  std::string out = "'";
  for (char c : word) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

} // namespace envfix::util
