#include "resolver/source_build.hpp"

#include <fmt/format.h>

#include "util/strings.hpp"

namespace envfix::resolver {

namespace {

std::string join(const std::vector<specs::ComputeCapability>& gpus, const char* sep, bool sm) {
  std::string out;
  for (const auto& g : gpus) out += (out.empty() ? "" : sep) + (sm ? g.sm_name() : g.to_string());
  return out;
}

std::string tag(const SourceBuild& b, std::string_view prefix) {
  return b.version ? fmt::format("{}{}", prefix, b.version->public_version().to_string()) : std::string("<the release tag>");
}

util::Message needs(const SourceBuild& b, const util::Message& compiler) {
  auto nvcc = b.min_cuda ? util::msg("a CUDA toolkit ≥ {} (its nvcc emits {})", b.min_cuda->to_string(), join(b.gpus, ", ", true))
                         : util::msg("a CUDA toolkit whose nvcc emits {}", join(b.gpus, ", ", true));
  return util::msg("needs {}, {}", nvcc, compiler);
}

} // namespace

// The commands are values (util::plain): a translation words the sentence around them only.
util::Message source_build_recipe(const SourceBuild& b) {
  const std::string sm = join(b.gpus, ",", true);
  if (b.framework == "torch")
    return util::msg("build torch from source for this GPU ({}, cmake, ninja; about 1-3 h on 16 cores, 30 GB of disk): {}",
                     needs(b, util::plain("gcc ≥ 9")),
                     fmt::format("git clone --branch {} --recursive https://github.com/pytorch/pytorch && cd pytorch && "
                                 "python -m pip install -r requirements.txt && TORCH_CUDA_ARCH_LIST=\"{}\" USE_CUDA=1 "
                                 "python -m pip install --no-build-isolation -v .",
                                 tag(b, "v"), join(b.gpus, ";", false)));
  if (b.framework == "jax")
    return util::msg(
        "build jaxlib and its CUDA plugin from source for this GPU ({}, Bazel through build/build.py; about 1-2 h): {}",
        needs(b, util::plain("clang ≥ 18")),
        fmt::format("git clone --branch {} https://github.com/jax-ml/jax && cd jax && "
                    "python build/build.py build --wheels=jaxlib,jax-cuda-plugin,jax-cuda-pjrt "
                    "--cuda_compute_capabilities={} && python -m pip install dist/*.whl",
                    tag(b, "jax-v"), sm));
  if (b.framework == "tensorflow")
    return util::msg("build tensorflow from source for this GPU ({}, Bazel; about 2-4 h): {}",
                     needs(b, util::plain("clang ≥ 17")),
                     fmt::format("git clone --branch {} https://github.com/tensorflow/tensorflow && cd tensorflow && "
                                 "HERMETIC_CUDA_COMPUTE_CAPABILITIES={} bazel build //tensorflow/tools/pip_package:wheel "
                                 "--config=cuda --config=cuda_wheel --repo_env=WHEEL_NAME=tensorflow && "
                                 "python -m pip install bazel-bin/tensorflow/tools/pip_package/wheel_house/*.whl",
                                 tag(b, "v"), sm));
  if (b.framework == "paddlepaddle") {
    std::string bin;
    for (const auto& g : b.gpus) bin += (bin.empty() ? "" : ";") + std::to_string(g.number());
    return util::msg("build paddlepaddle from source for this GPU ({}, cmake; about 2-3 h): {}", needs(b, util::plain("gcc ≥ 9")),
                     fmt::format("git clone --branch {} https://github.com/PaddlePaddle/Paddle && mkdir Paddle/build && "
                                 "cd Paddle/build && cmake .. -DWITH_GPU=ON -DCUDA_ARCH_NAME=Manual -DCUDA_ARCH_BIN=\"{}\" && "
                                 "make -j$(nproc) && python -m pip install python/dist/*.whl",
                                 tag(b, "v"), bin));
  }
  return util::msg("build {} from source for {} with that project's CUDA arch setting", b.framework, sm);
}

util::Message extension_build_recipe(const ExtensionBuild& b) {
  // The name comes from installed METADATA: quoted like every word of a printed command, so a name
  // with shell syntax in it stays a word when the user pastes the recipe (issue 60, point 2).
  const std::string pin =
      util::shell_quote(b.version ? fmt::format("{}=={}", b.name, b.version->public_version().to_string()) : b.name);
  const util::Message against = b.framework.empty()
                                    ? util::plain("")
                                    : util::msg(" against the installed {}{}", b.framework,
                                                b.framework_version ? " " + b.framework_version->to_string() : std::string());
  const SourceBuild s{b.name, b.version, b.gpus, b.min_cuda};
  if (b.framework == "torch")
    return util::msg(
        "build {} from its source{} for this GPU ({}, the same CUDA major as torch's; minutes to an hour): {} "
        "(or, in its source checkout, {})",
        b.name, against, needs(s, util::msg("a C++ compiler torch accepts")),
        fmt::format("TORCH_CUDA_ARCH_LIST=\"{}\" python -m pip install --no-build-isolation --no-binary {} {}",
                    join(b.gpus, ";", false), util::shell_quote(b.name), pin),
        fmt::format("TORCH_CUDA_ARCH_LIST=\"{}\" python -m pip install --no-build-isolation .", join(b.gpus, ";", false)));
  return util::msg("build {} from its source{} for {} with that project's CUDA arch setting ({})", b.name, against,
                   join(b.gpus, ",", true), needs(s, util::msg("a C++ compiler")));
}

} // namespace envfix::resolver
