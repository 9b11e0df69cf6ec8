#pragma once
// Test helpers: synthetic fatbin/ELF/ar bytes (docs/kernels.md, Container layout and Entry layout)
// for unit tests and fuzz seeds.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace envfix::test {

using Bytes = std::vector<std::uint8_t>;

struct FakeEntry {
  std::uint16_t kind = 2; // 1 PTX, 2 SASS, 8 LTO
  std::uint32_t arch = 90;
  std::uint64_t flags = 0x11; // 64-bit, Linux
  std::uint32_t header_size = 64;
  std::uint32_t payload = 16;
};

inline void put(Bytes& b, std::size_t at, std::uint64_t v, int n) {
  if (b.size() < at + n) b.resize(at + n);
  for (int i = 0; i < n; ++i) b[at + i] = static_cast<std::uint8_t>(v >> (8 * i));
}

inline Bytes fake_container(const std::vector<FakeEntry>& entries) {
  Bytes b(16, 0);
  for (const auto& e : entries) {
    std::size_t at = b.size();
    b.resize(at + e.header_size + e.payload, 0xAB);
    std::fill(b.begin() + at, b.begin() + at + e.header_size, 0);
    put(b, at, e.kind, 2);
    put(b, at + 2, 0x0101, 2);
    put(b, at + 4, e.header_size, 4);
    put(b, at + 8, e.payload, 8);
    put(b, at + 0x18, 0, 2);
    put(b, at + 0x1A, e.kind == 1 ? 9 : 1, 2);
    put(b, at + 0x1C, e.arch, 4);
    put(b, at + 0x28, e.flags, 8);
  }
  put(b, 0, 0xBA55ED50, 4);
  put(b, 4, 1, 2);
  put(b, 6, 16, 2);
  put(b, 8, b.size() - 16, 8);
  return b;
}

inline Bytes concat(std::vector<Bytes> parts) {
  Bytes out;
  for (auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

struct FakeSection {
  std::string name;
  Bytes data;
  std::uint64_t flags = 0x2; // SHF_ALLOC
  std::uint32_t type = 1;    // SHT_PROGBITS
};

// A minimal ELF64 LE file: header, section data, .shstrtab, section header table.
inline Bytes fake_elf(const std::vector<FakeSection>& sections, std::uint16_t machine = 62, std::uint32_t e_flags = 0,
                      std::uint8_t abiversion = 0) {
  Bytes b(64, 0);
  b[0] = 0x7f, b[1] = 'E', b[2] = 'L', b[3] = 'F', b[4] = 2, b[5] = 1, b[6] = 1, b[8] = abiversion;
  put(b, 16, 3, 2);
  put(b, 18, machine, 2);
  put(b, 20, 1, 4);
  put(b, 48, e_flags, 4);
  put(b, 52, 64, 2);
  std::vector<std::pair<std::uint64_t, std::uint64_t>> placed;
  std::string shstr(1, '\0');
  std::vector<std::uint32_t> name_off;
  for (const auto& s : sections) {
    b.resize((b.size() + 7) & ~std::size_t{7}, 0);
    placed.emplace_back(b.size(), s.data.size());
    b.insert(b.end(), s.data.begin(), s.data.end());
    name_off.push_back(static_cast<std::uint32_t>(shstr.size()));
    shstr += s.name + '\0';
  }
  std::uint32_t shstr_name = static_cast<std::uint32_t>(shstr.size());
  shstr += ".shstrtab";
  shstr += '\0';
  std::uint64_t shstr_off = b.size();
  b.insert(b.end(), shstr.begin(), shstr.end());
  b.resize((b.size() + 7) & ~std::size_t{7}, 0);
  std::uint64_t shoff = b.size();
  std::size_t n = sections.size() + 2;
  b.resize(b.size() + n * 64, 0);
  for (std::size_t i = 0; i < sections.size(); ++i) {
    std::size_t h = shoff + (i + 1) * 64;
    put(b, h, name_off[i], 4);
    put(b, h + 4, sections[i].type, 4);
    put(b, h + 8, sections[i].flags, 8);
    put(b, h + 24, placed[i].first, 8);
    put(b, h + 32, placed[i].second, 8);
  }
  std::size_t h = shoff + (n - 1) * 64;
  put(b, h, shstr_name, 4);
  put(b, h + 4, 3, 4);
  put(b, h + 24, shstr_off, 8);
  put(b, h + 32, shstr.size(), 8);
  put(b, 40, shoff, 8);
  put(b, 58, 64, 2);
  put(b, 60, n, 2);
  put(b, 62, n - 1, 2);
  return b;
}

// A GNU ar archive; names longer than 15 characters go to the "//" table.
inline Bytes fake_ar(const std::vector<std::pair<std::string, Bytes>>& members) {
  std::string out = "!<arch>\n";
  auto header = [](std::string name, std::size_t size) {
    name.resize(16, ' ');
    std::string size_s = std::to_string(size);
    size_s.resize(10, ' ');
    return name + "0           0     0     644     " + size_s + "`\n";
  };
  std::string long_names;
  std::vector<std::string> names;
  for (const auto& [n, data] : members) {
    if (n.size() > 15) {
      names.push_back("/" + std::to_string(long_names.size()));
      long_names += n + "/\n";
    } else {
      names.push_back(n + "/");
    }
  }
  std::string symtab = std::string(4, '\0');
  out += header("/", symtab.size()) + symtab;
  if (!long_names.empty()) {
    out += header("//", long_names.size()) + long_names;
    if (long_names.size() & 1) out += '\n';
  }
  for (std::size_t i = 0; i < members.size(); ++i) {
    const auto& data = members[i].second;
    out += header(names[i], data.size());
    out.append(data.begin(), data.end());
    if (data.size() & 1) out += '\n';
  }
  return Bytes(out.begin(), out.end());
}

} // namespace envfix::test
