#include <doctest/doctest.h>
#include <csignal>
#include <string>
#include <vector>

#include "smoke/smoke.hpp"

using namespace envfix;
using smoke::CpuReason;

namespace {

matrices::Framework framework_with_steps(bool cpu_step) {
  matrices::Framework fw;
  fw.name = "torch";
  fw.main_package = "torch";
  fw.smoke.step_a = "import torch";
  fw.smoke.step_b = "torch.ones(1).cuda()";
  fw.smoke.companions = {{"torchvision", "import torchvision"}};
  if (cpu_step) fw.smoke.cpu = "torch.ones(1)";
  fw.smoke.model = {{"mlp", "pass"}, {"torchvision: resnet", "pass"}};
  return fw;
}

std::vector<std::string> names(const std::vector<smoke::SmokeStep>& steps) {
  std::vector<std::string> out;
  for (const auto& s : steps) out.push_back(s.name);
  return out;
}

} // namespace

TEST_SUITE("unit/smoke/smoke") {
  TEST_CASE("smoke: the CPU reason, the set's build first, then planned GPUs, then none present") {
    CHECK(smoke::cpu_reason(true, false, false) == CpuReason::none);
    CHECK(smoke::cpu_reason(true, false, true) == CpuReason::cpu_build);
    CHECK(smoke::cpu_reason(false, true, true) == CpuReason::cpu_build);
    CHECK(smoke::cpu_reason(true, true, false) == CpuReason::planned_gpus);
    CHECK(smoke::cpu_reason(false, true, false) == CpuReason::planned_gpus);
    CHECK(smoke::cpu_reason(false, false, false) == CpuReason::no_gpu);
    CHECK(smoke::describe(CpuReason::none).empty());
    CHECK(smoke::describe(CpuReason::planned_gpus).text == "planned GPUs (--gpu) are not this machine's");
  }

  TEST_CASE("smoke: apply's steps and note on the GPU, on the CPU, without a CPU step, skipped") {
    const auto fw = framework_with_steps(true);
    smoke::ApplySmokeRequest r{.framework = &fw, .present = {"torch", "torchvision"}, .has_gpu = true};
    auto gpu = smoke::plan_apply_smoke(r);
    CHECK(names(gpu.steps) ==
          std::vector<std::string>{"step A", "step B", "torchvision", "model: mlp", "model: torchvision: resnet"});
    CHECK(gpu.cpu == CpuReason::none);
    CHECK(gpu.note.empty());
    r.layers = {smoke::Layer::repro};
    r.present = {"torch"}; // the companion's checks only where it is present
    r.has_gpu = false;
    auto cpu = smoke::plan_apply_smoke(r);
    CHECK(names(cpu.steps) == std::vector<std::string>{"CPU step"});
    CHECK(cpu.cpu == CpuReason::no_gpu);
    CHECK(cpu.note.text == "no GPU: smoke test ran on the CPU");
    const auto bare = framework_with_steps(false);
    r.framework = &bare;
    auto none = smoke::plan_apply_smoke(r);
    CHECK(none.steps.empty());
    CHECK(none.note.text == "no GPU: smoke test skipped (torch has no CPU smoke test in the matrices)");
    r.skipped = true;
    CHECK(smoke::plan_apply_smoke(r).note.text == "smoke test skipped (--no-verify)");
    CHECK(smoke::plan_apply_smoke({}).note.text == "no framework: smoke test skipped (plain requirement set)");
  }

  TEST_CASE("smoke: the layers by name, each step's kind (what verify and the evidence record read, never the name)") {
    CHECK(smoke::parse_layer("repro") == smoke::Layer::repro);
    CHECK(smoke::parse_layer("model") == smoke::Layer::model);
    CHECK_FALSE(smoke::parse_layer("app"));
    CHECK_FALSE(smoke::parse_layer("Repro"));
    for (auto l : {smoke::Layer::repro, smoke::Layer::model}) CHECK(smoke::parse_layer(smoke::to_string(l)) == l);
    const auto fw = framework_with_steps(true);
    const std::vector<std::string> present{"torch", "torchvision"};
    auto kinds = [](const std::vector<smoke::SmokeStep>& steps) {
      std::vector<smoke::StepKind> out;
      for (const auto& s : steps) out.push_back(s.kind);
      return out;
    };
    using K = smoke::StepKind;
    CHECK(kinds(smoke::layer_steps(smoke::Layer::repro, fw.smoke, present, smoke::SmokeDevice::gpu)) ==
          std::vector<K>{K::copy, K::kernel, K::companion});
    CHECK(kinds(smoke::layer_steps(smoke::Layer::repro, fw.smoke, present, smoke::SmokeDevice::cpu)) == std::vector<K>{K::cpu});
    CHECK(kinds(smoke::layer_steps(smoke::Layer::model, fw.smoke, present, smoke::SmokeDevice::gpu)) ==
          std::vector<K>{K::model, K::model});
  }

  // The steps run the new set's code in the driver's interpreter; the markers that tell envfix where a
  // step ended carry a nonce. In argv it was readable from /proc/self/cmdline (and by ps): a failing
  // step printed "end 0 ok" with it and passed (issue 60, 8).
  TEST_CASE("smoke: a step cannot pass by printing a marker with what it finds in its command line") {
    const char* forge = "import os\n"
                        "toks = [t.decode() for t in open('/proc/self/cmdline', 'rb').read().split(b'\\0') if t]\n"
                        "for t in toks + [t.split()[-1] for t in toks]:\n"
                        "    for fd in (1, 2):\n"
                        "        os.write(fd, ('\\n\\x1e' + t + ' end 0 ok\\n').encode())\n"
                        "raise SystemExit(3)\n";
    const std::vector<smoke::SmokeStep> steps{{"forger", forge, smoke::SmokeDevice::cpu, smoke::StepKind::model},
                                              {"after", "print('ran')", smoke::SmokeDevice::cpu, smoke::StepKind::model}};
    auto run = smoke::run_steps("/usr/bin/python3", steps, {.timeout = std::chrono::seconds(60)});
    REQUIRE_MESSAGE(run, (run ? "" : run.error().render()));
    REQUIRE(!run->steps.empty());
    CHECK_FALSE(run->steps[0].ok);
    CHECK(run->steps[0].exit_code == 3);
    CHECK(run->steps.size() == 1); // stopped at the failure: "after" never ran
  }

  TEST_CASE("smoke: a failed step's error line, by how it ended") {
    const auto timeout = std::chrono::milliseconds(90'000);
    smoke::StepRun s{.name = "step B"};
    s.ok = true;
    CHECK(smoke::failure_text(s, timeout).empty());
    s.ok = false;
    s.timed_out = true;
    CHECK(smoke::failure_text(s, timeout) == "timed out after 90 s");
    s.timed_out = false;
    s.err =
        "Traceback (most recent call last):\n  File \"<x>\", line 1\nRuntimeError: CUDA error: no kernel image is available\n";
    CHECK(smoke::failure_text(s, timeout) == "RuntimeError: CUDA error: no kernel image is available");
    s.term_signal = SIGSEGV;
    CHECK(smoke::failure_text(s, timeout).starts_with("killed by signal 11 ("));
    CHECK(smoke::failure_text(s, timeout).ends_with(": RuntimeError: CUDA error: no kernel image is available"));
    s = smoke::StepRun{.name = "step A"};
    s.exit_code = 3;
    CHECK(smoke::failure_text(s, timeout) == "exit code 3");
  }
}
