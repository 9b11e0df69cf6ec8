#include "index/url.hpp"

#include <curl/curl.h>

#include <memory>

#include "index/candidate.hpp"
#include "util/url.hpp"

namespace envfix::index {

namespace {
struct UrlDeleter {
  void operator()(CURLU* u) const { curl_url_cleanup(u); }
};
using UrlPtr = std::unique_ptr<CURLU, UrlDeleter>;

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

} // namespace

// One implementation of userinfo removal for every module (util/url.hpp).
std::string redact_url(std::string_view url) { return util::redact_url(url); }

std::string strip_credentials(std::string_view url) { return util::strip_credentials(url); }

std::string url_scheme(std::string_view url) { return util::url_scheme(url); }

Expected<std::string> resolve_url(std::string_view base, std::string_view ref) {
  UrlPtr u(curl_url());
  if (!u) return fail(ErrorCode::internal, "out of memory");
  std::string b(base), r(ref);
  // Schemes other than the ones we fetch are refused later; let curl parse them anyway.
  unsigned flags = CURLU_NON_SUPPORT_SCHEME | CURLU_PATH_AS_IS;
  if (auto rc = curl_url_set(u.get(), CURLUPART_URL, b.c_str(), flags); rc != CURLUE_OK)
    return fail(ErrorCode::invalid_input, "invalid base URL {}: {}", redact_url(base), curl_url_strerror(rc));
  if (auto rc = curl_url_set(u.get(), CURLUPART_URL, r.c_str(), flags); rc != CURLUE_OK)
    return fail(ErrorCode::invalid_input, "invalid URL {:?} relative to {}: {}", redact_url(ref), redact_url(base),
                curl_url_strerror(rc));
  char* out = nullptr;
  if (auto rc = curl_url_get(u.get(), CURLUPART_URL, &out, 0); rc != CURLUE_OK)
    return fail(ErrorCode::invalid_input, "invalid URL {:?}: {}", redact_url(ref), curl_url_strerror(rc));
  std::string result(out);
  curl_free(out);
  return result;
}

namespace {
// A root-relative ref that resolution leaves as it is: one leading '/', no dot segment, no
// backslash, at most one '#', only characters RFC 3986 allows unescaped, every '%' an escape.
bool plain_root_relative(std::string_view ref) {
  if (ref.size() < 1 || ref[0] != '/' || (ref.size() > 1 && ref[1] == '/')) return false;
  if (ref.find("/.") != std::string_view::npos) return false;
  int hashes = 0;
  for (std::size_t i = 0; i < ref.size(); ++i) {
    const char c = ref[i];
    const bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    if (alnum || std::string_view("-._~!$&'()*+,;=:@/?").find(c) != std::string_view::npos) continue;
    if (c == '#' && ++hashes == 1) continue;
    if (c == '%' && i + 2 < ref.size() && hex_value(ref[i + 1]) >= 0 && hex_value(ref[i + 2]) >= 0) {
      i += 2;
      continue;
    }
    return false;
  }
  return true;
}
} // namespace

UrlResolver::UrlResolver(std::string base) : m_base(std::move(base)) {
  // The origin as curl writes it (scheme and host case, default port): resolve "/" once.
  if (auto root = resolve_url(m_base, "/");
      root && root->ends_with('/') && root->find('?') == std::string::npos && root->find('#') == std::string::npos)
    m_origin = root->substr(0, root->size() - 1);
}

Expected<std::string> UrlResolver::resolve(std::string_view ref) const {
  if (m_origin && plain_root_relative(ref)) return *m_origin + std::string(ref);
  return resolve_url(m_base, ref);
}

std::string percent_decode(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size()) {
      int h = hex_value(s[i + 1]), l = hex_value(s[i + 2]);
      if (h >= 0 && l >= 0) {
        out.push_back(static_cast<char>(h * 16 + l));
        i += 2;
        continue;
      }
    }
    out.push_back(s[i]);
  }
  return out;
}

std::string percent_encode_path(std::string_view s) {
  static constexpr char hex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.' ||
        c == '~' || c == '/') {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(hex[c >> 4]);
      out.push_back(hex[c & 15]);
    }
  }
  return out;
}

UrlAndFragment split_fragment(std::string_view url) {
  std::size_t h = url.find('#');
  if (h == std::string_view::npos) return {std::string(url), {}};
  return {std::string(url.substr(0, h)), std::string(url.substr(h + 1))};
}

std::string url_filename(std::string_view url) {
  std::size_t end = url.find_first_of("?#");
  if (end != std::string_view::npos) url = url.substr(0, end);
  std::size_t slash = url.rfind('/');
  if (slash != std::string_view::npos) url = url.substr(slash + 1);
  return percent_decode(url);
}

std::optional<std::string> file_url_to_path(std::string_view url) {
  if (url_scheme(url) != "file") return std::nullopt;
  std::string_view rest = url.substr(5);
  if (rest.starts_with("//")) {
    rest.remove_prefix(2);
    std::size_t slash = rest.find('/');
    std::string_view host = rest.substr(0, slash);
    if (!host.empty() && host != "localhost") return std::nullopt;
    rest = slash == std::string_view::npos ? std::string_view("/") : rest.substr(slash);
  }
  std::size_t end = rest.find_first_of("?#");
  if (end != std::string_view::npos) rest = rest.substr(0, end);
  return percent_decode(rest);
}

std::string path_to_file_url(std::string_view absolute_path) { return "file://" + percent_encode_path(absolute_path); }

std::string normalize_project_name(std::string_view name) {
  std::string out;
  bool sep = false;
  for (char c : name) {
    if (c == '-' || c == '_' || c == '.') {
      sep = true;
      continue;
    }
    if (sep && !out.empty()) out.push_back('-');
    sep = false;
    out.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  }
  return out;
}

std::string project_page_url(std::string_view index_url, std::string_view project) {
  std::string base(index_url);
  while (!base.empty() && base.back() == '/') base.pop_back();
  return base + "/" + normalize_project_name(project) + "/";
}

} // namespace envfix::index
