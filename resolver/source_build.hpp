// Fix C of the troubleshooting path: when no published build covers the GPU, the commands that
// build the framework from its source checkout for exactly that GPU, with what the build needs.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "specs/cuda_version.hpp"
#include "specs/gpu_arch.hpp"
#include "specs/version.hpp"
#include "util/message.hpp"

namespace envfix::resolver {

struct SourceBuild {
  std::string framework;                 // "torch", "jax", "tensorflow", "paddlepaddle"
  std::optional<specs::Version> version; // the release to check out; nullopt: the newest tag
  std::vector<specs::ComputeCapability> gpus;
  std::optional<specs::CudaVersion> min_cuda; // the first toolkit whose nvcc emits code for every GPU
};

// One line: prerequisites, a time estimate, then the shell commands. Torch has no sdist on any
// index, so the recipe starts from `git clone --branch <tag> --recursive`, never `pip --no-binary`.
[[nodiscard]] util::Message source_build_recipe(const SourceBuild& b);

// A third-party GPU extension of a framework (xformers, flash-attn, a custom CUDA op), rebuilt from
// its own source against the framework already installed, for exactly these GPUs.
struct ExtensionBuild {
  std::string name;                                // "xformers"
  std::optional<specs::Version> version;           // the release to build; nullopt: the newest
  std::string framework;                           // the framework it extends ("torch"); "" none
  std::optional<specs::Version> framework_version; // the installed one it must match
  std::vector<specs::ComputeCapability> gpus;
  std::optional<specs::CudaVersion> min_cuda;
};

// One line, as source_build_recipe(). Torch extensions read TORCH_CUDA_ARCH_LIST and must build
// against the installed torch (--no-build-isolation); pip takes the extension's sdist (--no-binary).
[[nodiscard]] util::Message extension_build_recipe(const ExtensionBuild& b);

} // namespace envfix::resolver
