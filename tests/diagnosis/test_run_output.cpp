// diagnosis/run_output.hpp: what verify reads out of a failed app or model check, on output as torch
// prints it (the traceback of a missing-arch launch, a model check's OP lines).
#include <doctest/doctest.h>

#include <string>

#include "diagnosis/run_output.hpp"

using namespace envfix;

TEST_SUITE("unit/diagnosis/run_output") {
  TEST_CASE("run output: the first CUDA error line and its class, the traceback's last frame, the last operator") {
    const std::string err = "Traceback (most recent call last):\n"
                            "  File \"/w/train.py\", line 3, in <module>\n"
                            "    main()\n"
                            "  File \"/w/train.py\", line 7, in main\n"
                            "    y = torch.mm(x, x)\n"
                            "torch.AcceleratorError: CUDA error: no kernel image is available for execution on the device\n"
                            "CUDA kernel errors might be asynchronously reported at some other API call\n";
    auto [line, cls] = diagnosis::first_cuda_error("warming up\n" + err);
    CHECK(line == "torch.AcceleratorError: CUDA error: no kernel image is available for execution on the device");
    CHECK(cls == diagnosis::CudaError::missing_arch);
    CHECK(diagnosis::first_cuda_error("RuntimeError: CUDA out of memory. Tried to allocate 2 GiB").second ==
          diagnosis::CudaError::out_of_memory);
    CHECK(diagnosis::first_cuda_error("all good\nloss 0.1\n").first.empty());
    CHECK(diagnosis::first_cuda_error("all good\n").second == diagnosis::CudaError::none);

    CHECK(diagnosis::traceback_end(err) == "File \"/w/train.py\", line 7, in main: y = torch.mm(x, x)");
    CHECK(diagnosis::traceback_end("  File \"<string>\", line 1, in <module>") == "File \"<string>\", line 1, in <module>");
    CHECK(diagnosis::traceback_end("no traceback here\n").empty());

    CHECK(diagnosis::last_op("OP conv2d\nOP linear\nloss 0.3\n") == "linear");
    CHECK(diagnosis::last_op("OP conv2d") == "conv2d");
    CHECK(diagnosis::last_op("nothing\n").empty());
  }
}
