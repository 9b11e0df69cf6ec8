#include "util/url.hpp"

#include <utility>

namespace envfix::util {
namespace {

// Index of the ':' ending "scheme:" or npos (RFC 3986 §3.1: ALPHA *( ALPHA / DIGIT / "+" / "-" / "." )).
std::size_t scheme_end(std::string_view url) {
  for (std::size_t i = 0; i < url.size(); ++i) {
    char c = url[i];
    if (c == ':') return i == 0 ? std::string_view::npos : i;
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
              (i > 0 && ((c >= '0' && c <= '9') || c == '+' || c == '-' || c == '.'));
    if (!ok) return std::string_view::npos;
  }
  return std::string_view::npos;
}

// [begin, end) of "user:pass@" inside the authority, or {npos, 0}.
std::pair<std::size_t, std::size_t> userinfo_span(std::string_view url) {
  std::size_t se = scheme_end(url);
  if (se == std::string_view::npos || url.substr(se, 3) != "://") return {std::string_view::npos, 0};
  std::size_t a = se + 3;
  std::size_t end = url.find_first_of("/?#", a);
  if (end == std::string_view::npos) end = url.size();
  std::size_t at = url.substr(a, end - a).rfind('@');
  if (at == std::string_view::npos) return {std::string_view::npos, 0};
  return {a, a + at + 1};
}

} // namespace

std::string strip_credentials(std::string_view url) {
  auto [b, e] = userinfo_span(url);
  if (b == std::string_view::npos) return std::string(url);
  return std::string(url.substr(0, b)) + std::string(url.substr(e));
}

std::string redact_url(std::string_view url) {
  auto [b, e] = userinfo_span(url);
  if (b == std::string_view::npos) return std::string(url);
  return std::string(url.substr(0, b)) + "***@" + std::string(url.substr(e));
}

} // namespace envfix::util
