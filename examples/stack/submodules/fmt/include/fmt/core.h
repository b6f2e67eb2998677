#pragma once
// A small stand-in for {fmt}: enough to be a real second-level submodule.
#define FMT_VERSION 110000

namespace fmt {
inline const char* version() {
  return "11.0.0";
}
} // namespace fmt
