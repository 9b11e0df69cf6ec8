#include "util/url.hpp"

#include <algorithm>
#include <cctype>
#include <utility>

#include "util/strings.hpp"

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

std::string url_scheme(std::string_view url) {
  std::size_t se = scheme_end(url);
  if (se == std::string_view::npos) return {};
  std::string s(url.substr(0, se));
  for (char& c : s)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return s;
}

std::string redact_url(std::string_view url) {
  auto [b, e] = userinfo_span(url);
  if (b == std::string_view::npos) return std::string(url);
  return std::string(url.substr(0, b)) + "***@" + std::string(url.substr(e));
}

bool has_url_credentials(std::string_view text) {
  // Every "scheme://" start, wherever it is: a value may be a list, or quote the URL.
  for (std::size_t pos = text.find("://"); pos != std::string_view::npos; pos = text.find("://", pos + 3)) {
    std::size_t start = pos; // back over the scheme's characters (RFC 3986 §3.1)
    while (start > 0 && (std::isalnum(static_cast<unsigned char>(text[start - 1])) || text[start - 1] == '+' ||
                         text[start - 1] == '-' || text[start - 1] == '.'))
      --start;
    while (start < pos && !std::isalpha(static_cast<unsigned char>(text[start]))) ++start; // a scheme starts with a letter
    std::string_view url = text.substr(start);
    url = url.substr(0, std::min(url.find_first_of(" \t\n\"',"), url.size()));
    if (userinfo_span(url).first != std::string_view::npos) return true;
  }
  return false;
}

void drop_index_credentials(std::map<std::string, std::string>& env) {
  std::erase_if(env, [](const auto& kv) { return has_url_credentials(kv.second); });
}

std::vector<std::string> url_path_segments(std::string_view url) {
  auto start = url.find("://");
  start = url.find('/', start == std::string_view::npos ? 0 : start + 3);
  if (start == std::string_view::npos) return {};
  auto path = url.substr(start);
  if (auto q = path.find_first_of("?#"); q != std::string_view::npos) path = path.substr(0, q);
  return split(path, '/');
}

bool same_url(std::string_view a, std::string_view b) {
  while (a.ends_with('/')) a.remove_suffix(1);
  while (b.ends_with('/')) b.remove_suffix(1);
  return a == b;
}

} // namespace envfix::util
