#include "index/zip_metadata.hpp"

#include <zlib.h>

#include <cstring>
#include <optional>

namespace envfix::index {

namespace {

constexpr std::uint32_t sig_eocd = 0x06054b50, sig_eocd64 = 0x06064b50, sig_loc64 = 0x07064b50, sig_central = 0x02014b50,
                        sig_local = 0x04034b50;
constexpr std::uint64_t max_metadata_size = 64ull << 20; // a METADATA bigger than this is hostile

std::uint64_t le(std::string_view b, std::size_t off, int n) {
  std::uint64_t v = 0;
  for (int i = n - 1; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(b[off + static_cast<std::size_t>(i)]);
  return v;
}

struct Entry {
  std::string name;
  std::uint16_t method = 0;
  std::uint32_t crc = 0;
  std::uint64_t csize = 0, usize = 0, local_offset = 0;
};

// Top-level "<x>.dist-info/<member>".
bool is_dist_info_member(std::string_view name, std::string_view member) {
  auto slash = name.find('/');
  if (slash == std::string_view::npos) return false;
  return name.substr(0, slash).ends_with(".dist-info") && name.substr(slash + 1) == member;
}

std::unexpected<Error> not_a_wheel(std::string_view what, std::string_view why) {
  return make_error(ErrorCode::invalid_input, util::msg("{}: not a valid wheel (zip): {}", what, why));
}

// The central directory entry at cd[p] (p moves past it); nullopt when it is corrupt.
std::optional<Entry> central_entry(const std::string& cd, std::size_t& p) {
  if (p + 46 > cd.size() || le(cd, p, 4) != sig_central) return std::nullopt;
  Entry e;
  e.method = static_cast<std::uint16_t>(le(cd, p + 10, 2));
  e.crc = static_cast<std::uint32_t>(le(cd, p + 16, 4));
  e.csize = le(cd, p + 20, 4);
  e.usize = le(cd, p + 24, 4);
  std::size_t nlen = le(cd, p + 28, 2), xlen = le(cd, p + 30, 2), clen = le(cd, p + 32, 2);
  e.local_offset = le(cd, p + 42, 4);
  if (p + 46 + nlen + xlen + clen > cd.size()) return std::nullopt;
  e.name = cd.substr(p + 46, nlen);
  // zip64 extra field: sizes/offset that overflowed 32 bits, in this order.
  std::size_t x = p + 46 + nlen, xend = x + xlen;
  while (x + 4 <= xend) {
    std::size_t id = le(cd, x, 2), sz = le(cd, x + 2, 2);
    if (x + 4 + sz > xend) break;
    if (id == 1) {
      std::size_t q = x + 4, qend = q + sz;
      if (e.usize == 0xffffffff && q + 8 <= qend) {
        e.usize = le(cd, q, 8);
        q += 8;
      }
      if (e.csize == 0xffffffff && q + 8 <= qend) {
        e.csize = le(cd, q, 8);
        q += 8;
      }
      if (e.local_offset == 0xffffffff && q + 8 <= qend) {
        e.local_offset = le(cd, q, 8);
      }
    }
    x += 4 + sz;
  }
  p += 46 + nlen + xlen + clen;
  return e;
}

// A member's stored or deflated bytes, checked against its recorded size and CRC-32.
Expected<std::string> decode_member(const Entry& e, std::string data, std::string_view what) {
  std::string out;
  if (e.method == 0) {
    out = std::move(data);
  } else if (e.method == 8) {
    out.resize(e.usize);
    z_stream z{};
    if (inflateInit2(&z, -MAX_WBITS) != Z_OK) return fail(ErrorCode::internal, "zlib init failed");
    z.next_in = reinterpret_cast<Bytef*>(data.data());
    z.avail_in = static_cast<uInt>(data.size());
    z.next_out = reinterpret_cast<Bytef*>(out.data());
    z.avail_out = static_cast<uInt>(out.size());
    int rc = inflate(&z, Z_FINISH);
    std::uint64_t produced = z.total_out;
    inflateEnd(&z);
    if (rc != Z_STREAM_END || produced != e.usize)
      return not_a_wheel(what, fmt::format("{} does not inflate to its recorded size", e.name));
  } else {
    return not_a_wheel(what, fmt::format("{} uses unsupported compression method {}", e.name, e.method));
  }
  if (out.size() != e.usize) return not_a_wheel(what, fmt::format("{} has the wrong size", e.name));
  auto crc = crc32(0L, reinterpret_cast<const Bytef*>(out.data()), static_cast<uInt>(out.size()));
  if (crc != e.crc) return not_a_wheel(what, fmt::format("{} fails its CRC-32 check", e.name));
  return out;
}

} // namespace

Expected<std::string> read_wheel_metadata(std::uint64_t file_size, const RangeReader& read, std::string_view what,
                                          ZipMetadataStats* stats, std::uint64_t tail_hint) {
  return read_wheel_dist_info(file_size, read, "METADATA", what, stats, tail_hint);
}

Expected<std::string> read_wheel_dist_info(std::uint64_t file_size, const RangeReader& read, std::string_view member,
                                           std::string_view what, ZipMetadataStats* stats, std::uint64_t tail_hint) {
  auto bad = [&](std::string_view why) { return not_a_wheel(what, why); };
  auto do_read = [&](std::uint64_t off, std::uint64_t len) -> Expected<std::string> {
    if (off > file_size || len > file_size - off) return bad("a zip record points outside the file");
    if (stats) {
      ++stats->reads;
      stats->bytes_read += len;
    }
    auto r = read(off, len);
    if (r && r->size() != len) return bad("short read");
    return r;
  };
  if (file_size < 22) return bad("file is shorter than an end-of-central-directory record");
  std::uint64_t tail_len = std::min<std::uint64_t>(file_size, std::max<std::uint64_t>(tail_hint, 22 + 65535 + 20));
  std::uint64_t tail_off = file_size - tail_len;
  std::string tail = ENVFIX_TRY(do_read(tail_off, tail_len));
  // EOCD: scan backwards (a trailing comment may follow it).
  std::size_t eocd = std::string::npos;
  for (std::size_t i = tail.size() - 22 + 1; i-- > 0;) {
    if (le(tail, i, 4) == sig_eocd && i + 22 + le(tail, i + 20, 2) <= tail.size()) {
      eocd = i;
      break;
    }
  }
  if (eocd == std::string::npos) return bad("no end-of-central-directory record");
  std::uint64_t count = le(tail, eocd + 10, 2), cd_size = le(tail, eocd + 12, 4), cd_off = le(tail, eocd + 16, 4);
  if ((count == 0xffff || cd_size == 0xffffffff || cd_off == 0xffffffff) && eocd >= 20 && le(tail, eocd - 20, 4) == sig_loc64) {
    std::uint64_t e64 = le(tail, eocd - 20 + 8, 8);
    std::string rec;
    if (e64 >= tail_off && e64 - tail_off + 56 <= tail.size())
      rec = tail.substr(e64 - tail_off, 56);
    else
      rec = ENVFIX_TRY(do_read(e64, 56));
    if (le(rec, 0, 4) != sig_eocd64) return bad("bad zip64 end-of-central-directory record");
    count = le(rec, 32, 8);
    cd_size = le(rec, 40, 8);
    cd_off = le(rec, 48, 8);
  }
  if (cd_off > file_size || cd_size > file_size - cd_off) return bad("central directory lies outside the file");
  std::string cd;
  if (cd_off >= tail_off)
    cd = tail.substr(cd_off - tail_off, cd_size);
  else
    cd = ENVFIX_TRY(do_read(cd_off, cd_size));
  if (cd.size() != cd_size) return bad("central directory is truncated");
  std::optional<Entry> found;
  std::size_t p = 0;
  for (std::uint64_t i = 0; i < count; ++i) {
    auto entry = central_entry(cd, p);
    if (!entry) return bad("corrupt central directory entry");
    Entry& e = *entry;
    if (is_dist_info_member(e.name, member)) {
      if (found) return bad(fmt::format("more than one .dist-info/{} ({} and {})", member, found->name, e.name));
      found = std::move(e);
    }
  }
  if (!found) return make_error(ErrorCode::invalid_input, util::msg("{}: wheel has no .dist-info/{}", what, member));
  if (found->usize > max_metadata_size || found->csize > max_metadata_size)
    return bad(fmt::format("{} claims {} bytes", found->name, found->usize));
  // Local header: 30 bytes + name + extra (its own lengths), then the data.
  std::string local = ENVFIX_TRY(do_read(found->local_offset, 30));
  if (le(local, 0, 4) != sig_local) return bad("bad local file header for " + found->name);
  std::uint64_t data_off = found->local_offset + 30 + le(local, 26, 2) + le(local, 28, 2);
  std::string data = ENVFIX_TRY(do_read(data_off, found->csize));
  return decode_member(*found, std::move(data), what);
}

} // namespace envfix::index
