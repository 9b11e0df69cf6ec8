#pragma once
// URL helpers for index pages: RFC 3986 resolution (via libcurl's URL API), percent-decoding,
// credential redaction. Credentials never leave memory: every message and cache key uses redact_url
// or strip_credentials.
#include <optional>
#include <string>
#include <string_view>

#include "util/error.hpp"

namespace envfix::index {

// Resolve `ref` (absolute, root-relative or relative) against `base` (RFC 3986).
[[nodiscard]] Expected<std::string> resolve_url(std::string_view base, std::string_view ref);
// resolve_url against one base for many refs (a torch page has tens of thousands of anchors):
// the base is parsed once, and a plain root-relative ref ("/whl/cu130/torch-…whl#sha256=…", what
// download.pytorch.org and PyPI-shaped servers write) is joined to the base's origin without a
// parse; any other ref goes through resolve_url. Same result as resolve_url for every ref
// (tests/index/test_url.cpp compares them).
class UrlResolver {
public:
  explicit UrlResolver(std::string base);
  [[nodiscard]] Expected<std::string> resolve(std::string_view ref) const;

private:
  std::string m_base;
  std::optional<std::string> m_origin; // "https://host:port" as resolve_url writes it; none: no fast path
};
// Lower-case scheme of an absolute URL ("https"), or "" when there is none.
[[nodiscard]] std::string url_scheme(std::string_view url);
// "%2B" -> "+"; invalid escapes are kept literally.
[[nodiscard]] std::string percent_decode(std::string_view s);
// Percent-encode characters that are not unreserved or '/' (for building file:// URLs).
[[nodiscard]] std::string percent_encode_path(std::string_view s);
// The URL without user:password@ (used for cache keys and index_url fields).
[[nodiscard]] std::string strip_credentials(std::string_view url);
// Split "url#fragment" -> {url, fragment}; the fragment excludes '#'.
struct UrlAndFragment {
  std::string url;
  std::string fragment;
};
[[nodiscard]] UrlAndFragment split_fragment(std::string_view url);
// Last path segment of a URL (query and fragment dropped), percent-decoded.
[[nodiscard]] std::string url_filename(std::string_view url);
// "file:///a/b%20c/" -> "/a/b c/"; nullopt when not a file URL.
[[nodiscard]] std::optional<std::string> file_url_to_path(std::string_view url);
[[nodiscard]] std::string path_to_file_url(std::string_view absolute_path);
// PEP 503 name normalization (same rule as specs::normalize_name; kept here so page parsing and its
// fuzz target have no other dependency).
[[nodiscard]] std::string normalize_project_name(std::string_view name);
// Project page URL: base with trailing slashes dropped + "/<normalized>/" (PEP 503: the trailing
// slash is required, relative hrefs resolve against it).
[[nodiscard]] std::string project_page_url(std::string_view index_url, std::string_view project);

} // namespace envfix::index
