// A replay source that reaches above its module: check_layers.py must reject it.
#include "analysis/report.h"
