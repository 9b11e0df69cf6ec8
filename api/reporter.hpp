#pragma once
// How api/ tells its caller what is happening while a command runs (docs/architecture.md, Modules):
// typed phases with byte counts for progress bars, notes and warnings for people. api/ never
// prints; cli/ renders these (cli/progress.hpp), tests record them. Every method has a no-op default.
#include <cstddef>
#include <cstdint>

#include "util/message.hpp"

namespace envfix::api {

// The steps of an apply, in order; `verify` is the smoke test (docs/architecture.md, The transaction).
enum class Phase { download, unpack, kernel_check, uninstall, install, verify };

[[nodiscard]] const char* to_string(Phase p);

class Reporter {
public:
  Reporter() = default;
  Reporter(const Reporter&) = delete;
  Reporter& operator=(const Reporter&) = delete;
  virtual ~Reporter() = default;
  // A phase began (once per phase and run; a phase without work may be skipped).
  virtual void phase(Phase) {}
  // Bytes done of a phase that has a size (download, unpack); total 0 = unknown (an index that gave no
  // size for a file not yet begun: a bar over the files begun so far would be full from the start).
  // `files`: how many of the phase's files are done, of how many (0 of 0: not counted).
  struct Files {
    std::size_t done = 0, total = 0;
  };
  virtual void progress(Phase, std::uint64_t /*done*/, std::uint64_t /*total*/, Files /*files*/) {}
  // A line for people ("Using venv .venv (…)") with its id (util/message.hpp), which cli/ translates
  // by; `detail` lines only matter with -v.
  virtual void note(const util::Message& /*m*/, bool /*detail*/ = false) {}
  virtual void warning(const util::Message& /*m*/) {}
};

// A reporter that drops everything.
[[nodiscard]] Reporter& quiet_reporter();

} // namespace envfix::api
