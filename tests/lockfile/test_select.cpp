// lockfile::select: which lock target fits a host, with the reason each other target does not
// (apply --locked and export use it alike).
#include <doctest/doctest.h>

#include "lockfile/select.hpp"

using namespace envfix::lockfile;

namespace {

LockTarget target(std::string id, std::vector<std::string> gpus, std::string python, std::string platform,
                  std::string driver_min) {
  LockTarget t;
  t.id = std::move(id);
  t.host = {std::move(gpus), std::move(driver_min), std::move(python), std::move(platform)};
  return t;
}

} // namespace

TEST_SUITE("unit/lockfile/select") {

  TEST_CASE("select: the first fitting target by id, every other one with its reasons") {
    LockFile lock;
    lock.targets = {target("sm_120-cp311-manylinux_2_28_x86_64", {"sm_120"}, "3.11", "manylinux_2_28_x86_64", "570.26"),
                    target("sm_90-cp311-manylinux_2_28_x86_64", {"sm_90"}, "3.11", "manylinux_2_28_x86_64", "570.26"),
                    target("sm_90-cp312-manylinux_2_28_x86_64", {"sm_90"}, "3.12", "manylinux_2_28_x86_64", "")};
    HostView h{{"sm_90"}, "3.11", {"manylinux_2_28_x86_64", "linux_x86_64"}, "580.65.06"};
    auto s = select(lock, h);
    REQUIRE(s.chosen);
    CHECK(s.chosen->id == "sm_90-cp311-manylinux_2_28_x86_64");
    REQUIRE(s.reasons().size() == 1);
    CHECK(s.reasons()[0] == "target sm_120-cp311-manylinux_2_28_x86_64 needs gpus sm_120 (host: sm_90)");

    SUBCASE("the driver floor counts (export checked it not before)") {
      h.driver = "535.104.05";
      auto t = select(lock, h);
      CHECK(t.chosen == nullptr);
      auto r = t.reasons();
      REQUIRE(r.size() == 3);
      CHECK(r[1] == "target sm_90-cp311-manylinux_2_28_x86_64 needs driver >= 570.26 (host: 535.104.05)");
      CHECK(r[2] == "target sm_90-cp312-manylinux_2_28_x86_64 needs python 3.12 (host: 3.11)");
    }
    SUBCASE("no driver, a platform the interpreter does not take, a CPU host") {
      HostView cpu{{}, "3.11", {"linux_x86_64"}, ""};
      auto why = mismatches(lock.targets[1], cpu);
      REQUIRE(why.size() == 3);
      CHECK(why[0] == "gpus sm_90 (host: none)");
      CHECK(why[1] == "platform manylinux_2_28_x86_64 (not supported by the host interpreter)");
      CHECK(why[2] == "driver >= 570.26 (host: no driver)");
    }
  }

} // TEST_SUITE
