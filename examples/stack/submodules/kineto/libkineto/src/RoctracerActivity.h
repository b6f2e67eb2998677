#pragma once
// Activity records from roctracer (only compiled for ROCm builds).
#if defined(__HIP_PLATFORM_HCC__)
#include <roctracer/roctracer.h>
#endif

namespace libkineto {
struct RoctracerActivity {
  long long start = 0;
  long long end = 0;
};
} // namespace libkineto
