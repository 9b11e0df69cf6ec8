#pragma once
// Credentials in URLs (RFC 3986 §3.2.1 userinfo): lockfiles, cache keys, logs and errors never
// carry them. The one implementation: index/ and lockfile/ both use it.
#include <string>
#include <string_view>

namespace envfix::util {

// The URL without "user:password@" in its authority (which ends at the first '/', '?' or '#'
// after "scheme://"); other text, and URLs without an authority, unchanged.
[[nodiscard]] std::string strip_credentials(std::string_view url);
// The same with the userinfo replaced by "***@", for messages that must show that there was one.
[[nodiscard]] std::string redact_url(std::string_view url);

} // namespace envfix::util
