// The capture library defining what the observer's header declares.
#include "observer/backend.h"

namespace iotape::observer {
int make_tracer_backend(int options) { return options; }
}  // namespace iotape::observer
