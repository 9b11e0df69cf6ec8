#include "util/sha256.hpp"

#include <openssl/evp.h>

#include "util/fs.hpp"

namespace envfix::util {

void Sha256::Deleter::operator()(evp_md_ctx_st* c) const { EVP_MD_CTX_free(c); }

Sha256::Sha256() : m_ctx(EVP_MD_CTX_new()) { EVP_DigestInit_ex(m_ctx.get(), EVP_sha256(), nullptr); }
Sha256::Sha256(Sha256&&) noexcept = default;
Sha256& Sha256::operator=(Sha256&&) noexcept = default;
Sha256::~Sha256() = default;

void Sha256::update(std::string_view bytes) { EVP_DigestUpdate(m_ctx.get(), bytes.data(), bytes.size()); }

std::string Sha256::raw_digest() {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_DigestFinal_ex(m_ctx.get(), md, &len);
  EVP_DigestInit_ex(m_ctx.get(), EVP_sha256(), nullptr);
  return std::string(reinterpret_cast<char*>(md), len);
}

std::string Sha256::hex_digest() { return to_hex(raw_digest()); }

std::string to_hex(std::string_view raw) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  out.reserve(raw.size() * 2);
  for (unsigned char c : raw) {
    out.push_back(digits[c >> 4]);
    out.push_back(digits[c & 15]);
  }
  return out;
}

std::string sha256_hex(std::string_view bytes) {
  Sha256 h;
  h.update(bytes);
  return h.hex_digest();
}

Expected<std::string> sha256_file_hex(const std::filesystem::path& path) {
  auto m = MappedFile::open(path);
  if (!m) return std::unexpected(std::move(m).error());
  return sha256_hex(m->view());
}

std::string base64url_nopad(std::string_view raw) {
  static const char* tbl = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  std::string out;
  std::size_t i = 0;
  auto b = [&](std::size_t k) { return static_cast<unsigned char>(raw[k]); };
  for (; i + 2 < raw.size(); i += 3) {
    unsigned v = (b(i) << 16) | (b(i + 1) << 8) | b(i + 2);
    out += tbl[(v >> 18) & 63]; out += tbl[(v >> 12) & 63]; out += tbl[(v >> 6) & 63]; out += tbl[v & 63];
  }
  if (raw.size() - i == 1) {
    unsigned v = b(i) << 16;
    out += tbl[(v >> 18) & 63]; out += tbl[(v >> 12) & 63];
  } else if (raw.size() - i == 2) {
    unsigned v = (b(i) << 16) | (b(i + 1) << 8);
    out += tbl[(v >> 18) & 63]; out += tbl[(v >> 12) & 63]; out += tbl[(v >> 6) & 63];
  }
  return out;
}

Expected<std::string> base64url_decode(std::string_view text) {
  auto val = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '-' || c == '+') return 62;
    if (c == '_' || c == '/') return 63;
    return -1;
  };
  while (!text.empty() && text.back() == '=') text.remove_suffix(1);
  std::string out;
  unsigned acc = 0;
  int bits = 0;
  for (char c : text) {
    int v = val(c);
    if (v < 0) return fail(ErrorCode::invalid_input, "invalid base64 character '{}' in '{}'", c, text);
    acc = (acc << 6) | static_cast<unsigned>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xff));
    }
  }
  return out;
}

} // namespace envfix::util
