// Issue 10, hostile wheels: every malformed or malicious wheel made by hostile_wheels.py is refused
// by stage_wheel with an error naming the offending entry, nothing appears outside the staging
// directory, and the staging directory is gone afterwards.
#include <doctest/doctest.h>

#include <filesystem>
#include <map>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "util/fs.hpp"
#include "util/subprocess.hpp"
#include "wheel/staging.hpp"
#include "wheel/wheel_archive.hpp"

using namespace envfix;
namespace fs = std::filesystem;

namespace {

// Paths (relative) and sizes of everything under `dir`, symlinks not followed.
std::map<std::string, std::uintmax_t> snapshot(const fs::path& dir) {
  std::map<std::string, std::uintmax_t> out;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, fs::directory_options::skip_permission_denied, ec);
       it != fs::recursive_directory_iterator(); it.increment(ec)) {
    auto st = it->symlink_status(ec);
    out[fs::relative(it->path(), dir).string()] = fs::is_regular_file(st) ? fs::file_size(it->path(), ec) : 0;
  }
  return out;
}

struct Corpus {
  fs::path root;
  nlohmann::json cases;
  Corpus() {
    root = util::make_temp_dir({}, "envfix-hostile").value();
    auto r = util::run_process({"python3", ENVFIX_SOURCE_DIR "/tests/reliability/hostile_wheels.py", (root / "wheels").string()},
                               {.timeout = std::chrono::seconds(600)});
    REQUIRE(r);
    REQUIRE_MESSAGE(r->ok(), r->err);
    cases = nlohmann::json::parse(r->out);
  }
  ~Corpus() {
    std::error_code ec;
    fs::remove_all(root, ec);
  }
};

Corpus& corpus() {
  static Corpus c; // generated once per test binary run (~1 s of Python)
  return c;
}

wheel::StagingOptions options_for(const nlohmann::json& c) {
  wheel::StagingOptions o;
  if (c.contains("limits")) {
    o.limits.max_total_size = c["limits"].value("max_total_size", o.limits.max_total_size);
    o.limits.max_ratio = c["limits"].value("max_ratio", o.limits.max_ratio);
  }
  return o;
}

} // namespace

TEST_SUITE("unit/reliability/hostile_wheels") {
  TEST_CASE("hostile wheels: each is refused naming the entry; nothing written outside staging") {
    auto& corp = corpus();
    REQUIRE(corp.cases.size() >= 40);
    std::size_t refused = 0, accepted = 0;
    const fs::path outside = fs::temp_directory_path();
    for (const auto& c : corp.cases) {
      const std::string name = c["case"];
      const fs::path file = c["file"].get<std::string>();
      const std::string entry = c["entry"];
      CAPTURE(name);
      // The parent of the staging dir holds a bystander file and nothing else.
      fs::path parent = corp.root / "parents" / name;
      REQUIRE(util::create_directories(parent));
      REQUIRE(util::write_file_atomic(parent / "bystander.txt", "keep me\n"));
      auto before = snapshot(parent);
      auto wheel_dir_before = snapshot(file.parent_path());
      fs::path staging = parent / "staging";
      auto staged = wheel::stage_wheel(file, staging, options_for(c));
      const bool either = c.contains("accept") && c["accept"] == "either";
      if (c.contains("accept") && (!either || staged)) {
        REQUIRE_MESSAGE(staged, (staged ? "" : staged.error().render()));
        CHECK(staged->name == "demo");
        CHECK(fs::is_regular_file(fs::symlink_status(staging / "demo" / "aaaaaaaaaa.py")));
        if (!entry.empty()) CHECK(fs::is_regular_file(fs::symlink_status(staging / entry)));
        fs::remove_all(staging);
        ++accepted;
        continue;
      }
      REQUIRE_FALSE_MESSAGE(staged, "accepted: " << name);
      ++refused;
      const std::string text = staged.error().render();
      CAPTURE(text);
      CHECK_MESSAGE(text.find(entry) != std::string::npos, "the error does not name '" << entry << "'");
      CHECK(text.find(file.filename().string()) != std::string::npos); // and the wheel
      CHECK_FALSE(fs::exists(staging));
      CHECK(snapshot(parent) == before);
      CHECK(snapshot(file.parent_path()) == wheel_dir_before);
      // Escapes would land here (relative to the staging dir or absolute).
      for (const fs::path& p : {parent / "evil.py", parent.parent_path() / "evil.py", corp.root / "evil.py",
                                outside / "envfix-evil.py", corp.root / "wheels" / "evil.py"})
        CHECK_FALSE(fs::exists(p));
    }
    CHECK(refused + accepted == corp.cases.size());
    CHECK(refused >= 40);
  }

  TEST_CASE("zip bomb limits are configurable: the same wheel passes with room and fails without") {
    auto& corp = corpus();
    for (const auto& c : corp.cases) {
      if (c["case"] != "bomb-total" && c["case"] != "bomb-ratio-configured") continue;
      CAPTURE(c["case"].get<std::string>());
      fs::path staging = corp.root / "bomb-ok" / c["case"].get<std::string>();
      // Default limits: the wheel is an ordinary wheel and stages.
      auto ok = wheel::stage_wheel(c["file"].get<std::string>(), staging);
      REQUIRE_MESSAGE(ok, (ok ? "" : ok.error().render()));
      fs::remove_all(staging);
      auto bad = wheel::stage_wheel(c["file"].get<std::string>(), staging, options_for(c));
      REQUIRE_FALSE(bad);
      CHECK(bad.error().render().find("zip bomb") != std::string::npos);
      CHECK_FALSE(fs::exists(staging));
    }
  }

  TEST_CASE("a failure after bytes were written (fault hook, hash step) removes the staging dir") {
    auto& corp = corpus();
    fs::path valid = corp.cases[0]["file"].get<std::string>();
    REQUIRE(corp.cases[0]["case"] == "valid");
    fs::path parent = corp.root / "fault-parent";
    REQUIRE(util::create_directories(parent));
    for (std::string step : {"unpack", "hash"}) {
      CAPTURE(step);
      int calls = 0;
      bool saw_files = false;
      wheel::StagingOptions o;
      o.fault = [&](std::string_view s) -> Expected<void> {
        if (s != step) return {};
        ++calls;
        if (s == "hash") saw_files = fs::exists(parent / "staging" / "demo" / "__init__.py");
        return fail(ErrorCode::io, "injected failure at {}", s);
      };
      auto r = wheel::stage_wheel(valid, parent / "staging", o);
      REQUIRE_FALSE(r);
      CHECK(calls == 1);
      if (step == "hash") CHECK(saw_files); // the failure really happened after writing
      CHECK(r.error().message.find("injected failure") != std::string::npos);
      CHECK_FALSE(fs::exists(parent / "staging"));
      CHECK(fs::is_empty(parent));
    }
  }

  TEST_CASE("a staging dir that is not empty is refused and its content kept") {
    auto& corp = corpus();
    fs::path valid = corp.cases[0]["file"].get<std::string>();
    fs::path staging = corp.root / "busy-staging";
    REQUIRE(util::create_directories(staging));
    REQUIRE(util::write_file_atomic(staging / "precious", "data"));
    auto r = wheel::stage_wheel(valid, staging);
    REQUIRE_FALSE(r);
    CHECK(r.error().message.find("not empty") != std::string::npos);
    CHECK(util::read_file(staging / "precious").value() == "data");
  }

  TEST_CASE("hostile wheels read from memory (WheelArchive::open_memory) never crash or over-read") {
    // The same corpus through the in-memory reader the fuzzer uses: listing and streaming every
    // member either succeeds within the limits or fails cleanly.
    auto& corp = corpus();
    for (const auto& c : corp.cases) {
      CAPTURE(c["case"].get<std::string>());
      auto bytes = util::read_file(c["file"].get<std::string>()).value();
      std::span<const std::uint8_t> span(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
      wheel::ArchiveLimits limits;
      limits.max_total_size = 16 << 20;
      auto ar = wheel::WheelArchive::open_memory(span, c["case"].get<std::string>(), limits);
      if (!ar) {
        CHECK_FALSE(ar.error().message.empty());
        continue;
      }
      std::uint64_t total = 0;
      auto r = ar->stream([&](const wheel::ArchiveEntry&) -> Expected<std::optional<wheel::DataSink>> {
        return wheel::DataSink([&](std::string_view chunk) -> Expected<void> {
          total += chunk.size();
          return {};
        });
      });
      CHECK(total <= limits.max_total_size);
      if (!r) CHECK_FALSE(r.error().message.empty());
    }
  }
}
