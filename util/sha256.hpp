#pragma once
// Streaming SHA-256 over OpenSSL EVP.
#include <memory>
#include <string>
#include <string_view>
#include <filesystem>

#include "util/error.hpp"

struct evp_md_ctx_st;

namespace envfix::util {

class Sha256 {
public:
  Sha256();
  Sha256(Sha256&&) noexcept;
  Sha256& operator=(Sha256&&) noexcept;
  ~Sha256();
  void update(std::string_view bytes);
  void update(const void* data, std::size_t size) { update({static_cast<const char*>(data), size}); }
  // Lower-case hex digest; the object is reset afterwards.
  [[nodiscard]] std::string hex_digest();
  [[nodiscard]] std::string raw_digest(); // 32 raw bytes
private:
  struct Deleter {
    void operator()(evp_md_ctx_st* c) const;
  };
  std::unique_ptr<evp_md_ctx_st, Deleter> m_ctx;
};

[[nodiscard]] std::string sha256_hex(std::string_view bytes);
[[nodiscard]] Expected<std::string> sha256_file_hex(const std::filesystem::path& path);
// RECORD uses urlsafe base64 without padding.
[[nodiscard]] std::string base64url_nopad(std::string_view raw);
[[nodiscard]] Expected<std::string> base64url_decode(std::string_view text);
[[nodiscard]] std::string to_hex(std::string_view raw);
// HMAC-SHA256 of `data` under `key`, lower-case hex (RFC 2104).
[[nodiscard]] std::string hmac_sha256_hex(std::string_view key, std::string_view data);
// Equal texts, compared in time that does not depend on where they differ (a MAC check).
[[nodiscard]] bool equal_in_constant_time(std::string_view a, std::string_view b);

} // namespace envfix::util
