// WheelArchive passes over member ranges: real ZIPs written by Python's zipfile (many members,
// data descriptors) and byte-by-byte ones whose local and central headers lie (zip_cases.py).
#include <doctest/doctest.h>

#include <map>
#include <thread>

#include "util/fs.hpp"
#include "util/subprocess.hpp"
#include "wheel/wheel_archive.hpp"

namespace wheel_wheel_archive_test {

using namespace envfix;
namespace fs = std::filesystem;

namespace {

struct Dir {
  fs::path path = [] {
    auto d = util::make_temp_dir({}, "envfix-archive");
    REQUIRE(d);
    return *d;
  }();
  ~Dir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

// Runs tests/wheel/zip_cases.py MODE OUT [ARG] and returns OUT.
fs::path zip_case(const fs::path& out, const std::string& mode, const std::string& arg = "") {
  std::vector<std::string> argv{"python3", (fs::path(ENVFIX_SOURCE_DIR) / "tests/wheel/zip_cases.py").string(), mode,
                                out.string()};
  if (!arg.empty()) argv.push_back(arg);
  auto r = util::run_process(argv);
  REQUIRE(r);
  INFO(r->err);
  REQUIRE(r->ok());
  return out;
}

fs::path raw_zip(const Dir& d, const std::string& name, const std::string& spec_json) {
  auto spec = d.path / (name + ".json");
  REQUIRE(util::write_file_atomic(spec, spec_json));
  return zip_case(d.path / name, "raw", spec.string());
}

// Same as zip_cases.py content(i).
std::string content(std::size_t i) {
  std::string s = "# member " + std::to_string(i) + "\n";
  for (std::size_t k = 0; k < i % 7; ++k) s += "x = " + std::to_string(i) + "\n";
  return s;
}

// Every member's bytes from one pass over [begin, end), by entry index; `seen` lists the entries
// the visitor was called for, in order.
struct Collected {
  std::map<std::size_t, std::string> data;
  std::vector<std::size_t> seen;
  std::vector<const wheel::ArchiveEntry*> handed;
};

Expected<void> collect(const wheel::WheelArchive& ar, Collected& out, std::size_t begin = 0,
                       std::size_t end = static_cast<std::size_t>(-1)) {
  return ar.stream(
      [&](const wheel::ArchiveEntry& e) -> Expected<std::optional<wheel::DataSink>> {
        out.seen.push_back(e.index);
        out.handed.push_back(&e);
        auto* slot = &out.data[e.index];
        return wheel::DataSink([slot](std::string_view chunk) -> Expected<void> {
          slot->append(chunk);
          return {};
        });
      },
      begin, end);
}

std::string error_of(const Expected<void>& r) { return r ? std::string("(no error)") : r.error().render(); }
template <class T>
std::string error_of(const Expected<T>& r) {
  return r ? std::string("(no error)") : r.error().render();
}

} // namespace

TEST_SUITE("unit/wheel/wheel_archive") {
  TEST_CASE("a few thousand members streamed in concurrent groups give the bytes of one pass") {
    Dir d;
    const std::size_t n = 3000;
    auto zip = zip_case(d.path / "many.zip", "many", std::to_string(n));
    auto ar = wheel::WheelArchive::open(zip);
    REQUIRE_MESSAGE(ar, error_of(ar));
    const auto& entries = ar->entries();
    REQUIRE(entries.size() == n + n / 500 + 1); // files, directories, METADATA

    Collected one;
    REQUIRE_MESSAGE(collect(*ar, one), error_of(collect(*ar, one)));
    REQUIRE(one.seen.size() == entries.size());
    std::size_t files = 0;
    for (std::size_t i = 0; i < entries.size(); ++i) {
      const auto& e = entries[i];
      CHECK(one.seen[i] == i);
      // The visitor gets the central directory's entry (the streaming reader knows no modes).
      CHECK(one.handed[i] == &e);
      if (e.type != wheel::ArchiveEntry::Type::file) continue;
      CHECK(one.data[i].size() == e.size);
      if (e.name.starts_with("pkg/")) {
        auto k = static_cast<std::size_t>(std::stoul(e.name.substr(e.name.rfind("/m") + 2)));
        CHECK(one.data[i] == (k % 13 == 0 ? std::string() : content(k)));
        CHECK(e.mode == (k % 11 == 0 ? 0755u : 0644u));
        ++files;
      }
    }
    CHECK(files == n);

    // k disjoint groups at once, each on its own thread.
    const std::size_t k = 7;
    std::vector<std::size_t> starts;
    for (std::size_t g = 0; g <= k; ++g) starts.push_back(entries.size() * g / k);
    std::vector<Collected> parts(k);
    std::vector<Expected<void>> results(k);
    std::vector<std::thread> threads;
    for (std::size_t g = 0; g < k; ++g)
      threads.emplace_back([&, g] { results[g] = collect(*ar, parts[g], starts[g], starts[g + 1]); });
    for (auto& t : threads) t.join();
    std::map<std::size_t, std::string> merged;
    for (std::size_t g = 0; g < k; ++g) {
      REQUIRE_MESSAGE(results[g], error_of(results[g]));
      // A group's visitor sees exactly its own members, in order.
      REQUIRE(parts[g].seen.size() == starts[g + 1] - starts[g]);
      for (std::size_t j = 0; j < parts[g].seen.size(); ++j) CHECK(parts[g].seen[j] == starts[g] + j);
      merged.insert(parts[g].data.begin(), parts[g].data.end());
    }
    CHECK(merged == one.data);

    // A group in the middle, and a single member, by themselves.
    Collected middle;
    REQUIRE(collect(*ar, middle, 1200, 1210));
    CHECK(middle.seen == std::vector<std::size_t>{1200, 1201, 1202, 1203, 1204, 1205, 1206, 1207, 1208, 1209});
    for (auto i : middle.seen) CHECK(middle.data[i] == one.data[i]);
    Collected last;
    REQUIRE(collect(*ar, last, entries.size() - 1, entries.size() + 5)); // end past the last member
    CHECK(last.seen == std::vector<std::size_t>{entries.size() - 1});
    Collected none;
    REQUIRE(collect(*ar, none, 50, 50));
    CHECK(none.seen.empty());

    // read_member: the last member, one in the middle, one that is not there.
    auto md = ar->read_member("x-1.0.dist-info/METADATA");
    REQUIRE_MESSAGE(md, error_of(md));
    CHECK(*md == "Metadata-Version: 2.1\nName: x\nVersion: 1.0\n");
    auto mid = ar->read_member("pkg/d3/m1501.py");
    REQUIRE_MESSAGE(mid, error_of(mid));
    CHECK(*mid == content(1501));
    CHECK(ar->read_member("pkg/d3/").error().code == ErrorCode::not_found); // a directory has no content
    CHECK(ar->read_member("pkg/nope.py").error().code == ErrorCode::not_found);

    // The same archive from memory.
    auto bytes = util::read_file(zip).value();
    std::span<const std::uint8_t> span(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
    auto mem = wheel::WheelArchive::open_memory(span, "many.zip");
    REQUIRE(mem);
    Collected from_memory;
    REQUIRE(collect(*mem, from_memory, 0, 1000));
    REQUIRE(collect(*mem, from_memory, 1000));
    CHECK(from_memory.data == one.data);
  }

  TEST_CASE("data descriptors: stored and deflated members read back whole, alone or in a pass") {
    // zipfile writes to a stream it cannot seek with flag bit 3 on every member: the local header
    // has no sizes and the streaming reader finds the end of a stored member by its descriptor.
    Dir d;
    auto zip = zip_case(d.path / "descriptor.zip", "descriptor");
    const std::vector<std::pair<std::string, std::string>> expected = {
        {"a/stored.txt",
         [] {
           std::string s;
           for (int i = 0; i < 3; ++i) s += "stored with a descriptor\n";
           return s;
         }()},
        {"a/deflated.txt",
         [] {
           std::string s;
           for (int i = 0; i < 50; ++i) s += "deflated with a descriptor\n";
           return s;
         }()},
        {"a/decoy.bin", std::string("before PK\x07\x08\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c after", 29)},
        {"a/empty.txt", ""},
        {"a/deflated2.txt",
         [] {
           std::string s;
           for (int r = 0; r < 40; ++r)
             for (int c = 0; c < 256; ++c) s.push_back(static_cast<char>(c));
           return s;
         }()},
        {"a/last.txt", "last"},
    };
    auto ar = wheel::WheelArchive::open(zip);
    REQUIRE_MESSAGE(ar, error_of(ar));
    REQUIRE(ar->entries().size() == expected.size());
    Collected all;
    auto r = collect(*ar, all);
    REQUIRE_MESSAGE(r, error_of(r));
    for (std::size_t i = 0; i < expected.size(); ++i) {
      CAPTURE(i);
      CHECK(ar->entries()[i].name == expected[i].first);
      CHECK(all.data[i] == expected[i].second);
      // One-member passes: each reader stops right after its member's descriptor.
      auto m = ar->read_member(expected[i].first);
      REQUIRE_MESSAGE(m, error_of(m));
      CHECK(*m == expected[i].second);
      Collected alone;
      REQUIRE(collect(*ar, alone, i, i + 1));
      CHECK(alone.data[i] == expected[i].second);
    }
    // Pairs of groups split at every member boundary.
    for (std::size_t cut = 1; cut < expected.size(); ++cut) {
      Collected parts;
      REQUIRE(collect(*ar, parts, 0, cut));
      REQUIRE(collect(*ar, parts, cut));
      CHECK(parts.data == all.data);
    }
  }

  TEST_CASE("central directory in another order than the local headers") {
    Dir d;
    auto zip = raw_zip(d, "reversed.zip",
                       R"({"reverse_cd": true, "members": [{"name": "p/a.txt", "data": "A"},
                         {"name": "p/b.txt", "data": "BB"}, {"name": "p/c.txt", "data": "CCC"}]})");
    auto ar = wheel::WheelArchive::open(zip);
    REQUIRE_MESSAGE(ar, error_of(ar));
    CHECK(ar->raw_names() == std::vector<std::string>{"p/c.txt", "p/b.txt", "p/a.txt"});
    REQUIRE(ar->entries().size() == 3);
    CHECK(ar->entries()[0].name == "p/a.txt");
    CHECK(ar->entries()[2].name == "p/c.txt");
    Collected all;
    REQUIRE(collect(*ar, all));
    CHECK(all.data == std::map<std::size_t, std::string>{{0, "A"}, {1, "BB"}, {2, "CCC"}});
    CHECK(ar->read_member("p/b.txt").value() == "BB");
  }

  TEST_CASE("ZIP64 extra fields give the sizes and the local-header offset") {
    Dir d;
    auto zip = raw_zip(d, "zip64.zip", R"({"members": [{"name": "p/a.txt", "data": "A"},
      {"name": "p/b.txt", "data": "BBBB", "zip64": true}, {"name": "p/c.txt", "data": "C"}]})");
    auto ar = wheel::WheelArchive::open(zip);
    REQUIRE_MESSAGE(ar, error_of(ar));
    REQUIRE(ar->entries().size() == 3);
    CHECK(ar->entries()[1].size == 4);
    Collected all;
    REQUIRE(collect(*ar, all));
    CHECK(all.data == std::map<std::size_t, std::string>{{0, "A"}, {1, "BBBB"}, {2, "C"}});
    CHECK(ar->read_member("p/b.txt").value() == "BBBB");
    CHECK(ar->read_member("p/c.txt").value() == "C");

    auto short_extra = raw_zip(d, "zip64-short.zip", R"({"members": [{"name": "p/a.txt", "data": "A"},
      {"name": "p/b.txt", "data": "BBBB", "zip64": true, "zip64_short": true}]})");
    auto bad = wheel::WheelArchive::open(short_extra);
    REQUIRE_FALSE(bad);
    CHECK_MESSAGE(bad.error().message.find("ZIP64 extra field of member 1 is too short") != std::string::npos,
                  bad.error().render());
  }

  TEST_CASE("lying local and central headers are refused, naming the member") {
    Dir d;
    // open() of the archive raw_zip writes from `spec` fails with `message`; returns the error.
    auto refused = [&](const char* file, const char* spec, std::string_view message) {
      auto ar = wheel::WheelArchive::open(raw_zip(d, file, spec));
      REQUIRE_FALSE(ar);
      CHECK_MESSAGE(ar.error().message.find(message) != std::string::npos, ar.error().render());
      return ar.error();
    };
    SUBCASE("a local header whose name differs from the central one") {
      refused("name.zip", R"({"members": [{"name": "p/a.txt", "data": "A"},
        {"name": "p/b.txt", "local_name": "p/evil.txt", "data": "B"}, {"name": "p/c.txt", "data": "C"}]})",
              "local header of member 1 ('p/evil.txt') disagrees with the central directory ('p/b.txt')");
    }
    SUBCASE("a local header that changes after the listing (the pass checks again)") {
      auto zip = raw_zip(d, "good.zip", R"({"members": [{"name": "p/a.txt", "data": "A"},
        {"name": "p/b.txt", "data": "B"}, {"name": "p/c.txt", "data": "C"}]})");
      auto bytes = util::read_file(zip).value();
      std::span<const std::uint8_t> span(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
      auto ar = wheel::WheelArchive::open_memory(span, "good.zip");
      REQUIRE(ar);
      auto at = bytes.find("p/b.txt"); // the local header comes first
      REQUIRE(at < bytes.find("p/c.txt"));
      bytes[at + 2] = 'x';
      Collected c;
      auto r = collect(*ar, c);
      REQUIRE_FALSE(r);
      CHECK_MESSAGE(
          r.error().message.find("local header of member 1 ('p/x.txt') disagrees with the central directory ('p/b.txt')") !=
              std::string::npos,
          r.error().render());
      CHECK(c.seen == std::vector<std::size_t>{0}); // member 1 never reached the visitor
      CHECK_FALSE(ar->read_member("p/b.txt"));
      CHECK(ar->read_member("p/c.txt").value() == "C"); // a pass that does not touch it
    }
    SUBCASE("a member whose compressed size runs into the next one") {
      auto err = refused("overlap.zip", R"({"members": [{"name": "p/a.txt", "data": "AAAA", "cd_size_delta": 10},
        {"name": "p/b.txt", "data": "B"}]})",
                         "member 'p/a.txt' (14 bytes compressed at offset 0) overlaps member 'p/b.txt'");
      CHECK(err.hint.find("overlapping or lying local/central headers") != std::string::npos);
    }
    SUBCASE("the last member running into the central directory") {
      refused("overlap-cd.zip", R"({"members": [{"name": "p/a.txt", "data": "A"},
        {"name": "p/b.txt", "data": "B", "cd_size_delta": 1}]})",
              "member 'p/b.txt' (2 bytes compressed at offset 38) overlaps the central directory");
    }
    SUBCASE("two central records pointing at one local header") {
      refused("shared.zip", R"({"members": [{"name": "p/a.txt", "data": "A"},
        {"name": "p/b.txt", "data": "B", "cd_offset_from": 0}]})",
              "members 'p/a.txt' and 'p/b.txt' share one local header at offset 0");
    }
    SUBCASE("a local-header offset past the central directory") {
      refused("outside.zip", R"({"members": [{"name": "p/a.txt", "data": "A"},
        {"name": "p/b.txt", "data": "B", "cd_offset": 99999}]})",
              "member 1 starts past the central directory");
    }
    SUBCASE("a second local header hidden before the one the directory points at") {
      // The streaming reader resynchronises on any 'PK\3\4'; a pass must not take the decoy.
      auto zip = raw_zip(d, "hidden.zip", R"({"members": [{"name": "p/a.txt", "data": "A"},
        {"name": "p/b.txt", "data": "B", "fake_header": "EVIL"}, {"name": "p/c.txt", "data": "C"}]})");
      auto ar = wheel::WheelArchive::open(zip);
      REQUIRE_MESSAGE(ar, error_of(ar)); // the listing itself is consistent
      Collected c;
      auto r = collect(*ar, c);
      REQUIRE_FALSE(r);
      CHECK_MESSAGE(r.error().message.find("the local header of member 1 ('p/b.txt') is not at offset") != std::string::npos,
                    r.error().render());
      CHECK(c.data[0] == "A");
      CHECK_FALSE(c.data.contains(1));
      // A pass that starts at the member reads the header the directory names.
      CHECK(ar->read_member("p/b.txt").value() == "B");
    }
  }
}

} // namespace wheel_wheel_archive_test
