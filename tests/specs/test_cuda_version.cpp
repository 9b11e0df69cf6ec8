#include <doctest/doctest.h>

#include "specs/cuda_version.hpp"

namespace specs_cuda_version_test {

using namespace envfix::specs;

TEST_SUITE("unit/specs/cuda_version") {
  TEST_CASE("CudaVersion parses, orders and round-trips") {
    auto v = CudaVersion::parse("12.8").value();
    CHECK(v.major == 12);
    CHECK(v.minor == 8);
    CHECK(v.to_string() == "12.8");
    CHECK(v.variant() == "cu128");
    CHECK(CudaVersion::parse("13.0.88").value() == CudaVersion{13, 0});
    CHECK(CudaVersion::parse("11.8").value() < CudaVersion::parse("12.4").value());
    CHECK(CudaVersion::parse("12.10").value() > CudaVersion::parse("12.9").value());
    for (const char* s : {"9.2", "10.2", "11.8", "12.6", "12.8", "12.9", "13.0"}) {
      auto p = CudaVersion::parse(s).value();
      CHECK(p.to_string() == s);
      CHECK(CudaVersion::from_variant(p.variant()).value() == p);
    }
  }

  TEST_CASE("CudaVersion::from_variant reads wheel local labels") {
    CHECK(CudaVersion::from_variant("cu128").value() == CudaVersion{12, 8});
    CHECK(CudaVersion::from_variant("cu130").value() == CudaVersion{13, 0});
    CHECK(CudaVersion::from_variant("cu118").value() == CudaVersion{11, 8});
    CHECK(CudaVersion::from_variant("cu92").value() == CudaVersion{9, 2});
    CHECK(CudaVersion::from_variant("cu102").value() == CudaVersion{10, 2});
    for (const char* s : {"", "cpu", "cu", "cu1", "cu12a", "rocm6.2", "cu1280", "CU128", "cu 128"}) {
      auto r = CudaVersion::from_variant(s);
      CHECK_MESSAGE(!r, s);
      if (!r) CHECK(r.error().code == envfix::ErrorCode::invalid_input);
    }
  }

  TEST_CASE("CudaVersion rejects bad input") {
    for (const char* s : {"", "12", "12.", ".8", "12.x", "x.8", "12.8.", "12.8.x", "0.1", "v12.8", "12,8"}) {
      auto r = CudaVersion::parse(s);
      CHECK_MESSAGE(!r, s);
      if (!r) CHECK(r.error().message.find(s) != std::string::npos);
    }
  }
} // TEST_SUITE

} // namespace specs_cuda_version_test
