#include "RoctracerActivity.h"

namespace libkineto {
long long duration(const RoctracerActivity& activity) {
  return activity.end - activity.start;
}
} // namespace libkineto
