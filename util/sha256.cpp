#include "util/sha256.hpp"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

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

std::string hmac_sha256_hex(std::string_view key, std::string_view data) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()), reinterpret_cast<const unsigned char*>(data.data()), data.size(),
       md, &len);
  return to_hex({reinterpret_cast<const char*>(md), len});
}

bool equal_in_constant_time(std::string_view a, std::string_view b) {
  return a.size() == b.size() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

std::string sha256_hex(std::string_view bytes) {
  Sha256 h;
  h.update(bytes);
  return h.hex_digest();
}

// read() into one fixed buffer, not mmap: mapped pages stay resident until unmapped, so hashing
// a 4 GB wheel would raise the peak RSS by 4 GB.
Expected<std::string> sha256_file_hex(const std::filesystem::path& path) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  auto io_error = [&](std::string_view what, int err) {
    return with_errno(make_error(ErrorCode::io, util::msg("{} {}: {}", what, path.string(), std::strerror(err))), err);
  };
  if (!fd.valid()) return io_error("cannot open", errno);
  struct stat st = {};
  if (::fstat(fd.get(), &st) != 0) return io_error("cannot stat", errno);
  if (!S_ISREG(st.st_mode)) return make_error(ErrorCode::invalid_input, util::msg("{} is not a regular file", path.string()));
  ::posix_fadvise(fd.get(), 0, 0, POSIX_FADV_SEQUENTIAL);
  constexpr std::size_t buf_size = std::size_t{1} << 20;
  auto buf = std::make_unique_for_overwrite<char[]>(buf_size);
  Sha256 h;
  for (;;) {
    ssize_t n = retry_eintr([&] { return ::read(fd.get(), buf.get(), buf_size); });
    if (n < 0) return io_error("cannot read", errno);
    if (n == 0) break;
    h.update(buf.get(), static_cast<std::size_t>(n));
  }
  return h.hex_digest();
}

std::string base64url_nopad(std::string_view raw) {
  static const char* tbl = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  std::string out;
  std::size_t i = 0;
  auto b = [&](std::size_t k) { return static_cast<unsigned char>(raw[k]); };
  for (; i + 2 < raw.size(); i += 3) {
    unsigned v = (b(i) << 16) | (b(i + 1) << 8) | b(i + 2);
    out += tbl[(v >> 18) & 63];
    out += tbl[(v >> 12) & 63];
    out += tbl[(v >> 6) & 63];
    out += tbl[v & 63];
  }
  if (raw.size() - i == 1) {
    unsigned v = b(i) << 16;
    out += tbl[(v >> 18) & 63];
    out += tbl[(v >> 12) & 63];
  } else if (raw.size() - i == 2) {
    unsigned v = (b(i) << 16) | (b(i + 1) << 8);
    out += tbl[(v >> 18) & 63];
    out += tbl[(v >> 12) & 63];
    out += tbl[(v >> 6) & 63];
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
