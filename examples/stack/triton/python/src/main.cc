// Host code of the sample triton. Triton compiles GPU kernels at run time, so its wheel holds
// no code objects for any gfx target; this library is built with the host compiler.
extern "C" const char* triton_sample_backend() {
  return "amd";
}
