// The individual exporters; see exporter.h for the contract and registry.cc
// for their names.
#pragma once

#include <cstdio>

#include "convert/export/exporter.h"

namespace iotape::convert {

ExportReport export_fio_iolog(format::TraceReader& in, std::FILE* out);
ExportReport export_blktrace(format::TraceReader& in, std::FILE* out);
ExportReport export_blkparse(format::TraceReader& in, std::FILE* out);
ExportReport export_csv(format::TraceReader& in, std::FILE* out);
ExportReport export_jsonl(format::TraceReader& in, std::FILE* out);

}  // namespace iotape::convert
