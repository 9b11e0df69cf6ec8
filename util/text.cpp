#include "util/text.hpp"

#include <fmt/format.h>

namespace envfix::util {

namespace {

// Length of the valid UTF-8 sequence at s[i], 0 when the bytes there are not one.
std::size_t utf8_length(std::string_view s, std::size_t i) {
  const auto c = static_cast<unsigned char>(s[i]);
  std::size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xe ? 3 : (c >> 3) == 0x1e ? 4 : 0;
  if (n == 0 || i + n > s.size()) return 0;
  for (std::size_t k = 1; k < n; ++k)
    if ((static_cast<unsigned char>(s[i + k]) & 0xc0) != 0x80) return 0;
  if (n == 2 && c < 0xc2) return 0; // overlong
  return n;
}

// Length of a colour sequence (ESC [ [0-9;]* m) at s[i], 0 when there is none.
std::size_t sgr_length(std::string_view s, std::size_t i) {
  if (s[i] != '\x1b' || i + 1 >= s.size() || s[i + 1] != '[') return 0;
  for (std::size_t j = i + 2; j < s.size(); ++j) {
    if (s[j] == 'm') return j - i + 1;
    if (!((s[j] >= '0' && s[j] <= '9') || s[j] == ';')) return 0;
  }
  return 0;
}

} // namespace

std::string escape_control(std::string_view s, bool keep_newlines, bool keep_sgr) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (keep_sgr) {
      if (std::size_t k = sgr_length(s, i)) {
        out.append(s.substr(i, k));
        i += k;
        continue;
      }
    }
    const std::size_t n = utf8_length(s, i);
    if (n == 0) {
      out += fmt::format("\\x{:02x}", c);
      ++i;
      continue;
    }
    if (n == 1) {
      if ((c < 0x20 && !(keep_newlines && (c == '\n' || c == '\t'))) || c == 0x7f)
        out += fmt::format("\\x{:02x}", c);
      else
        out += static_cast<char>(c);
    } else if (n == 2 && c == 0xc2 && static_cast<unsigned char>(s[i + 1]) < 0xa0) {
      // C1 controls: U+0080..U+009F (0x9b is a CSI on terminals that read 8-bit controls).
      out += fmt::format("\\u{:04x}", static_cast<unsigned char>(s[i + 1]));
    } else {
      out.append(s.substr(i, n));
    }
    i += n;
  }
  return out;
}

} // namespace envfix::util
