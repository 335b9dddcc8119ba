// The text of a CUDA runtime error, saying what is missing where the runtime's own words
// mislead: with no CUDA driver installed (no libcuda.so.1) the runtime reports "CUDA driver
// version is insufficient for CUDA runtime version", as if a driver were there but too old.
// Included by the .cu sources only (it needs cuda_runtime.h).
#pragma once
#include <cuda_runtime.h>

#include <string>

namespace nitro {

inline std::string cuda_error_text(cudaError_t err) {
  std::string text = cudaGetErrorString(err);
  if (err == cudaErrorInsufficientDriver) {
    int driver = -1;
    if (cudaDriverGetVersion(&driver) == cudaSuccess && driver == 0)
      text += " (no CUDA driver is installed here: libcuda.so.1 was not found; an NVIDIA GPU and its driver are needed)";
  } else if (err == cudaErrorNoDevice) {
    text += " (the CUDA driver is installed but reports no GPU)";
  }
  return text;
}

}  // namespace nitro
