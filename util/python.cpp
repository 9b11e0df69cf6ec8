#include "util/python.hpp"

#include <system_error>

#include "util/fs.hpp"

namespace envfix::util {

namespace fs = std::filesystem;

Expected<SubprocessResult> run_python(const fs::path& python, const std::vector<std::string>& args, SubprocessOptions options) {
  auto dir = ENVFIX_TRY(make_temp_dir({}, "envfix-py"));
  struct Cleanup {
    fs::path d;
    ~Cleanup() {
      std::error_code ec;
      fs::remove_all(d, ec);
    }
  } cleanup{dir};
  std::string exe = python.string();
  if (exe.find('/') != std::string::npos && python.is_relative()) {
    std::error_code ec;
    exe = fs::absolute(python, ec).string();
  }
  std::vector<std::string> argv{exe, "-I", "-B"};
  argv.insert(argv.end(), args.begin(), args.end());
  options.cwd = dir;
  for (const char* v : {"PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "PYTHONSAFEPATH"}) options.unset_env.emplace_back(v);
  return run_process(argv, options);
}

} // namespace envfix::util
