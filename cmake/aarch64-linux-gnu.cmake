# Cross build for aarch64 (GH200, GB10, Jetson) with Debian's cross toolchain (g++-aarch64-linux-gnu)
# and the :arm64 -dev packages installed beside the native ones (multiarch, dpkg --add-architecture
# arm64): no sysroot, the arm64 libraries live in /usr/lib/aarch64-linux-gnu. scripts/cross-aarch64.sh
# installs all of it; the preset `aarch64` (CMakePresets.json) uses this file.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
# find_library/find_package look in <prefix>/lib/aarch64-linux-gnu, never in the host's x86_64 one.
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
# pkg-config (gumbo) must read the arm64 .pc files, not the host's.
set(ENV{PKG_CONFIG_LIBDIR} /usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig)
set(ENV{PKG_CONFIG_PATH} "")
# ctest runs the test binaries through qemu-user; -L / finds the arm64 loader and libraries of multiarch.
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64 -L /)
