// An observer header that declares a function only the capture library
// defines: check_layers.py must reject it.
#pragma once

namespace iotape::observer {
int make_tracer_backend(int options);
}
