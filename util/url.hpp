#pragma once
// Credentials in URLs (RFC 3986 §3.2.1 userinfo): lockfiles, cache keys, logs and errors never
// carry them. The one implementation: index/ and lockfile/ both use it.
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace envfix::util {

// The URL without "user:password@" in its authority (which ends at the first '/', '?' or '#'
// after "scheme://"); other text, and URLs without an authority, unchanged.
[[nodiscard]] std::string strip_credentials(std::string_view url);
// The scheme, lower-cased ("HTTPS://h/" → "https"); "" when the URL has none.
[[nodiscard]] std::string url_scheme(std::string_view url);
// The same with the userinfo replaced by "***@", for messages that must show that there was one.
[[nodiscard]] std::string redact_url(std::string_view url);
// True when any URL in `text` (a value may list several, space-separated, as PIP_EXTRA_INDEX_URL does)
// has a userinfo ("user:token@") in its authority.
[[nodiscard]] bool has_url_credentials(std::string_view text);
// Removes from a child's environment every variable whose value carries URL credentials
// (ENVFIX_MIRROR, PIP_INDEX_URL, UV_DEFAULT_INDEX, … with "user:token@"): the code envfix runs in the
// target (smoke test, verify --app) needs none of them.
void drop_index_credentials(std::map<std::string, std::string>& env);

// The path segments of a URL, without its query or fragment ("https://h/packages/stable/cu130/" ->
// packages, stable, cu130).
[[nodiscard]] std::vector<std::string> url_path_segments(std::string_view url);
// The same URL but for trailing slashes ("https://h/simple/" and "https://h/simple").
[[nodiscard]] bool same_url(std::string_view a, std::string_view b);

} // namespace envfix::util
