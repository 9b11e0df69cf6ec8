#pragma once
// tests/reliability/hostile_server.py as a child process (killed and reaped by the destructor),
// shared by tests/reliability/test_hostile_index.cpp and test_round3_index.cpp.
#include <doctest/doctest.h>

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "tests/support/child_process.hpp"
#include "util/fs.hpp"

namespace envfix::testing {

struct HostileServer {
  std::optional<ChildProcess> child;
  std::filesystem::path log;
  int port = 0;
  HostileServer(const std::filesystem::path& root, const std::filesystem::path& log_file) : log(log_file) {
    auto c = ChildProcess::spawn({"python3", ENVFIX_SOURCE_DIR "/tests/reliability/hostile_server.py", "--root", root.string(),
                                  "--lifetime", "600", "--log", log.string()});
    REQUIRE(c);
    child.emplace(std::move(*c));
    auto line = child->read_line(std::chrono::seconds(20));
    REQUIRE_MESSAGE(line, "hostile_server.py did not start");
    REQUIRE(line->starts_with("PORT "));
    port = std::stoi(line->substr(5));
  }
  // userinfo: "user:password@" or empty.
  std::string url(std::string_view path, std::string_view userinfo = "") const {
    return fmt::format("http://{}127.0.0.1:{}/{}", userinfo, port, path);
  }
  std::string log_text() const { return util::read_file(log).value_or(""); }
};

} // namespace envfix::testing
